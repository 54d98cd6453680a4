#!/usr/bin/env python3
"""Scoring many short documents, and one short string in process: xl against Hugging Face.

Documents: the sentences of WikiText-2's test split, then of its validation split (their
paragraphs cut after " . "), the first --documents of them, each scored on its own (its memory from its own start) with a trained
Transformer-XL run: xl by `xl-eval --documents` (--sessions sessions, eval.batch_size documents
side by side), Hugging Face's TransfoXLLMHeadModel on the run's `xl-export` by the same recipe
written in Python (documents sorted by length, --batch of them side by side, padded, segments of
eval.tgt_len with the memory of eval.mem_len carried, no_grad, the log-probability of every
token but the first). Both on --threads threads; the rounds alternate, so that a slow spell of a
shared machine hits both. Prints documents per second for each and the ratio, and the largest
difference between the two losses of a document (they must agree within 1e-4). Hugging Face gives
every position's log-probability through its whole adaptive-softmax distribution (labels=None);
its labels path, which computes the targets' alone but shifts them inside each call (a
segment's last target dropped: other numbers), is timed too, for its speed.

In process: one short string scored --repeat times by one xl::Model (examples/time_score, built
against an install of the build) and by Hugging Face's forward on the same ids, the mean time
per call.

  scripts/bench/score_documents.py runs/wt2_small [--documents 10000] [--threads 2] [--json F]
"""
import argparse
import json
import lzma
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("XL_BUILD_DIR", ROOT / "build")).resolve()
SHORT = "the film was released in the united states , and critics praised its music ."


def documents(n):
    """The first n sentences of WikiText-2's test paragraphs, then its validation paragraphs'
    ("=" headings left out)."""
    out = []
    for split in ("test", "valid"):
        text = lzma.open(ROOT / f"data/wikitext-2/wiki.{split}.tokens.xz", "rt", encoding="utf-8")
        out += sentences(text.read())
    if len(out) < n:
        sys.exit(f"WikiText-2's test and validation splits hold {len(out)} sentences, fewer than {n}")
    return out[:n]


def sentences(text):
    """The sentences of a WikiText split's paragraphs, each ending in " ."."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("="):
            continue
        for sentence in line.split(" . "):
            if len(sentence.split()) >= 2:
                out.append(sentence.strip() + " .")
    return out


def evaluation(run):
    """The run's evaluation lengths, as xl-eval resolves them."""
    config = yaml.safe_load((pathlib.Path(run) / "config.yaml").read_text())
    model, ev = config["model"]["transformer_xl"], config["eval"]
    pick = lambda key: model[key] if ev.get(key) is None else ev[key]
    return {"tgt_len": ev.get("tgt_len") or config["train"]["tgt_len"],
            "mem_len": pick("mem_len"), "clamp_len": pick("clamp_len"),
            "same_length": pick("same_length"), "batch": ev["batch_size"]}


class HuggingFace:
    """The exported run in TransfoXLLMHeadModel, scoring as xl-eval does."""

    def __init__(self, exported, lengths, threads):
        import torch
        from transformers import TransfoXLLMHeadModel
        torch.set_num_threads(threads)
        self.torch = torch
        self.model = TransfoXLLMHeadModel.from_pretrained(exported).eval()
        self.model.transformer.reset_memory_length(lengths["mem_len"])
        self.model.transformer.same_length = lengths["same_length"]
        self.model.transformer.clamp_len = lengths["clamp_len"]
        self.tgt_len = lengths["tgt_len"]
        # xl's vocab.txt: a header line, then one token a line.
        tokens = (pathlib.Path(exported) / "vocab.txt").read_text(encoding="utf-8").splitlines()[1:]
        self.ids = {t: i for i, t in enumerate(tokens)}

    def encode(self, text):
        """As xl reads a one-line text: its words, then <eos>; <unk> for a word it lacks."""
        unk = self.ids["<unk>"]
        return [self.ids.get(w, unk) for w in text.split()] + [self.ids["<eos>"]]

    def score(self, batch_of_ids):
        """Each row's summed log-probability and count, the memory carried across segments."""
        torch = self.torch
        longest = max(len(r) for r in batch_of_ids)
        ids = torch.zeros(len(batch_of_ids), longest, dtype=torch.long)
        lengths = torch.tensor([len(r) for r in batch_of_ids])
        for b, row in enumerate(batch_of_ids):
            ids[b, :len(row)] = torch.tensor(row)
        sums = torch.zeros(len(batch_of_ids), dtype=torch.float64)
        counts = torch.zeros(len(batch_of_ids), dtype=torch.long)
        # An empty memory: without one, TransfoXLModel starts with mem_len states of zeros, which
        # every position of the first segments attends to.
        config = self.model.config
        mems = [torch.zeros(0, len(batch_of_ids), config.d_model) for _ in range(config.n_layer)]
        with torch.no_grad():
            for i in range(0, longest - 1, self.tgt_len):
                s = min(self.tgt_len, longest - 1 - i)
                out = self.model(input_ids=ids[:, i:i + s], mems=mems)
                mems = out.mems
                logp = out.prediction_scores.gather(2, ids[:, i + 1:i + 1 + s].unsqueeze(2))
                counted = (torch.arange(i + 1, i + 1 + s).unsqueeze(0) < lengths.unsqueeze(1))
                sums += (logp.squeeze(2).double() * counted).sum(1)
                counts += counted.sum(1)
        return sums, counts

    def with_labels(self, batch_of_ids):
        """The forwards of score() with labels: the adaptive softmax of the targets alone, the
        speed of Hugging Face's cheaper path (which shifts its labels inside each call, so it
        drops each segment's last target: not the same numbers)."""
        torch = self.torch
        longest = max(len(r) for r in batch_of_ids)
        ids = torch.zeros(len(batch_of_ids), longest, dtype=torch.long)
        for b, row in enumerate(batch_of_ids):
            ids[b, :len(row)] = torch.tensor(row)
        config = self.model.config
        mems = [torch.zeros(0, len(batch_of_ids), config.d_model) for _ in range(config.n_layer)]
        with torch.no_grad():
            for i in range(0, longest - 1, self.tgt_len):
                s = min(self.tgt_len, longest - 1 - i)
                labels = ids[:, i:i + s] if s > 1 else None  # HF refuses labels of one position
                mems = self.model(input_ids=ids[:, i:i + s], labels=labels, mems=mems).mems

    def documents(self, texts, batch, labels=False):
        """Per document (nll, tokens), longest first in groups of `batch`; and the seconds."""
        start = time.perf_counter()
        encoded = [self.encode(t) for t in texts]
        order = sorted(range(len(texts)), key=lambda i: -len(encoded[i]))
        out = [None] * len(texts)
        for g in range(0, len(order), batch):
            group = order[g:g + batch]
            if labels:
                self.with_labels([encoded[i] for i in group])
                continue
            sums, counts = self.score([encoded[i] for i in group])
            for r, i in enumerate(group):
                out[i] = (-sums[r].item(), counts[r].item())
        return out, time.perf_counter() - start

    def one(self, text, repeat, labels=False):
        """Seconds per forward of one short string, and its loss (with labels: none)."""
        ids = self.encode(text)
        call = (lambda: self.with_labels([ids])) if labels else (lambda: self.score([ids]))
        call()
        start = time.perf_counter()
        for _ in range(repeat):
            out = call()
        seconds = (time.perf_counter() - start) / repeat
        return seconds, None if labels else -out[0][0].item() / out[1][0].item()


def run(args, **kwargs):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(map(str, args))}\n{r.stdout}{r.stderr}")
    return r


def example_program(work, name):
    """examples/<name>, built against an install of the build as a user's project is (the
    prefix alone: it finds the LibTorch xl was built with)."""
    prefix = work / "xl"
    if not prefix.exists():
        run(["cmake", "--install", BUILD, "--prefix", prefix])
        run(["cmake", "-S", ROOT / "examples", "-B", work / "examples", "-G", "Ninja",
             "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={prefix}"])
    run(["cmake", "--build", work / "examples", "--target", name])
    return work / "examples" / name


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", help="a trained Transformer-XL run (word data)")
    parser.add_argument("--documents", type=int, default=10000)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--batch", type=int, help="documents side by side (default: the run's "
                        "eval.batch_size)")
    parser.add_argument("--sessions", type=int, help="xl-eval --sessions, each on --threads / "
                        "--sessions threads (default: one session a thread, the fastest on a CPU "
                        "for short documents)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=200, help="calls of the short string")
    parser.add_argument("--json", help="also write the record to this file")
    args = parser.parse_args()
    lengths = evaluation(args.run)
    batch = args.batch or lengths["batch"]
    sessions = args.sessions or args.threads
    per_session = max(1, args.threads // sessions)
    texts = documents(args.documents)
    with tempfile.TemporaryDirectory(prefix="xl-bench-documents-") as tmp:
        work = pathlib.Path(tmp)
        (work / "docs.jsonl").write_text(
            "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)))
        run([BUILD / "bin/xl-export", "--run", args.run, "--out", work / "hf"])
        hf = HuggingFace(work / "hf", lengths, args.threads)
        timer = example_program(work, "time_score")
        xl_rates, hf_rates, hf_labels_rates, xl_one, hf_one, hf_labels_one = [], [], [], [], [], []
        for r in range(args.rounds):
            out = work / f"xl{r}.jsonl"
            said = run([BUILD / "bin/xl-eval", "--run", args.run, "--documents", work / "docs.jsonl",
                        "--pretokenized", "--out", out, "--sessions", sessions, "--set",
                        f"train.threads={per_session}", "--set", f"eval.batch_size={batch}"])
            seconds = float(said.stdout.split(" s, ")[0].rsplit("| ", 1)[1])
            xl_rates.append(len(texts) / seconds)
            theirs, hf_seconds = hf.documents(texts, batch)
            hf_rates.append(len(texts) / hf_seconds)
            hf_labels_rates.append(len(texts) / hf.documents(texts, batch, labels=True)[1])
            ours = [json.loads(line) for line in out.read_text().splitlines()]
            worst = max(abs(o["loss"] - n / c) for o, (n, c) in zip(ours, theirs) if c > 0)
            if any(o["tokens"] != c for o, (_, c) in zip(ours, theirs)):
                sys.exit("xl and Hugging Face scored other tokens")
            one = run([timer, args.run, SHORT, args.repeat, args.threads]).stdout.split()
            xl_one.append(float(one[1]))
            hf_seconds_one, hf_loss = hf.one(SHORT, args.repeat)
            hf_one.append(hf_seconds_one)
            hf_labels_one.append(hf.one(SHORT, args.repeat, labels=True)[0])
            print(f"round {r + 1}: documents {xl_rates[-1]:.1f} doc/s (xl) {hf_rates[-1]:.1f} "
                  f"(Hugging Face; {hf_labels_rates[-1]:.1f} with labels), largest loss "
                  f"difference {worst:.2g}; one string "
                  f"{xl_one[-1] * 1e3:.2f} ms (xl) {hf_one[-1] * 1e3:.2f} ms (Hugging Face; "
                  f"{hf_labels_one[-1] * 1e3:.2f} with labels), "
                  f"losses {float(one[3]):.6f} {hf_loss:.6f}", flush=True)
            if worst > 1e-4 or abs(float(one[3]) - hf_loss) > 1e-4:
                sys.exit("the losses differ by more than 1e-4")
    record = {
        "documents": len(texts), "batch": batch, "sessions": sessions,
        "threads": args.threads, "rounds": args.rounds, **lengths,
        "xl_docs_per_s": statistics.median(xl_rates), "hf_docs_per_s": statistics.median(hf_rates),
        "hf_labels_docs_per_s": statistics.median(hf_labels_rates),
        "xl_ms_per_string": statistics.median(xl_one) * 1e3,
        "hf_ms_per_string": statistics.median(hf_one) * 1e3,
        "hf_labels_ms_per_string": statistics.median(hf_labels_one) * 1e3}
    record["documents_ratio"] = record["xl_docs_per_s"] / record["hf_docs_per_s"]
    record["documents_ratio_labels"] = record["xl_docs_per_s"] / record["hf_labels_docs_per_s"]
    record["string_ratio"] = record["hf_ms_per_string"] / record["xl_ms_per_string"]
    record["string_ratio_labels"] = record["hf_labels_ms_per_string"] / record["xl_ms_per_string"]
    print(json.dumps(record))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
