#!/usr/bin/env python3
"""Reference numbers of Hugging Face's XLNetLMHeadModel for an xl config.

Builds the HF model with the hyperparameters of a resolved xl config (`xl-train --config X
--dump-config`), dropout off, gives every parameter seeded random values, draws permutation-LM
batches (tokens, segment ids, perm_mask, target_mapping with padding rows) and writes what
xl-parity-check compares against:

  OUT/weights.safetensors  the state dict under HF names
  OUT/data.safetensors     batch_<s>/<field>: the xl batch of segment s, time-major (tokens,
                           segment_ids, perm_mask, target_mapping, targets, target_mask,
                           reversed with --bi-data);
                           mem_init_<l> [M, batch, d_model]: the memory segment 0 starts from
                           (random; none when model.xlnet.mem_len is 0);
                           logp_<s> [predict, batch]: log p(target) of segment s, eval mode;
                           mem_<s>_<l>: memory after segment s, layer l;
                           loss: the mean NLL over the real targets of segments 0 and 1 in
                           training mode, the second attending to the first's memory;
                           grad/<name>, after/<name>: gradients of that loss, parameters after
                           one optimizer step (train.optim at train.lr, train.clip first)
  OUT/meta.json            n_token, batch, segments, tgt_len, optim, family

xl keeps one set of r_w/r_r/r_s biases when model.xlnet.untie_r is false; HF keeps one per
layer, so here every layer shares layer 0's parameters (the sum of their gradients is the
shared one's). HF needs d_head = d_model / n_head.
"""
import argparse
import os
import sys
import warnings

import torch
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference import own, precision, randomize, refuse, step_on, write  # noqa: E402

warnings.filterwarnings("ignore")
from transformers import XLNetConfig, XLNetLMHeadModel  # noqa: E402

ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "gelu_tanh": "gelu_new"}


def hf_config(model, n_token, bi_data):
    if model["type"] != "xlnet":
        refuse(f"HF XLNet is an XLNet; model.type is {model['type']}")
    x = model["xlnet"]
    if model["d_head"] * model["n_head"] != model["d_model"]:
        refuse("HF XLNet needs model.d_head = model.d_model / model.n_head")
    if x["n_class"] != 0:
        refuse("the parity check covers the LM head: set model.xlnet.n_class=0")
    return XLNetConfig(
        vocab_size=n_token,
        d_model=model["d_model"],
        n_layer=model["n_layer"],
        n_head=model["n_head"],
        d_inner=model["d_inner"],
        ff_activation=ACTIVATIONS[x["ff_activation"]],
        untie_r=True,
        attn_type="bi",
        layer_norm_eps=model["layer_norm_eps"],
        dropout=0.0,
        mem_len=x["mem_len"] or None,
        reuse_len=x["reuse_len"] or None,
        bi_data=bi_data,
        clamp_len=x["clamp_len"],
        same_length=False,
    )


def share_biases(model):
    """One r_w/r_r/r_s bias for all layers (xl's untie_r false)."""
    layers = model.transformer.layer
    for layer in layers[1:]:
        for name in ("r_w_bias", "r_r_bias", "r_s_bias"):
            setattr(layer.rel_attn, name, getattr(layers[0].rel_attn, name))


def permutation_batch(tokens, n_predict, gen):
    """perm_mask [B, L, L], target_mapping [B, P, L], targets and mask [B, P]: P or P - 1 targets
    per row (so padding rows occur), a random factorisation order over them; a target hides
    itself and later targets from targets, and every target from the context."""
    bsz, qlen = tokens.shape
    perm = torch.zeros(bsz, qlen, qlen)
    mapping = torch.zeros(bsz, n_predict, qlen)
    targets = torch.zeros(bsz, n_predict, dtype=torch.long)
    mask = torch.zeros(bsz, n_predict, dtype=torch.bool)
    for b in range(bsz):
        count = n_predict - (b % 2)
        where = torch.randperm(qlen, generator=gen)[:count].sort().values
        rank = torch.full((qlen,), -1)
        rank[where] = torch.randperm(count, generator=gen)
        is_target = rank >= 0
        for i in range(qlen):
            for j in range(qlen):
                if is_target[j] and (not is_target[i] or rank[j] >= rank[i]):
                    perm[b, i, j] = 1.0
        mapping[b, torch.arange(count), where] = 1.0
        targets[b, :count] = tokens[b, where]
        mask[b, :count] = True
    return perm, mapping, targets, mask


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True, help="resolved xl config (--dump-config)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-token", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--segments", type=int, default=3)
    parser.add_argument("--predict", type=int, default=0,
                        help="predictions per row (0: a quarter of train.tgt_len)")
    parser.add_argument("--bi-data", action="store_true",
                        help="the second half of the rows reads backwards")
    parser.add_argument("--bf16", action="store_true",
                        help="the forward under CPU bf16 autocast, and no training step")
    args = parser.parse_args()
    if args.segments < 2:
        refuse("--segments must be at least 2 (the gradient check spans two)")
    if args.bi_data and args.batch % 2:
        refuse("--bi-data needs an even --batch")

    with open(args.config) as f:
        config = yaml.safe_load(f)
    train, xcfg = config["train"], config["model"]["xlnet"]
    qlen = train["tgt_len"]
    n_predict = args.predict or max(1, qlen // 4)
    if n_predict > qlen:
        refuse(f"--predict {n_predict} exceeds train.tgt_len {qlen}")
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    model = XLNetLMHeadModel(hf_config(config["model"], args.n_token, args.bi_data))
    if not xcfg["untie_r"]:
        share_biases(model)
    state = randomize(model)

    bsz, d_model = args.batch, model.config.d_model
    use_mems = xcfg["mem_len"] > 0
    data = {}
    batches = []
    for s in range(args.segments):
        tokens = torch.randint(args.n_token, (bsz, qlen), generator=gen)
        segment_ids = torch.randint(3, (bsz, qlen), generator=gen)
        perm, mapping, targets, mask = permutation_batch(tokens, n_predict, gen)
        batches.append((tokens, segment_ids, perm, mapping, targets, mask))
        fields = {"tokens": tokens.t(), "segment_ids": segment_ids.t(),
                  "perm_mask": perm.bool().permute(1, 2, 0), "target_mapping": mapping.permute(1, 2, 0),
                  "targets": targets.t(), "target_mask": mask.t()}
        if args.bi_data:
            fields["reversed"] = torch.arange(bsz) >= bsz // 2
        for k, v in fields.items():
            data[f"batch_{s}/{k}"] = own(v)
    initial = None
    if use_mems:
        initial = [torch.randn(xcfg["mem_len"], bsz, d_model, generator=gen)
                   for _ in range(model.config.n_layer)]
        for l, m in enumerate(initial):
            data[f"mem_init_{l}"] = own(m)

    def run(s, mems):
        tokens, segment_ids, perm, mapping, targets, mask = batches[s]
        out = model(input_ids=tokens, token_type_ids=segment_ids, perm_mask=perm,
                    target_mapping=mapping, mems=mems, use_mems=use_mems)
        logp = torch.log_softmax(out.logits, -1).gather(2, targets.unsqueeze(2)).squeeze(2)
        return logp, mask, out.mems

    model.eval()
    with torch.no_grad(), precision(args.bf16):
        mems = initial
        for s in range(args.segments):
            logp, _, mems = run(s, mems)
            data[f"logp_{s}"] = own(logp.t())
            for l, m in enumerate(mems or []):
                data[f"mem_{s}_{l}"] = own(m)

    if not args.bf16:
        model.train()
        first, first_mask, mems = run(0, initial)
        second, second_mask, _ = run(1, mems)
        loss = -(first[first_mask].sum() + second[second_mask].sum()) / (
            first_mask.sum() + second_mask.sum())
        step_on(model, loss, train, data)
    write(args.out, state, data, {"n_token": args.n_token, "batch": bsz,
                                  "segments": args.segments, "tgt_len": qlen,
                                  "optim": train["optim"], "family": "xlnet",
                                  "bf16": args.bf16})

if __name__ == "__main__":
    main()
