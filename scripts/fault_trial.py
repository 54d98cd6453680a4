#!/usr/bin/env python3
"""Fault trial: random kills and random corruptions against a built xl (build/bin).

  python3 scripts/fault_trial.py [--kills N] [--corruptions N] [--seed S] [--steps N]

Kills: a reference run of configs/txl/tiny.yaml (constant learning rate, --steps steps) on
WikiText-2, then N runs of the same config SIGKILLed after a random delay in [0, the reference's
duration], each resumed (or started again when no checkpoint was written yet). A kill survives
when the resumed run logs, for every step after its checkpoint, exactly the reference's loss,
and ends with the reference's validation loss.

Corruptions: N times, one random byte of one file of the reference run XOR-ed with a random
non-zero value (last.pt, the test split's token file or the vocabulary; put back afterwards). A
corruption is caught when xl-eval exits 2, reports no perplexity, and its error names the file.

Prints one line per trial and the counts; exits 1 when any kill or corruption was not survived
or not caught (the work folder is then kept).
"""
import argparse
import json
import pathlib
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = ROOT / "build" / "bin"
CONFIG = ROOT / "configs" / "txl" / "tiny.yaml"


def run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, **kwargs)


def losses(run_dir, split):
    """step -> loss of the last record of each step: a resumed run's records come later."""
    out = {}
    text = (run_dir / "metrics.jsonl").read_text()
    for line in text[: text.rfind("\n") + 1].splitlines():
        record = json.loads(line)
        if record.get("split") == split:
            out[record["step"]] = record["loss"]
    return out


def checkpoint_step(run_dir):
    """The step the last resume started from (its `resumed` record)."""
    step = 0
    text = (run_dir / "metrics.jsonl").read_text()
    for line in text[: text.rfind("\n") + 1].splitlines():
        record = json.loads(line)
        if record.get("event") == "resumed":
            step = record["step"]
    return step


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--corruptions", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = pathlib.Path(tempfile.mkdtemp(prefix="xl-fault-trial-"))
    data = work / "data"
    text = work / "text"
    text.mkdir()
    for split, name in [("train", "valid"), ("valid", "test")]:
        with open(text / f"{split}.txt", "wb") as f:
            f.write(
                subprocess.check_output(
                    ["xz", "-dc", ROOT / f"data/wikitext-2/wiki.{name}.tokens.xz"]
                )
            )
    prep = run(
        [BIN / "xl-prep", "--format", "word", "--train", text / "train.txt",
         "--valid", text / "valid.txt", "--test", text / "valid.txt", "--out", data]
    )
    if prep.returncode != 0:
        sys.exit("xl-prep failed:\n" + prep.stdout + prep.stderr)

    def train(run_dir, *extra):
        return [BIN / "xl-train", "--config", CONFIG, "--set", f"data.dir={data}",
                "--set", f"run.dir={run_dir}", "--set", "train.scheduler=constant",
                "--set", f"train.max_step={args.steps}", *extra]

    ref = work / "ref"
    start = time.monotonic()
    r = run(train(ref))
    duration = time.monotonic() - start
    if r.returncode != 0:
        sys.exit("reference run failed:\n" + r.stderr)
    ref_train, ref_valid = losses(ref, "train"), losses(ref, "valid")
    print(f"reference: {args.steps} steps in {duration:.1f} s; work folder {work}")

    failures = 0
    survived = 0
    for i in range(args.kills):
        cut = work / f"kill-{i}"
        delay = rng.uniform(0, duration)
        process = subprocess.Popen(
            [str(a) for a in train(cut)], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
        has_checkpoint = (cut / "checkpoints" / "last.pt").exists()
        resumed = run(train(cut, "--resume") if has_checkpoint else train(cut))
        saved = checkpoint_step(cut) if has_checkpoint else 0
        ok = resumed.returncode == 0
        if ok:
            got_train, got_valid = losses(cut, "train"), losses(cut, "valid")
            ok = all(got_train.get(s) == ref_train[s] for s in ref_train if s > saved)
            ok = ok and got_valid.get(args.steps) == ref_valid.get(args.steps)
        where = f"killed after {delay:.2f} s, resumed from step {saved}"
        if ok:
            survived += 1
            shutil.rmtree(cut)
            print(f"kill {i}: {where}: exact")
        else:
            failures += 1
            print(f"kill {i}: {where}: NOT EXACT (exit {resumed.returncode}) {resumed.stderr[-400:]}")

    targets = [ref / "checkpoints" / "last.pt", data / "test.bin", data / "vocab.txt"]
    caught = 0
    counts = {t.name: [0, 0] for t in targets}
    for i in range(args.corruptions):
        # In place, put back after each trial: the checkpoint refuses another data.dir.
        target = rng.choice(targets)
        whole = target.read_bytes()
        raw = bytearray(whole)
        offset = rng.randrange(len(raw))
        mask = rng.randrange(1, 256)
        raw[offset] ^= mask
        target.write_bytes(bytes(raw))
        r = run([BIN / "xl-eval", "--run", ref, "--checkpoint", "last", "--max-steps", "2"])
        target.write_bytes(whole)
        message = (r.stderr.strip().splitlines() or [""])[-1]
        ok = (r.returncode == 2 and message.startswith("error:") and target.name in message
              and " ppl " not in r.stdout + r.stderr)
        counts[target.name][0] += 1
        where = f"corruption {i}: {target.name} byte {offset} ^ {mask}"
        if ok:
            caught += 1
            counts[target.name][1] += 1
            print(f"{where}: caught: {message[:200]}")
        else:
            failures += 1
            print(f"{where}: NOT CAUGHT (exit {r.returncode}): {message[:400]}")

    print(f"kills: {survived} of {args.kills} resumed exactly")
    print(f"corruptions: {caught} of {args.corruptions} caught (" + ", ".join(
        f"{name} {c[1]} of {c[0]}" for name, c in counts.items()) + ")")
    if failures == 0:
        shutil.rmtree(work)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
