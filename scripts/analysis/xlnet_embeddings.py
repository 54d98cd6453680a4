#!/usr/bin/env python3
"""The word embeddings and LM bias of an XLNet checkpoint, by how often each piece occurs in
training: what pretraining did to rare rows.

  scripts/analysis/xlnet_embeddings.py CHECKPOINT_OR_RUN... [--pieces DIR/train.pieces] [--json OUT]

For each checkpoint (a run directory means its checkpoints/best.pt) and each bucket of training
counts (0, 1-9, 10-99, 100-999, 1,000-9,999, 10,000 and more; counted in the training split the
run's config names, or --pieces): the rows, their mean norm, the mean cosine between distinct
rows of the bucket (up to 2,000 rows drawn with a fixed seed), the norm of the bucket's mean row
over the mean norm (1: every row points the same way, 0: no common direction), and the LM bias
(mean, min, max). Rows that share a direction cannot tell their pieces apart to a classifier
that reads them, however it is fine-tuned.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import xl_files  # noqa: E402

BUCKETS = [(0, 0), (1, 9), (10, 99), (100, 999), (1000, 9999), (10000, None)]


def load(path):
    if os.path.isdir(path):
        path = os.path.join(path, "checkpoints", "best.pt")
    ckpt = torch.jit.load(path, map_location="cpu")
    weights = {k[len("model."):]: v for k, v in ckpt.state_dict().items()
               if k.startswith("model.")}
    config = yaml.safe_load(ckpt._c.getattr("xl.config"))
    return path, weights, config, ckpt._c.getattr("xl.step")


def bucket_stats(emb, bias, counts):
    gen = torch.Generator().manual_seed(0)
    out = []
    for lo, hi in BUCKETS:
        rows = np.nonzero((counts >= lo) & ((counts <= hi) if hi is not None else True))[0]
        rows = rows[rows > 8]  # XLNet's special pieces are not words
        name = f"{lo}-{hi}" if hi is not None else f">={lo}"
        if len(rows) == 0:
            out.append({"bucket": name, "rows": 0})
            continue
        e = emb[torch.from_numpy(rows)]
        norms = e.norm(dim=1)
        pick = e if len(rows) <= 2000 else e[torch.randperm(len(rows), generator=gen)[:2000]]
        unit = pick / pick.norm(dim=1, keepdim=True).clamp_min(1e-12)
        n = unit.shape[0]
        cos = ((unit @ unit.T).sum() - n) / max(n * (n - 1), 1)
        b = bias[torch.from_numpy(rows)]
        out.append({
            "bucket": name, "rows": int(len(rows)), "mean_norm": norms.mean().item(),
            "mean_pairwise_cos": cos.item(),
            "common_direction": (e.mean(0).norm() / norms.mean()).item(),
            "bias_mean": b.mean().item(), "bias_min": b.min().item(), "bias_max": b.max().item(),
        })
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--pieces", help="training pieces to count (default: the config's)")
    parser.add_argument("--json", help="also write the tables here (refused if it exists)")
    args = parser.parse_args()
    if args.json and os.path.exists(args.json):
        sys.exit(f"xlnet_embeddings: {args.json} exists; name a new file")
    results = []
    counts_of = {}
    for given in args.checkpoints:
        path, weights, config, step = load(given)
        pieces = args.pieces or os.path.join(config["data"]["dir"], config["data"]["train"])
        if not pieces.endswith(".pieces"):  # a fine-tuned run reads labelled files
            pieces = os.path.join(config["data"]["dir"], "train.pieces")
        if pieces not in counts_of:
            counts_of[pieces] = np.bincount(xl_files.read_pieces(pieces))
        emb = weights["word_embedding.weight"].double()
        counts = np.zeros(emb.shape[0], dtype=np.int64)
        counts[:len(counts_of[pieces])] = counts_of[pieces]
        bias = weights.get("lm_bias", torch.zeros(emb.shape[0])).double()
        table = bucket_stats(emb, bias, counts)
        results.append({"checkpoint": path, "step": step, "buckets": table})
        print(f"{path} (step {step}), counts from {pieces}")
        print("| training count | rows | mean norm | mean pairwise cos | common direction "
              "| LM bias mean (min..max) |")
        print("|---|---|---|---|---|---|")
        for r in table:
            if r["rows"] == 0:
                print(f"| {r['bucket']} | 0 | | | | |")
                continue
            print(f"| {r['bucket']} | {r['rows']} | {r['mean_norm']:.3f} | "
                  f"{r['mean_pairwise_cos']:.3f} | {r['common_direction']:.3f} | "
                  f"{r['bias_mean']:.2f} ({r['bias_min']:.2f}..{r['bias_max']:.2f}) |")
        print()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
