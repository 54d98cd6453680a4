#!/usr/bin/env python3
"""A Hugging Face export of an XLNet run with its rare rows drawn again: the word embeddings (and
the LM bias) of every piece seen fewer than --below times in training get fresh normal(0,
init_std) rows (bias 0), as an untrained model has them. The rest is the run's.

  build/bin/xl-export --run RUN --out HF
  scripts/analysis/xlnet_reinit_rare.py --hf HF --pieces DATA/train.pieces --below 100 --out HF2
  scripts/convert/hf_xlnet.py --model HF2 --out CONVERTED --data-dir DATA --seq-len 64
  build/bin/xl-import --config CONVERTED/config.yaml --weights CONVERTED/weights.safetensors \\
      --set run.dir=runs/RUN_rare_reinit

Fine-tuning from the result (train.init_from) tells whether the rare rows are what holds a
pretrained start back (docs/benchmarks.md, XLNet).
"""
import argparse
import json
import os
import shutil
import sys

import numpy as np
import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import xl_files  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hf", required=True, help="an xl-export folder")
    parser.add_argument("--pieces", required=True, help="the run's training pieces")
    parser.add_argument("--below", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if os.path.exists(args.out):
        sys.exit(f"xlnet_reinit_rare: {args.out} exists; name a new folder")
    with open(os.path.join(args.hf, "config.json")) as f:
        config = json.load(f)
    weights = load_file(os.path.join(args.hf, "model.safetensors"))
    emb = weights["transformer.word_embedding.weight"]
    counts = np.zeros(emb.shape[0], dtype=np.int64)
    found = np.bincount(xl_files.read_pieces(args.pieces))
    counts[:len(found)] = found
    rare = torch.from_numpy(np.nonzero(counts < args.below)[0])
    rare = rare[rare > 8]  # XLNet's special pieces keep their rows
    gen = torch.Generator().manual_seed(args.seed)
    fresh = torch.randn(len(rare), emb.shape[1], generator=gen) * config["initializer_range"]
    emb[rare] = fresh.to(emb.dtype)
    # The LM head is tied to the embedding: the same tensor under both names where exported.
    if "lm_loss.weight" in weights:
        weights["lm_loss.weight"] = emb.clone()
    if "lm_loss.bias" in weights:
        weights["lm_loss.bias"][rare] = 0.0
    os.makedirs(args.out)
    for name in os.listdir(args.hf):
        if name != "model.safetensors":
            shutil.copy(os.path.join(args.hf, name), args.out)
    save_file({k: v.contiguous() for k, v in weights.items()},
              os.path.join(args.out, "model.safetensors"), metadata={"format": "pt"})
    print(f"{len(rare)} of {emb.shape[0]} rows drawn again (training count < {args.below})")


if __name__ == "__main__":
    main()
