#!/usr/bin/env python3
"""Training-step speed of Hugging Face's TransfoXLLMHeadModel or XLNetLMHeadModel, or of
kimiyoung's MemTransformerLM, on an xl config.

The counterpart of `xl-bench --modes train`: the same hyperparameters (from a resolved xl
config), batch, segment length, memory, optimizer (Adam), clipping and thread count, random
data of the same shapes (XLNet: permutation masks over model.xlnet.num_predict targets per row,
segment ids, bi_data from the config, the memory carried with reuse_len), on the config's
train.device (auto: CUDA when there is one), under bf16 autocast when train.bf16 is true, on
either device, as xl runs it. With --prepared-data, the segments come from the config's
prepared training split (data.dir), read as xl reads it: batch_size contiguous streams, one
segment of each after another. Prints one JSON line with input tokens/s, ms per step and peak
memory measured as xl-bench does (the process's peak resident set on the CPU, the CUDA
allocator's peak on a GPU).

With --kimiyoung DIR, the model is MemTransformerLM from DIR, the pytorch/ folder of a checkout of
kimiyoung/transformer-xl (fetched for the measurement; none of it is in this repository),
built with the arguments its train.py passes. With --nvidia DIR, MemTransformerLM from DIR, the
PyTorch/LanguageModeling/Transformer-XL/pytorch/ folder of NVIDIA/DeepLearningExamples (fetched
alike), built as its train.py builds it; its mixed precision is this script's autocast (bf16 under
train.bf16), as xl's.
"""
import importlib
import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
import warnings

import numpy as np
import torch
import yaml

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "parity"))
import transfo_xl  # noqa: E402
import xlnet  # noqa: E402
from transformers import TransfoXLLMHeadModel, XLNetLMHeadModel  # noqa: E402


class RandomSegments:
    """Uniform random segments: [batch, tgt_len + 1] ids each call."""

    def __init__(self, n_token, batch, tgt_len, device):
        self.shape, self.n_token, self.device = (batch, tgt_len + 1), n_token, device

    def __call__(self):
        return torch.randint(self.n_token, self.shape, device=self.device)


class PreparedSegments:
    """Segments of an xl token file (64-byte header "XLTOKENS", then little-endian ids of the
    header's width), cut as xl's ordered segments cut it: `batch` contiguous streams, then
    [batch, tgt_len + 1] ids of each stream in turn (a segment and the next one's first id),
    from the start again at the end."""

    def __init__(self, path, batch, tgt_len, device):
        with open(path, "rb") as f:
            header = f.read(64)
            if len(header) < 64 or header[:8] != b"XLTOKENS":
                sys.exit(f"hf_train_step: {path} is not an xl token file (prepare it with xl-prep)")
            width = int.from_bytes(header[12:16], "little")
            count = int.from_bytes(header[16:24], "little")
            dtype = {2: np.uint16, 4: np.uint32}[width]
            ids = np.frombuffer(f.read(width * count), dtype=dtype).astype(np.int64)
        per_stream = count // batch
        if per_stream < tgt_len + 1:
            sys.exit(f"hf_train_step: {path} holds {count} tokens: too few for {batch} streams "
                     f"of {tgt_len + 1}")
        self.streams = torch.from_numpy(ids[:per_stream * batch].reshape(batch, per_stream))
        self.tgt_len, self.start, self.device = tgt_len, 0, device

    def __call__(self):
        if self.start + self.tgt_len + 1 > self.streams.shape[1]:
            self.start = 0
        segment = self.streams[:, self.start:self.start + self.tgt_len + 1]
        self.start += self.tgt_len
        return segment.to(self.device)


def transfo_xl_step(config, segments, n_token, batch, tgt_len, device):
    cfg = transfo_xl.hf_config(config["model"], n_token)
    cfg.dropout = config["model"]["dropout"]
    cfg.dropatt = config["model"]["dropatt"]
    model = TransfoXLLMHeadModel(cfg).to(device)
    mems = [torch.zeros(0, batch, cfg.d_model, device=device) for _ in range(cfg.n_layer)]

    def forward():
        nonlocal mems
        tokens = segments()[:, :-1]
        out = model(input_ids=tokens, labels=tokens, mems=mems)
        mems = out.mems
        return out.losses.mean()

    return model, forward


def mem_transformer_args(config, n_token, tgt_len):
    """MemTransformerLM's arguments for an xl config, as kimiyoung's and NVIDIA's train.py pass
    them (relative attention, no sampled softmax)."""
    m, txl = config["model"], config["model"]["transformer_xl"]
    cutoffs = list(txl["cutoffs"])
    return dict(
        n_token=n_token, n_layer=m["n_layer"], n_head=m["n_head"], d_model=m["d_model"],
        d_head=m["d_head"], d_inner=m["d_inner"], dropout=m["dropout"], dropatt=m["dropatt"],
        tie_weight=txl["tie_weight"], d_embed=txl["d_embed"] or m["d_model"],
        div_val=txl["div_val"],
        tie_projs=list(txl["tie_projs"]) or [False] + [True] * len(cutoffs),
        pre_lnorm=m["pre_lnorm"], tgt_len=tgt_len, ext_len=txl["ext_len"],
        mem_len=txl["mem_len"], cutoffs=cutoffs, same_length=txl["same_length"], attn_type=0,
        clamp_len=txl["clamp_len"], sample_softmax=-1)


def kimiyoung_step(code_dir):
    def build(config, segments, n_token, batch, tgt_len, device):
        sys.path[:0] = [code_dir, os.path.join(code_dir, "utils")]
        # Its masks are uint8, which masked_fill no longer takes: read them as booleans.
        torch.Tensor.byte = torch.Tensor.bool
        mem_transformer = importlib.import_module("mem_transformer")
        model = mem_transformer.MemTransformerLM(
            **mem_transformer_args(config, n_token, tgt_len)).to(device)
        mems = tuple()

        def forward():
            nonlocal mems
            tokens = segments().t().contiguous()
            out = model(tokens[:-1], tokens[1:], *mems)
            mems = out[1:]
            return out[0].float().mean()

        return model, forward

    return build


def nvidia_step(code_dir):
    def build(config, segments, n_token, batch, tgt_len, device):
        # Its utils/ package imports its training scripts' dependencies (dllogger, pynvml):
        # the model needs two of its modules only, copied beside it into a package of their own.
        here = tempfile.mkdtemp()
        os.makedirs(os.path.join(here, "utils"))
        open(os.path.join(here, "utils", "__init__.py"), "w").close()
        for name in ("proj_adaptive_softmax.py", "log_uniform_sampler.py"):
            shutil.copy(os.path.join(code_dir, "utils", name), os.path.join(here, "utils"))
        shutil.copy(os.path.join(code_dir, "mem_transformer.py"), here)
        sys.path.insert(0, here)
        mem_transformer = importlib.import_module("mem_transformer")
        model = mem_transformer.MemTransformerLM(
            dtype=None, **mem_transformer_args(config, n_token, tgt_len)).to(device)
        mems = None

        def forward():
            nonlocal mems
            tokens = segments().t().contiguous()
            loss, mems = model(tokens[:-1], tokens[1:], mems)
            return loss.float().mean()

        return model, forward

    return build


def permutation_batches(n_token, batch, tgt_len, n_predict, count):
    """`count` random permutation-LM batches: n_predict targets per row in a random order;
    a target hides itself and later targets from targets, and every target from the context."""
    out = []
    for _ in range(count):
        tokens = torch.randint(n_token, (batch, tgt_len))
        where = torch.rand(batch, tgt_len).argsort(1)[:, :n_predict].sort(1).values
        rank = torch.full((batch, tgt_len), -1)
        rank.scatter_(1, where, torch.rand(batch, n_predict).argsort(1))
        target = rank >= 0
        perm = target[:, None, :] & (~target[:, :, None] | (rank[:, None, :] >= rank[:, :, None]))
        mapping = torch.zeros(batch, n_predict, tgt_len)
        mapping.scatter_(2, where.unsqueeze(2), 1.0)
        out.append(dict(input_ids=tokens, token_type_ids=torch.randint(3, (batch, tgt_len)),
                        perm_mask=perm.float(), target_mapping=mapping,
                        labels=tokens.gather(1, where)))
    return out


def xlnet_step(config, _segments, n_token, batch, tgt_len, device):
    x = config["model"]["xlnet"]
    cfg = xlnet.hf_config(config["model"], n_token, x["bi_data"])
    cfg.dropout = config["model"]["dropout"]
    model = XLNetLMHeadModel(cfg).to(device)
    batches = [{k: v.to(device) for k, v in b.items()}
               for b in permutation_batches(n_token, batch, tgt_len, x["num_predict"], 8)]
    mems, step = None, 0

    def forward():
        nonlocal mems, step
        out = model(**batches[step % len(batches)], mems=mems, use_mems=x["mem_len"] > 0)
        mems, step = out.mems, step + 1
        return out.loss

    return model, forward


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True, help="resolved xl config (--dump-config)")
    parser.add_argument("--n-token", type=int, required=True)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0)
    peers = parser.add_mutually_exclusive_group()
    peers.add_argument("--kimiyoung", metavar="DIR",
                       help="time kimiyoung's MemTransformerLM from this pytorch/ folder")
    peers.add_argument("--nvidia", metavar="DIR",
                       help="time NVIDIA's MemTransformerLM from this Transformer-XL/pytorch/ "
                            "folder of DeepLearningExamples")
    parser.add_argument("--prepared-data", action="store_true",
                        help="segments of the config's prepared training split instead of "
                             "random tokens (Transformer-XL)")
    args = parser.parse_args()

    with open(args.config) as f:
        config = yaml.safe_load(f)
    train = config["train"]
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(train["seed"])
    batch, tgt_len = train["batch_size"], train["tgt_len"]
    cuda = train["device"] != "cpu" and torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    family = {"transformer_xl": transfo_xl_step, "xlnet": xlnet_step}[config["model"]["type"]]
    if args.kimiyoung:
        family = kimiyoung_step(args.kimiyoung)
    elif args.nvidia:
        family = nvidia_step(args.nvidia)
    if args.prepared_data:
        if config["model"]["type"] != "transformer_xl":
            parser.error("--prepared-data: Transformer-XL configs only")
        data = config["data"]
        segments = PreparedSegments(os.path.join(data["dir"], data["train"]), batch, tgt_len,
                                    device)
    else:
        segments = RandomSegments(args.n_token, batch, tgt_len, device)
    model, forward = family(config, segments, args.n_token, batch, tgt_len, device)
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=train["lr"])

    def step():
        optimizer.zero_grad()
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=train["bf16"]):
            loss = forward()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), train["clip"])
        optimizer.step()

    def synchronize():
        if cuda:
            torch.cuda.synchronize()

    for _ in range(args.warmup):
        step()
    synchronize()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    synchronize()
    seconds = time.perf_counter() - start
    peak = (torch.cuda.max_memory_allocated() if cuda
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    print(json.dumps({
        "mode": "kimiyoung_train" if args.kimiyoung else "nvidia_train" if args.nvidia
        else "hf_train",
        "input_tokens_per_s": args.steps * batch * tgt_len / seconds,
        "ms_per_iteration": 1000 * seconds / args.steps,
        "threads": torch.get_num_threads(),
        "device": device.type,
        "bf16": train["bf16"],
        "peak_memory_mib": peak / 2**20,
    }))


if __name__ == "__main__":
    main()
