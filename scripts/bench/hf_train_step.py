#!/usr/bin/env python3
"""Training-step speed of Hugging Face's TransfoXLLMHeadModel on an xl config.

The counterpart of `xl-bench --modes train`: the same hyperparameters (from a resolved xl
config), batch, segment length, memory, optimizer (Adam), clipping and thread count, random
tokens. Prints one JSON line with tokens/s and ms per step.
"""
import argparse
import json
import os
import sys
import time
import warnings

import torch
import yaml

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "parity"))
from transfo_xl import hf_config  # noqa: E402
from transformers import TransfoXLLMHeadModel  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True, help="resolved xl config (--dump-config)")
    parser.add_argument("--n-token", type=int, required=True)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args()

    with open(args.config) as f:
        config = yaml.safe_load(f)
    train = config["train"]
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(train["seed"])
    cfg = hf_config(config["model"], args.n_token)
    cfg.dropout = config["model"]["dropout"]
    cfg.dropatt = config["model"]["dropatt"]
    model = TransfoXLLMHeadModel(cfg)
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=train["lr"])
    batch, tgt_len = train["batch_size"], train["tgt_len"]
    mems = [torch.zeros(0, batch, cfg.d_model) for _ in range(cfg.n_layer)]

    def step():
        nonlocal mems
        tokens = torch.randint(args.n_token, (batch, tgt_len))
        optimizer.zero_grad()
        out = model(input_ids=tokens, labels=tokens, mems=mems)
        out.losses.mean().backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), train["clip"])
        optimizer.step()
        mems = out.mems

    for _ in range(args.warmup):
        step()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    seconds = time.perf_counter() - start
    print(json.dumps({
        "mode": "hf_train",
        "tokens_per_s": args.steps * batch * tgt_len / seconds,
        "ms_per_iteration": 1000 * seconds / args.steps,
        "threads": torch.get_num_threads(),
    }))


if __name__ == "__main__":
    main()
