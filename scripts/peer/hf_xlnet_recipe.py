"""What scripts/peer/hf_xlnet_pretrain.py reads of xl: the config's settings that Hugging Face's
XLNet pretraining can reproduce (checked), xl's SentencePiece ids and learning-rate schedule,
and the rows and batches it lays the pieces out in."""
import math
import sys

import torch

NAME = "hf_xlnet_pretrain"

# XLNet's special pieces at the ids xl's SentencePiece models give them.
XL_SPECIAL_IDS = {"unk": 0, "bos": 1, "eos": 2, "cls": 3, "sep": 4, "pad": 5, "mask": 6}
SEP_ID, CLS_ID = XL_SPECIAL_IDS["sep"], XL_SPECIAL_IDS["cls"]
ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "gelu_tanh": "gelu_new"}


def refuse(message):
    print(f"{NAME}: {message}", file=sys.stderr)
    sys.exit(2)


def lr_at(step, t):
    """xl's LRSchedule::lr for the 1-based step: linear warmup, then the schedule."""
    base, w, total, eta_min = t["lr"], t["warmup_step"], t["max_step"], t["eta_min"]
    if t["scheduler"] == "inv_sqrt":
        if w == 0:
            return base / math.sqrt(max(step, 1))
        return base * step / w ** 1.5 if step <= w else base / math.sqrt(step)
    if w > 0 and step <= w:
        return base * step / w
    progress = (step - w) / (total - w) if total > w else 1.0
    if t["scheduler"] == "cosine":
        return eta_min + (base - eta_min) * (1 + math.cos(math.pi * progress)) / 2
    if t["scheduler"] == "poly":
        return base + (eta_min - base) * progress
    return base


def settings_from(config):
    """Every value used, checked: the parts of the config HF can reproduce."""
    m, d, t = config["model"], config["data"], config["train"]
    if m.get("type", "xlnet") != "xlnet":
        refuse(f"model.type is {m.get('type')!r}; this script pretrains an XLNet")
    if m["d_model"] % m["n_head"] or m["d_head"] != m["d_model"] // m["n_head"]:
        refuse(f"HF's XLNet needs d_head = d_model / n_head; this config has d_head "
               f"{m['d_head']} with d_model {m['d_model']} and {m['n_head']} heads")
    activation = m["xlnet"]["ff_activation"]
    if activation not in ACTIVATIONS:
        refuse(f"model.xlnet.ff_activation {activation!r}: expected {', '.join(ACTIVATIONS)}")
    if t["tgt_len"] < 4 or t["tgt_len"] % 2:
        refuse(f"train.tgt_len {t['tgt_len']}: HF's collator needs an even length (and >= 4)")
    if t["optim"] not in ("adam", "adamw"):
        refuse(f"train.optim {t['optim']!r}: this script has adam and adamw")
    if t["scheduler"] not in ("cosine", "poly", "constant", "inv_sqrt"):
        refuse(f"train.scheduler {t['scheduler']!r}: this script has cosine, poly, constant, "
               "inv_sqrt")
    if not d.get("dir"):
        refuse("data.dir is not set")
    keys = {"model": ["n_layer", "n_head", "d_model", "d_head", "d_inner", "dropout", "dropatt",
                      "init_std", "layer_norm_eps"],
            "train": ["seed", "device", "threads", "batch_size", "tgt_len", "max_step", "optim",
                      "lr", "weight_decay", "decay_vectors", "beta1", "beta2", "eps",
                      "scheduler", "warmup_step", "eta_min", "clip", "log_interval"]}
    used = {section: {k: config[section][k] for k in names} for section, names in keys.items()}
    used["model"]["ff_activation"] = activation
    used["model"]["plm_probability"] = m["xlnet"]["num_predict"] / t["tgt_len"]
    used["data"] = {k: d[k] for k in ("dir", "vocab", "train")}
    return used


def build_tokenizer(spm_path):
    from transformers import XLNetTokenizer
    tokenizer = XLNetTokenizer(vocab_file=spm_path, keep_accents=True, do_lower_case=False)
    for name, expected in XL_SPECIAL_IDS.items():
        got = getattr(tokenizer, f"{name}_token_id")
        if got != expected:
            refuse(f"{spm_path}: HF's tokenizer puts {getattr(tokenizer, name + '_token')} at "
                   f"id {got}, xl at {expected}; not an xl/XLNet SentencePiece model")
    return tokenizer


def chunk_rows(ids, tgt_len):
    """[n, tgt_len] rows `chunk <sep> <cls>` and their token types 0..0 0 2, as XLNetTokenizer."""
    body = tgt_len - 2
    n = ids.numel() // body
    if n == 0:
        refuse(f"the training pieces ({ids.numel()}) do not fill one row of {tgt_len}")
    rows = torch.empty(n, tgt_len, dtype=torch.long)
    rows[:, :body] = ids[:n * body].view(n, body)
    rows[:, body] = SEP_ID
    rows[:, body + 1] = CLS_ID
    types = torch.zeros(tgt_len, dtype=torch.long)
    types[-1] = 2
    return rows, types


class RowBatches:
    """Row indices, batch_size at a time, over endless passes in fresh seeded orders; its state
    (the generator's and the rest of the current pass) is saved with the run."""

    def __init__(self, n_rows, batch_size, seed):
        self.n_rows, self.batch_size = n_rows, batch_size
        self.generator = torch.Generator().manual_seed(seed)
        self.pending = torch.empty(0, dtype=torch.long)

    def next(self):
        while self.pending.numel() < self.batch_size:
            self.pending = torch.cat([self.pending,
                                      torch.randperm(self.n_rows, generator=self.generator)])
        batch, self.pending = self.pending[:self.batch_size], self.pending[self.batch_size:]
        return batch

    def state_dict(self):
        return {"generator": self.generator.get_state(), "pending": self.pending}

    def load_state_dict(self, state):
        self.generator.set_state(state["generator"])
        self.pending = state["pending"]


def only_masked_queries(batch):
    """The collator's batch with a query row for each masked position only, instead of one for
    every position (its target_mapping is the identity): the loss averages over the masked
    positions alone and each query row is computed on its own, so the loss and the gradients
    are the same, for about a quarter of the query stream and of the LM head."""
    labels = batch["labels"]
    masked = labels != -100
    n = int(masked.sum(1).max())
    # Each row's masked positions first (in order), then padding rows.
    order = torch.sort((~masked).to(torch.int8), dim=1, stable=True).indices[:, :n]
    keep = torch.gather(masked, 1, order)
    mapping = torch.nn.functional.one_hot(order, labels.size(1)).float()
    batch["target_mapping"] = mapping * keep.unsqueeze(2)
    batch["labels"] = torch.where(keep, torch.gather(labels, 1, order), -100)
    return batch
