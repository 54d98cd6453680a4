#!/usr/bin/env python3
"""Pretrains an XLNet with Hugging Face's own permutation-LM recipe: the peer of xl-train.

  scripts/peer/hf_xlnet_pretrain.py --config configs/xlnet/mini_ko_cpu.yaml --out OUT
      [--set train.max_step=500 ...] [--max-step N] [--threads N] [--resume]
      [--checkpoint-every N] [--stop-at-step N]

Reads the xl config as xl-train resolves it (`xl-train --dump-config`: the `base:` chain, the
--set overrides, every default) and the very pieces xl trains on (data.dir/data.train, the
`.pieces` file of xl-prep --format pieces, checked against data.dir/data.vocab), and trains
transformers.XLNetLMHeadModel on them with DataCollatorForPermutationLanguageModeling
(max_span_length 5, plm_probability the config's share of predicted pieces,
model.xlnet.num_predict / train.tgt_len, so that both sides predict as many pieces), xl's
optimizer (adam/adamw, with train.decay_vectors), learning-rate schedule (linear warmup, then
cosine, poly or constant), global gradient clipping and seed. Writes

  OUT/model.safetensors, OUT/config.json   save_pretrained of the XLNetLMHeadModel (and HF's
                                           generation_config.json)
  OUT/train_log.json                       settings, steps, seconds, pieces, loss per logged step

and nothing else anywhere. Until then OUT holds only resume.pt, the state after the last
--checkpoint-every steps (500), on SIGTERM/SIGINT or at --stop-at-step (weights, optimizer,
random generators, the row order, the log so far), written atomically: `--resume` continues it
exactly (the same weights as an uninterrupted run), with the same config and overrides. Then
convert and import it like any HF model:

  scripts/convert/hf_xlnet.py --model OUT --out CONVERTED --data-dir data/prepared/nsmc \\
      --seq-len <train.tgt_len>
  build/bin/xl-import --config CONVERTED/config.yaml --weights CONVERTED/weights.safetensors \\
      --set run.dir=runs/hf_peer

Data layout: the piece stream is cut into chunks of tgt_len - 2 pieces, each followed by
<sep> <cls> with token types 0..0 0 2, as XLNetTokenizer lays out one text; the tail shorter
than a chunk is dropped. Every pass visits the chunks in a fresh seeded order; steps run on
across passes until max_step, each with batch_size rows.

How this differs from xl's (zihangdai's) pretraining, all of it HF's collator or HF's usage:
  * masking: per row, spans of a uniform 1-5 pieces, one in each context of span/plm_probability
    pieces (no word boundaries, no mask_alpha/mask_beta; the count varies around
    plm_probability); <unk>, <s>, </s>, <cls>, <sep>, <pad>, <mask>, <eod>, <eop> never masked.
  * masked inputs are replaced by <mask> in the content stream (zihangdai keeps the real piece
    there and hides it only through perm_mask), labels elsewhere are -100.
  * HF's target_mapping is the identity: every position is a query (num_predict = tgt_len),
    the loss averaging over the masked ones only; this script keeps the query rows of the masked
    positions (only_masked_queries), which gives the same loss and gradients for less work.
  * one factorisation order per row: the sequence is split into halves and both share one
    random permutation of tgt_len/2 offsets (like perm_size = tgt_len/2, block order kept);
    unmasked pieces and the special tokens are visible to every position, so the first half can
    see the unmasked pieces of the second (zihangdai hides <sep>/<cls> from ordinary pieces).
  * no memory (mem_len None, rows are independent texts), no bi_data, no A/B segment pairs, no
    reuse_len; the records are single texts ending <sep> <cls>.
  * HF's initialisation (normal(init_std) for every weight and the r_*/mask_emb biases) and its
    dropout (model.dropout also drops attention probabilities; model.dropatt is ignored).
"""
import argparse
import json
import os
import signal
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import xl_files  # noqa: E402
from hf_xlnet_recipe import (ACTIVATIONS, NAME, XL_SPECIAL_IDS, RowBatches,  # noqa: E402
                             build_tokenizer, chunk_rows, lr_at, only_masked_queries, refuse,
                             settings_from)

RESUME_FILE = "resume.pt"
LOG_EVERY_STEPS = 100
LOG_EVERY_SECONDS = 30.0
MAX_BAD_STEPS = 5


def format_seconds(s):
    s = int(s)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True, help="xl YAML config (model.type xlnet)")
    parser.add_argument("--out", required=True, help="new or empty output folder")
    parser.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                        help="override config keys, e.g. --set train.max_step=500")
    parser.add_argument("--max-step", type=int, help="train.max_step")
    parser.add_argument("--threads", type=int, help="train.threads (0: torch's default)")
    parser.add_argument("--resume", action="store_true",
                        help=f"continue the unfinished run in OUT (OUT/{RESUME_FILE})")
    parser.add_argument("--checkpoint-every", type=int, default=500, metavar="N",
                        help=f"steps between saves of OUT/{RESUME_FILE} (0: only on SIGTERM, "
                        "SIGINT or --stop-at-step)")
    parser.add_argument("--stop-at-step", type=int, metavar="N",
                        help=f"save OUT/{RESUME_FILE} after step N and stop")
    args = parser.parse_args()

    resume_path = os.path.join(args.out, RESUME_FILE)
    if args.resume:
        if not os.path.isfile(resume_path):
            refuse(f"--resume: {args.out} holds no unfinished run ({RESUME_FILE})")
    elif os.path.exists(args.out) and (not os.path.isdir(args.out) or os.listdir(args.out)):
        hint = "; it holds an unfinished run: add --resume" if os.path.isfile(resume_path) else ""
        refuse(f"{args.out} exists and is not an empty folder{hint}")
    if args.checkpoint_every < 0:
        refuse(f"--checkpoint-every {args.checkpoint_every}: expected 0 or more steps")
    overrides = list(args.set)
    if args.max_step is not None:
        overrides.append(f"train.max_step={args.max_step}")
    if args.threads is not None:
        overrides.append(f"train.threads={args.threads}")
    settings = settings_from(xl_files.resolved_config(args.config, overrides))
    m, d, t = settings["model"], settings["data"], settings["train"]

    if t["threads"] > 0:
        torch.set_num_threads(t["threads"])
    device = torch.device("cuda" if t["device"] in ("auto", "cuda") and torch.cuda.is_available()
                          else "cpu")
    if t["device"] == "cuda" and device.type != "cuda":
        refuse("train.device is cuda but torch sees no GPU")

    warnings.filterwarnings("ignore")
    from transformers import (DataCollatorForPermutationLanguageModeling, XLNetConfig,
                              XLNetLMHeadModel)
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error()

    spm_path = os.path.join(d["dir"], d["vocab"])
    pieces_path = os.path.join(d["dir"], d["train"])
    if not os.path.isfile(spm_path):
        refuse(f"no SentencePiece model at {spm_path}")
    tokenizer = build_tokenizer(spm_path)
    vocab_size = tokenizer.sp_model.get_piece_size()
    ids = torch.from_numpy(xl_files.read_pieces(pieces_path, spm_path))
    rows, token_types = chunk_rows(ids, t["tgt_len"])
    collator = DataCollatorForPermutationLanguageModeling(
        tokenizer=tokenizer, plm_probability=m["plm_probability"], max_span_length=5,
        return_tensors="pt")

    # The seed fixes the initial weights, then the collator's masks and permutations and the
    # dropout (all from torch's global generator); the row order has a generator of its own.
    torch.manual_seed(t["seed"])
    if m["dropatt"] != m["dropout"]:
        print(f"{NAME}: HF drops attention probabilities at model.dropout {m['dropout']}; "
              f"model.dropatt {m['dropatt']} is not used", file=sys.stderr)
    hf_config = XLNetConfig(
        vocab_size=vocab_size, d_model=m["d_model"], n_layer=m["n_layer"], n_head=m["n_head"],
        d_inner=m["d_inner"], ff_activation=ACTIVATIONS[m["ff_activation"]],
        dropout=m["dropout"], initializer_range=m["init_std"],
        layer_norm_eps=m["layer_norm_eps"], mem_len=None, bi_data=False, untie_r=True,
        pad_token_id=XL_SPECIAL_IDS["pad"], bos_token_id=XL_SPECIAL_IDS["bos"],
        eos_token_id=XL_SPECIAL_IDS["eos"])
    model = XLNetLMHeadModel(hf_config).to(device)
    model.train()
    n_params = sum(p.numel() for p in model.parameters())
    optim_cls = torch.optim.Adam if t["optim"] == "adam" else torch.optim.AdamW
    # train.decay_vectors false: no weight decay on 1-D parameters, as xl's parameter groups.
    groups = [{"params": [p for p in model.parameters() if t["decay_vectors"] or p.dim() > 1]},
              {"params": [p for p in model.parameters() if not t["decay_vectors"] and p.dim() <= 1],
               "weight_decay": 0.0}]
    optimizer = optim_cls([g for g in groups if g["params"]], lr=lr_at(1, t),
                          betas=(t["beta1"], t["beta2"]), eps=t["eps"],
                          weight_decay=t["weight_decay"])
    batches = RowBatches(rows.size(0), t["batch_size"], t["seed"])
    if args.stop_at_step is not None and not 1 <= args.stop_at_step < t["max_step"]:
        refuse(f"--stop-at-step {args.stop_at_step}: expected a step from 1 to "
               f"{t['max_step'] - 1} (train.max_step {t['max_step']})")

    progress = {"step": 0, "seconds": 0.0, "history": [], "window_loss": 0.0,
                "window_steps": 0, "bad_steps": 0}
    if args.resume:
        try:
            state = torch.load(resume_path, weights_only=False)
            saved_settings = state["settings"]
        except Exception as error:  # a damaged or foreign file: say so, keep it for the user
            refuse(f"{resume_path} is not a resume state of this script ({error}); delete the "
                   "folder to start over")
        changed = [f"{section}.{key}" for section in settings for key in settings[section]
                   if saved_settings[section].get(key) != settings[section][key]]
        if changed:
            refuse(f"{resume_path} was written with other settings ({', '.join(changed)}); "
                   "resume with the config and overrides that started it")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        batches.load_state_dict(state["batches"])
        torch.set_rng_state(state["rng"])
        if device.type == "cuda" and state["cuda_rng"] is not None:
            torch.cuda.set_rng_state(state["cuda_rng"], device)
        progress = state["progress"]
        print(f"{NAME}: resuming {args.out} after step {progress['step']}", file=sys.stderr)

    def save_state():
        """OUT/resume.pt, atomically: everything the next step depends on."""
        state = {"settings": settings, "model": model.state_dict(),
                 "optimizer": optimizer.state_dict(), "batches": batches.state_dict(),
                 "rng": torch.get_rng_state(),
                 "cuda_rng": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
                 "progress": progress}
        tmp = resume_path + ".tmp"
        with open(tmp, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, resume_path)

    # A signal stops the run after the current step, its state saved.
    stop_signal = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda received, _frame: stop_signal.append(received))

    print(f"{NAME}: {n_params / 1e6:.2f}M parameters, vocabulary {vocab_size}, "
          f"{ids.numel()} pieces -> {rows.size(0)} rows of {t['tgt_len']}, "
          f"{t['max_step']} steps of {t['batch_size']} rows on {device} "
          f"({torch.get_num_threads()} threads), plm_probability {m['plm_probability']:.3f}",
          file=sys.stderr)

    os.makedirs(args.out, exist_ok=True)
    log_every = min(LOG_EVERY_STEPS, t["log_interval"])
    first = progress["step"] + 1
    last_log = session_start = time.time()
    start = session_start - progress["seconds"]  # the seconds of earlier sessions count
    for step in range(first, t["max_step"] + 1):
        lr = lr_at(step, t)
        for group in optimizer.param_groups:
            group["lr"] = lr
        # The collator takes a list of sequences; it returns no token types, so add the batch's.
        batch = only_masked_queries(collator([row for row in rows[batches.next()]]))
        batch["token_type_ids"] = token_types.expand(t["batch_size"], -1)
        batch = {k: v.to(device) for k, v in batch.items()}
        loss = model(**batch, use_mems=False).loss
        optimizer.zero_grad(set_to_none=True)
        if torch.isfinite(loss):
            progress["bad_steps"] = 0
            loss.backward()
            if t["clip"] > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), t["clip"])
            optimizer.step()
            progress["window_loss"] += loss.item()
            progress["window_steps"] += 1
        else:
            progress["bad_steps"] += 1
            print(f"{NAME}: step {step}: loss {loss.item()}, update skipped", file=sys.stderr)
            if progress["bad_steps"] >= MAX_BAD_STEPS:
                print(f"{NAME}: {progress['bad_steps']} non-finite losses in a row; stopping",
                      file=sys.stderr)
                sys.exit(1)

        now = time.time()
        elapsed = now - start
        if (step == 1 or step % log_every == 0 or step == t["max_step"]
                or now - last_log >= LOG_EVERY_SECONDS):
            mean = progress["window_loss"] / max(progress["window_steps"], 1)
            speed = (step - first + 1) * t["batch_size"] * t["tgt_len"] / (now - session_start)
            eta = elapsed / step * (t["max_step"] - step)
            print(f"step {step}/{t['max_step']} loss {mean:.4f} lr {lr:.3g} "
                  f"{speed:.0f} pieces/s elapsed {format_seconds(elapsed)} "
                  f"eta {format_seconds(eta)}", file=sys.stderr, flush=True)
            progress["history"].append({"step": step, "loss": mean, "lr": lr,
                                        "seconds": round(elapsed, 2)})
            progress["window_loss"], progress["window_steps"], last_log = 0.0, 0, now

        if step == t["max_step"]:
            break
        stopping = bool(stop_signal) or step == args.stop_at_step
        if stopping or (args.checkpoint_every and step % args.checkpoint_every == 0):
            progress["step"], progress["seconds"] = step, elapsed
            save_state()
        if stopping:
            print(f"{NAME}: stopped after step {step} of {t['max_step']}; continue with the same "
                  f"command and --resume", file=sys.stderr)
            sys.exit(128 + stop_signal[0] if stop_signal else 0)

    seconds = time.time() - start
    model.save_pretrained(args.out, safe_serialization=True)
    log = {
        "config": args.config, "overrides": overrides,
        "settings": settings, "hf_config": hf_config.to_dict(), "device": str(device),
        "parameters": n_params, "steps": t["max_step"], "seconds": round(seconds, 2),
        # rows seen x tgt_len: what the model read, <sep>/<cls> included; corpus pieces without.
        "input_pieces": t["max_step"] * t["batch_size"] * t["tgt_len"],
        "corpus_pieces_read": t["max_step"] * t["batch_size"] * (t["tgt_len"] - 2),
        "corpus_pieces": ids.numel(), "rows_per_pass": rows.size(0),
        "loss": progress["history"],
    }
    with open(os.path.join(args.out, "train_log.json"), "w") as f:
        json.dump(log, f, indent=1)
    if os.path.exists(resume_path):
        os.remove(resume_path)
    print(f"{NAME}: wrote {args.out} ({format_seconds(seconds)}); convert with "
          f"scripts/convert/hf_xlnet.py --model {args.out} --out CONVERTED "
          f"--data-dir {d['dir']} --seq-len {t['tgt_len']}", file=sys.stderr)


if __name__ == "__main__":
    main()
