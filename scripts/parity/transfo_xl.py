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
import json
import os
import sys
import warnings

import torch
import yaml
from safetensors.torch import save_file

warnings.filterwarnings("ignore")
from transformers import TransfoXLConfig, TransfoXLLMHeadModel  # noqa: E402


def refuse(message):
    """A config the reference cannot run: exit 2, like a bad config in xl."""
    print(f"parity: {message}", file=sys.stderr)
    sys.exit(2)


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


def make_optimizer(train, params):
    kind = train["optim"]
    if kind == "adam":
        return torch.optim.Adam(params, lr=train["lr"], betas=(train["beta1"], train["beta2"]),
                                eps=train["eps"], weight_decay=train["weight_decay"])
    if kind == "adamw":
        return torch.optim.AdamW(params, lr=train["lr"], betas=(train["beta1"], train["beta2"]),
                                 eps=train["eps"], weight_decay=train["weight_decay"])
    if kind == "sgd":
        return torch.optim.SGD(params, lr=train["lr"], momentum=train["mom"],
                               weight_decay=train["weight_decay"])
    refuse(f"no PyTorch reference for train.optim {kind} (LAMB has its own unit test);"
           " check with --set train.optim=adam")


def own(t):
    """A contiguous copy that shares memory with nothing (safetensors refuses shared storage)."""
    return t.detach().clone(memory_format=torch.contiguous_format)


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
    args = parser.parse_args()
    if args.segments < 2:
        refuse("--segments must be at least 2 (the gradient check spans two)")

    with open(args.config) as f:
        config = yaml.safe_load(f)
    train = config["train"]
    tgt_len = train["tgt_len"]
    torch.manual_seed(args.seed)
    model = TransfoXLLMHeadModel(hf_config(config["model"], args.n_token))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "layer_norm.weight" in name:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            else:
                p.copy_(0.1 * torch.randn_like(p))
    # Saved before any step.
    state = {k: own(v) for k, v in model.state_dict().items()}

    tokens = torch.randint(args.n_token, (args.batch, args.segments * tgt_len + 1))
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    n_layer, d_model = model.config.n_layer, model.config.d_model
    empty = [torch.zeros(0, args.batch, d_model) for _ in range(n_layer)]
    data = {"input": own(inputs.t()), "target": own(targets.t())}

    model.eval()
    with torch.no_grad():
        mems = empty
        for s in range(args.segments):
            logp, mems = segment_logp(model, inputs, targets, mems, s, tgt_len)
            data[f"logp_{s}"] = own(logp.t())
            for l, m in enumerate(mems):
                data[f"mem_{s}_{l}"] = own(m)

    model.train()
    first, mems = segment_logp(model, inputs, targets, empty, 0, tgt_len)
    second, _ = segment_logp(model, inputs, targets, mems, 1, tgt_len)
    loss = -(first.sum() + second.sum()) / (first.numel() + second.numel())
    loss.backward()
    data["loss"] = own(loss)
    named = dict(model.named_parameters(remove_duplicate=False))
    for name, p in named.items():
        data[f"grad/{name}"] = own(p.grad)
    params = list(model.parameters())
    if train["clip"] > 0:
        torch.nn.utils.clip_grad_norm_(params, train["clip"])
    make_optimizer(train, params).step()
    for name, p in named.items():
        data[f"after/{name}"] = own(p)

    os.makedirs(args.out, exist_ok=True)
    save_file(state, os.path.join(args.out, "weights.safetensors"))
    save_file(data, os.path.join(args.out, "data.safetensors"))
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump({"n_token": args.n_token, "batch": args.batch, "segments": args.segments,
                   "tgt_len": tgt_len, "optim": train["optim"]}, f)


if __name__ == "__main__":
    main()
