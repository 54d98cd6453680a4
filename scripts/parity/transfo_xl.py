#!/usr/bin/env python3
"""Reference outputs of Hugging Face's TransfoXLLMHeadModel for an xl config.

Builds the HF model with the hyperparameters of a resolved xl config (`xl-train --config X
--dump-config`), gives every parameter seeded random values, runs consecutive segments with
memory and writes, for xl's parity test to compare against:

  OUT/weights.safetensors  the state dict under HF names (tied tensors stored once per name)
  OUT/data.safetensors     input/target [segments * tgt_len, batch] (time-major),
                           logp_<s> [tgt_len, batch]: log p(target) of segment s,
                           mem_<s>_<l> [mem, batch, d_model]: memory after segment s, layer l
  OUT/meta.json            n_token, batch, segments, tgt_len

The first segment starts from an empty memory (xl's and kimiyoung's convention; HF itself
would start from mem_len zero vectors), passed as zero-length tensors.
"""
import argparse
import json
import os
import warnings

import torch
import yaml
from safetensors.torch import save_file

warnings.filterwarnings("ignore")
from transformers import TransfoXLConfig, TransfoXLLMHeadModel  # noqa: E402


def hf_config(model, n_token):
    if model["type"] != "transformer_xl" or model["attn_type"] != "relative":
        raise SystemExit("HF TransfoXL has only relative Transformer-XL attention")
    cutoffs = list(model["cutoffs"])
    tie_projs = list(model["tie_projs"]) or [False] + [True] * len(cutoffs)
    cfg = TransfoXLConfig(
        vocab_size=n_token,
        cutoffs=cutoffs,
        d_model=model["d_model"],
        d_embed=model["d_embed"] if model["d_embed"] is not None else model["d_model"],
        n_head=model["n_head"],
        d_head=model["d_head"],
        d_inner=model["d_inner"],
        div_val=model["div_val"],
        pre_lnorm=model["pre_lnorm"],
        n_layer=model["n_layer"],
        mem_len=model["mem_len"],
        clamp_len=model["clamp_len"],
        same_length=model["same_length"],
        attn_type=0,
        untie_r=model["untie_r"],
        tie_word_embeddings=model["tie_weight"],
        dropout=0.0,
        dropatt=0.0,
        layer_norm_epsilon=model["layer_norm_eps"],
    )
    cfg.tie_projs = tie_projs
    return cfg


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True, help="resolved xl config (--dump-config)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-token", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=3)
    parser.add_argument("--segments", type=int, default=3)
    args = parser.parse_args()

    with open(args.config) as f:
        config = yaml.safe_load(f)
    tgt_len = config["train"]["tgt_len"]
    torch.manual_seed(args.seed)
    model = TransfoXLLMHeadModel(hf_config(config["model"], args.n_token))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "layer_norm.weight" in name:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            else:
                p.copy_(0.1 * torch.randn_like(p))
    model.eval()

    tokens = torch.randint(args.n_token, (args.batch, args.segments * tgt_len + 1))
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    n_layer, d_model = model.config.n_layer, model.config.d_model
    mems = [torch.zeros(0, args.batch, d_model) for _ in range(n_layer)]
    data = {"input": inputs.t().contiguous(), "target": targets.t().contiguous()}
    with torch.no_grad():
        for s in range(args.segments):
            seg = slice(s * tgt_len, (s + 1) * tgt_len)
            out = model(input_ids=inputs[:, seg], mems=mems)
            logp = out.prediction_scores.gather(2, targets[:, seg].unsqueeze(2)).squeeze(2)
            data[f"logp_{s}"] = logp.t().contiguous()
            mems = out.mems
            for l, m in enumerate(mems):
                data[f"mem_{s}_{l}"] = m.contiguous()

    os.makedirs(args.out, exist_ok=True)
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    save_file(state, os.path.join(args.out, "weights.safetensors"))
    save_file(data, os.path.join(args.out, "data.safetensors"))
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump({"n_token": args.n_token, "batch": args.batch,
                   "segments": args.segments, "tgt_len": tgt_len}, f)


if __name__ == "__main__":
    main()
