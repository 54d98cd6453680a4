#!/usr/bin/env python3
"""A program linking xl::xl against the command it mirrors, on a loaded machine.

Installs xl into a temporary prefix, builds examples/ against it, trains a small run (or takes
--run), and times `score_text RUN FILE` beside `xl-eval --run RUN --file FILE` while --load busy
processes compete for the cores: the program started as docs/library.md says
(GOMP_SPINCOUNT=10000 in its environment), and without it. Each is run --repeat times; the
table gives the median wall time and the ratio to the command (docs/benchmarks/inference.md).

  python3 scripts/bench/library_speed.py [--run R] [--threads 2] [--load 2] [--repeat 5]
"""
import argparse
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from score_documents import BUILD, ROOT, example_program, run

BIN = BUILD / "bin"


def train_run(work, threads):
    text = work / "text"
    text.mkdir()
    for split, name in [("train", "train"), ("test", "test")]:
        (text / f"{split}.txt").write_bytes(subprocess.check_output(
            ["xz", "-dc", ROOT / f"data/wikitext-2/wiki.{name}.tokens.xz"]))
    run([BIN / "xl-prep", "--train", text / "train.txt", "--valid", text / "test.txt",
         "--test", text / "test.txt", "--out", work / "data"])
    run([BIN / "xl-train", "--config", ROOT / "configs/transformer_xl/wt2_small.yaml", "--set",
         f"data.dir={work / 'data'}", "--set", f"run.dir={work / 'run'}", "--set",
         "train.max_step=20", "--set", "train.eval_interval=20", "--set",
         "train.max_eval_steps=1", "--set", "train.warmup_step=2", "--set",
         f"train.threads={threads}"])
    return work / "run", text / "test.txt"


def timed(argv, env, repeat):
    seconds = []
    for _ in range(repeat):
        start = time.monotonic()
        run(argv, env=env)
        seconds.append(time.monotonic() - start)
    return statistics.median(seconds), min(seconds), max(seconds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", type=pathlib.Path, help="a trained run (default: train one)")
    parser.add_argument("--file", type=pathlib.Path, help="the text (default: WikiText-2 test)")
    parser.add_argument("--threads", type=int, default=2, help="the run's train.threads")
    parser.add_argument("--load", type=int, default=2, help="busy processes beside it")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="xl-library-speed-"))
    try:
        score_text = example_program(work, "score_text")
        run_dir, text = (args.run, args.file) if args.run else train_run(work, args.threads)
        text = args.file or text
        base = {k: v for k, v in os.environ.items()
                if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
        variants = [
            ("xl-eval --file (the command)", [BIN / "xl-eval", "--run", run_dir, "--file", text],
             base),
            ("score_text, GOMP_SPINCOUNT=10000 (docs/library.md)",
             [score_text, run_dir, text], {**base, "GOMP_SPINCOUNT": "10000"}),
            ("score_text, libgomp's default", [score_text, run_dir, text], base),
        ]
        load = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(args.load)]
        try:
            rows = [(name, timed(argv, env, args.repeat)) for name, argv, env in variants]
        finally:
            for process in load:
                process.kill()
                process.wait()
        command = rows[0][1][0]
        print(f"{args.load} busy processes beside it, {args.repeat} runs each, median "
              f"(min to max):\n")
        print("| program | wall time (s) | against the command |")
        print("|---|---|---|")
        for name, (median, low, high) in rows:
            print(f"| {name} | {median:.2f} ({low:.2f} to {high:.2f}) | {median / command:.2f}x |")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
