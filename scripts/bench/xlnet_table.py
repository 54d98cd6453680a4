#!/usr/bin/env python3
"""The tables of docs/benchmarks.md's "Does XLNet pretraining pay?" from the runs that
scripts/bench/xlnet_pretraining.sh made: pretraining against the unigram guess of its targets,
then NSMC test accuracy by start and label count (mean and range over the seeds), with the
bag-of-pieces baseline beside them.

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


def pretraining(root):
    rows = []
    for run in sorted(glob.glob(os.path.join(root, "pretrain_*"))):
        # The whole validation split (xl-eval), else training's last validation.
        valid = (last(run, lambda r: r.get("split") == "valid" and "mode" in r)
                 or last(run, lambda r: r.get("split") == "valid" and "unigram_loss" in r))
        test = last(run, lambda r: r.get("split") == "test" and "mode" in r)
        start = [r for r in records(run) if r.get("event") == "start"]
        rows.append((os.path.basename(run), valid, test, start))
    if not rows:
        return
    print("| pretraining | step | valid loss | unigram | below unigram | test loss | unigram "
          "| nats/char (unigram) |")
    print("|---|---|---|---|---|---|---|---|")
    gaps = {}
    for name, valid, test, _ in rows:
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
    for run in glob.glob(os.path.join(root, f"{kind}_*")):
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


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "runs/pays"
    if not os.path.isdir(root):
        print(f"xlnet_table: no folder {root}", file=sys.stderr)
        sys.exit(2)
    pretraining(root)
    finetuning(root, "cls")
    finetuning(root, "probe")


if __name__ == "__main__":
    main()
