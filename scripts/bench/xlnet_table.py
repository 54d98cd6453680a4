#!/usr/bin/env python3
"""The tables of docs/benchmarks.md's "Does XLNet pretraining pay?" from the runs that
scripts/bench/xlnet_pretraining.sh made: pretraining against the unigram guess of its targets
(NSMC's validation and test splits, Korean text from outside NSMC), then NSMC test accuracy by
start and label count (mean and range over the seeds), with the bag-of-pieces baseline beside
them, then the diagnosis of mini_ko_cpu.yaml.

  scripts/bench/xlnet_table.py [DIR]      (default: runs/pays)
"""
import glob
import json
import os
import re
import statistics
import sys


def records(run):
    with open(os.path.join(run, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f if line.endswith("\n")]


def last(run, predicate):
    found = [r for r in records(run) if predicate(r)]
    return found[-1] if found else None


def spread(values, digits=2, scale=1.0):
    """mean (min-max, n) of the values."""
    if not values:
        return "-"
    v = [x * scale for x in values]
    if len(v) == 1:
        return f"{v[0]:.{digits}f} (n 1)"
    return f"{statistics.mean(v):.{digits}f} ({min(v):.{digits}f}-{max(v):.{digits}f}, n {len(v)})"


def runs(root, pattern):
    """The run folders (not their .out and .err logs) under root matching pattern."""
    return sorted(p for p in glob.glob(os.path.join(root, pattern)) if os.path.isdir(p))


def pretraining(root, pattern):
    rows = []
    for run in runs(root, pattern):
        # The whole validation split (xl-eval), else training's last validation.
        valid = (last(run, lambda r: r.get("split") == "valid" and "mode" in r)
                 or last(run, lambda r: r.get("split") == "valid" and "unigram_loss" in r))
        test = last(run, lambda r: r.get("split") == "test" and "mode" in r)
        outside = last(run, lambda r: r.get("split", "").endswith("outside_ko.txt"))
        rows.append((os.path.basename(run), valid, test, outside))
    if not rows:
        return
    print("| pretraining | step | valid loss | unigram | below unigram | test loss | unigram "
          "| nats/char (unigram) | outside NSMC (unigram) |")
    print("|---|---|---|---|---|---|---|---|---|")
    gaps = {}
    for name, valid, test, outside in rows:
        cells = [name, str(valid["step"]) if valid else "-"]
        if valid:
            gap = valid["unigram_loss"] - valid["loss"]
            gaps.setdefault(re.sub(r"_s\d+$", "", name), []).append(gap)
            cells += [f"{valid['loss']:.3f}", f"{valid['unigram_loss']:.3f}", f"{gap:.3f}"]
        else:
            cells += ["-"] * 3
        if test and "unigram_loss" in test:
            cells += [f"{test['loss']:.3f}", f"{test['unigram_loss']:.3f}",
                      f"{test['loss_per_char']:.3f} ({test['unigram_loss_per_char']:.3f})"]
        else:
            cells += ["-"] * 3
        cells.append(f"{outside['loss']:.3f} ({outside['unigram_loss']:.3f})" if outside else "-")
        print("| " + " | ".join(cells) + " |")
    print()
    for name, values in gaps.items():
        print(f"{name}: validation loss below the unigram guess, nats: {spread(values, 3)}")
    print()


def accuracy(run):
    test = last(run, lambda r: r.get("split") == "test" and "mode" in r and "acc/cls" in r)
    return test["acc/cls"] if test else None


def finetuning(root, kind):
    results = {}
    for run in runs(root, f"{kind}_*"):
        match = re.fullmatch(rf"{kind}_(.+)_(\w+?)_s(\d+)", os.path.basename(run))
        if not match:
            continue
        acc = accuracy(run)
        if acc is not None:
            results.setdefault((match.group(1), match.group(2)), []).append(acc)
    if not results:
        return
    starts = sorted({s for s, _ in results}, key=lambda s: (s != "random", s))
    labels = sorted({n for _, n in results}, key=lambda n: (n == "all", int(n) if n.isdigit() else 0))
    baseline = {}
    path = os.path.join(root, "bag_of_pieces.json")
    if os.path.exists(path):
        with open(path) as f:
            for r in json.load(f)["records"]:
                baseline["all" if r["all"] else str(r["examples"])] = r["test_acc"]
    print(f"| {kind}: NSMC test accuracy, % | " + " | ".join(f"{n} labels" for n in labels) + " |")
    print("|---|" + "---|" * len(labels))
    for start in starts:
        print(f"| {start} | " + " | ".join(spread(results.get((start, n), []), 2, 100)
                                          for n in labels) + " |")
    if baseline:
        print("| bag of pieces (no model) | " + " | ".join(
            f"{100 * baseline[n]:.2f}" if n in baseline else "-" for n in labels) + " |")
    print()


def diagnosis(root):
    """Why mini_ko_cpu.yaml did not pay: the fine-tunings and probes of the diagnosis stage."""
    rows = [(os.path.basename(run)[len("diag_"):], accuracy(run))
            for run in runs(root, "diag_lr*") + runs(root, "diag_probe_*")]
    rows = [(name, acc) for name, acc in rows if acc is not None]
    if not rows:
        return
    print("| diagnosis: NSMC test accuracy, % | |")
    print("|---|---|")
    for name, acc in rows:
        print(f"| {name} | {100 * acc:.2f} |")
    print()


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "runs/pays"
    if not os.path.isdir(root):
        print(f"xlnet_table: no folder {root}", file=sys.stderr)
        sys.exit(2)
    pretraining(root, "pretrain_*")
    finetuning(root, "cls")
    finetuning(root, "probe")
    pretraining(root, "diag_mini_ko_cpu_*")
    diagnosis(root)


if __name__ == "__main__":
    main()
