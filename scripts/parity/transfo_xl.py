#!/usr/bin/env python3
"""Reference numbers of Hugging Face's TransfoXLLMHeadModel for an xl config.

Builds the HF model with the hyperparameters of a resolved xl config (`xl-train --config X
--dump-config`), dropout off, gives every parameter seeded random values, and writes what
xl-parity-check compares against:

  OUT/weights.safetensors  the state dict under HF names (tied tensors stored once per name)
  OUT/data.safetensors     input/target [segments * tgt_len, batch] (time-major);
                           logp_<s> [tgt_len, batch]: log p(target) of segment s, eval mode;
                           mem_<s>_<l> [mem, batch, d_model]: memory after segment s, layer l;
                           loss: the mean NLL of segments 0 and 1 in training mode, the second
                           attending to the first's memory;
                           grad/<name>: the gradient of that loss for every parameter name
                           (tied names share their tensor's gradient);
                           after/<name>: every parameter after one optimizer step on it
                           (train.optim at train.lr, train.clip applied first)
  OUT/meta.json            n_token, batch, segments, tgt_len, optim

Both passes start from an empty memory (xl's and kimiyoung's convention; HF itself would start
from mem_len zero vectors), passed as zero-length tensors.
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
from transformers import TransfoXLConfig, TransfoXLLMHeadModel  # noqa: E402


def hf_config(model, n_token):
    if model["type"] != "transformer_xl":
        refuse(f"HF TransfoXL is a Transformer-XL; model.type is {model['type']}")
    txl = model["transformer_xl"]
    if txl["attn_type"] != "relative":
        refuse("HF TransfoXL has only relative attention (model.transformer_xl.attn_type)")
    cutoffs = list(txl["cutoffs"])
    tie_projs = list(txl["tie_projs"]) or [False] + [True] * len(cutoffs)
    cfg = TransfoXLConfig(
        vocab_size=n_token,
        cutoffs=cutoffs,
        d_model=model["d_model"],
        d_embed=txl["d_embed"] if txl["d_embed"] is not None else model["d_model"],
        n_head=model["n_head"],
        d_head=model["d_head"],
        d_inner=model["d_inner"],
        div_val=txl["div_val"],
        pre_lnorm=model["pre_lnorm"],
        n_layer=model["n_layer"],
        mem_len=txl["mem_len"],
        clamp_len=txl["clamp_len"],
        same_length=txl["same_length"],
        attn_type=0,
        untie_r=txl["untie_r"],
        tie_word_embeddings=txl["tie_weight"],
        dropout=0.0,
        dropatt=0.0,
        layer_norm_epsilon=model["layer_norm_eps"],
    )
    cfg.tie_projs = tie_projs
    return cfg


def segment_logp(model, inputs, targets, mems, s, tgt_len):
    seg = slice(s * tgt_len, (s + 1) * tgt_len)
    out = model(input_ids=inputs[:, seg], mems=mems)
    logp = out.prediction_scores.gather(2, targets[:, seg].unsqueeze(2)).squeeze(2)
    return logp, out.mems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True, help="resolved xl config (--dump-config)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-token", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=3)
    parser.add_argument("--segments", type=int, default=3)
    parser.add_argument("--bf16", action="store_true",
                        help="the forward under CPU bf16 autocast, and no training step")
    args = parser.parse_args()
    if args.segments < 2:
        refuse("--segments must be at least 2 (the gradient check spans two)")

    with open(args.config) as f:
        config = yaml.safe_load(f)
    train = config["train"]
    tgt_len = train["tgt_len"]
    torch.manual_seed(args.seed)
    model = TransfoXLLMHeadModel(hf_config(config["model"], args.n_token))
    state = randomize(model)

    tokens = torch.randint(args.n_token, (args.batch, args.segments * tgt_len + 1))
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    n_layer, d_model = model.config.n_layer, model.config.d_model
    empty = [torch.zeros(0, args.batch, d_model) for _ in range(n_layer)]
    data = {"input": own(inputs.t()), "target": own(targets.t())}

    model.eval()
    with torch.no_grad(), precision(args.bf16):
        mems = empty
        for s in range(args.segments):
            logp, mems = segment_logp(model, inputs, targets, mems, s, tgt_len)
            data[f"logp_{s}"] = own(logp.t())
            for l, m in enumerate(mems):
                data[f"mem_{s}_{l}"] = own(m)

    if not args.bf16:
        model.train()
        first, mems = segment_logp(model, inputs, targets, empty, 0, tgt_len)
        second, _ = segment_logp(model, inputs, targets, mems, 1, tgt_len)
        loss = -(first.sum() + second.sum()) / (first.numel() + second.numel())
        step_on(model, loss, train, data)
    write(args.out, state, data, {"n_token": args.n_token, "batch": args.batch,
                                  "segments": args.segments, "tgt_len": tgt_len,
                                  "optim": train["optim"], "bf16": args.bf16})

if __name__ == "__main__":
    main()
