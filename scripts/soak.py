#!/usr/bin/env python3
"""Soak test of the training loop: resident memory and open descriptors over a long run.

  python3 scripts/soak.py [--minutes 30] [--resumes 10] [--threads 2] [--samples CSV] [--keep]

Trains configs/transformer_xl/wt2_small.yaml on the bundled WikiText-2 (scripts/getdata.sh wikitext-2
first) in a new folder, for --minutes in all: one uninterrupted process for half the time, then
--resumes processes, each stopped by SIGINT (a checkpoint, as a scheduler's preemption) and
resumed. Every second it samples the trainer's resident memory (VmRSS) and open file
descriptors (/proc/PID/fd). It fails (exit 1) when
  - in the long process, the memory after its first validation grows by more than 2% (the
    largest sample of its last quarter against the first sample after that validation): the
    resident memory sampled, or the memory the CPU allocators hold as xl-train logs it in
    its training records (cpu_allocators_mib); or
    the descriptors it holds settled (the most frequent count of a quarter: a save holds one
    more for a moment) differ between the first and last quarter after it;
  - across the resumes, the settled memory of a process (the median of its second half) grows
    by more than 2% from the first resumed process to the last, or the memory the allocators
    hold (the median of its training records) does, or the descriptors differ.
Prints a table of the samples per process and the long process's memory every minute;
--samples writes every sample (process, second, MiB, descriptors). docs/integrity.md records
a run.
"""
import argparse
import json
import os
import pathlib
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = ROOT / os.environ.get("XL_BUILD_DIR", "build") / "bin"
DATA = ROOT / "data" / "prepared" / "wikitext-2"
LIMIT = 0.02


def sample(pid):
    """(resident MiB, open descriptors) of `pid`, or None once it is gone."""
    try:
        status = pathlib.Path(f"/proc/{pid}/status").read_text()
        rss = next(int(line.split()[1]) for line in status.splitlines()
                   if line.startswith("VmRSS:")) / 1024.0
        return rss, len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError, StopIteration):
        return None


def records(metrics):
    """The whole records of a run's metrics.jsonl (a line a killed write tore is left out)."""
    if not metrics.exists():
        return []
    return [json.loads(line) for line in metrics.read_text().splitlines()
            if line.startswith("{") and line.endswith("}")]


def validated(metrics):
    """Whether the run's metrics hold a validation record yet."""
    return any(record.get("split") == "valid" for record in records(metrics))


def train(run, seconds, threads, resume):
    """One trainer process for `seconds` (then SIGINT): its samples, and those taken after the
    run's first validation."""
    command = [BIN / "xl-train", "--config", ROOT / "configs/transformer_xl/wt2_small.yaml",
               "--set", f"data.dir={DATA}", "--set", f"run.dir={run}",
               "--set", "train.max_step=1000000",
               "--set", f"train.threads={threads}"] + (["--resume"] if resume else [])
    proc = subprocess.Popen([str(c) for c in command], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    samples, after = [], []
    seen = resume and validated(run / "metrics.jsonl")
    end = time.time() + seconds
    while time.time() < end and proc.poll() is None:
        time.sleep(1.0)
        s = sample(proc.pid)
        if s is None:
            break
        samples.append(s)
        seen = seen or validated(run / "metrics.jsonl")
        if seen:
            after.append(s)
    proc.send_signal(signal.SIGINT)
    if proc.wait() != 0 and proc.returncode != 128 + signal.SIGINT:
        sys.exit(f"soak: xl-train exited {proc.returncode} (run folder: {run})")
    return samples, after


def grew(first, last):
    return (last - first) / first


def held_by_process(metrics):
    """Each process's training records (a "start" event begins one): the MiB the CPU
    allocators hold, as xl-train logged them."""
    held = []
    for record in records(metrics):
        if record.get("event") == "start":
            held.append([])
        elif record.get("split") == "train" and "cpu_allocators_mib" in record and held:
            held[-1].append(record["cpu_allocators_mib"])
    return held


def held_after_validation(metrics):
    """The long process's training records after its first validation (those before the
    first resume): (resident MiB, MiB the CPU allocators hold) of each, as xl-train logged
    them."""
    held, validated_yet = [], False
    for record in records(metrics):
        if record.get("event") == "resumed":
            break
        validated_yet = validated_yet or record.get("split") == "valid"
        if validated_yet and record.get("split") == "train" and "cpu_allocators_mib" in record:
            held.append((record["resident_mib"], record["cpu_allocators_mib"]))
    return held


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--resumes", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--samples", type=pathlib.Path, help="write every sample to this CSV")
    parser.add_argument("--keep", action="store_true", help="keep the run folder")
    args = parser.parse_args()
    if not (DATA / "train.bin").exists():
        sys.exit(f"soak: {DATA} is not prepared: run scripts/getdata.sh wikitext-2")
    work = pathlib.Path(tempfile.mkdtemp(prefix="xl-soak-"))
    run = work / "run"
    total = args.minutes * 60.0
    long_samples, long_after = train(run, total / 2, args.threads, resume=False)
    resumed = [train(run, total / 2 / args.resumes, args.threads, resume=True)[0]
               for _ in range(args.resumes)]
    failures = []
    print("| process | seconds | RSS first / last / max MiB | descriptors first / last |")
    print("|---|---:|---|---|")
    for name, samples in [("long", long_samples)] + [(f"resume {i + 1}", s)
                                                     for i, s in enumerate(resumed)]:
        rss = [r for r, _ in samples]
        fds = [f for _, f in samples]
        print(f"| {name} | {len(samples)} | {rss[0]:.0f} / {rss[-1]:.0f} / {max(rss):.0f} | "
              f"{fds[0]} / {fds[-1]} |")
    print("long process, MiB each minute: " +
          " ".join(f"{rss:.0f}" for rss, _ in long_samples[::60]))
    if args.samples:
        with args.samples.open("w") as out:
            out.write("process,second,rss_mib,descriptors\n")
            for name, samples in [("long", long_samples)] + [
                    (f"resume {i + 1}", s) for i, s in enumerate(resumed)]:
                out.writelines(f"{name},{t + 1},{rss:.1f},{fds}\n"
                               for t, (rss, fds) in enumerate(samples))
    if len(long_after) < 8:
        failures.append("the long process saw too few samples after its first validation")
    else:
        base = long_after[0][0]
        tail = max(r for r, _ in long_after[len(long_after) * 3 // 4:])
        quarter = len(long_after) // 4
        first_fds = statistics.mode(f for _, f in long_after[:quarter])
        last_fds = statistics.mode(f for _, f in long_after[-quarter:])
        print(f"long process after its first validation: {base:.0f} -> {tail:.0f} MiB "
              f"({100 * grew(base, tail):+.2f}%), descriptors held {first_fds} -> {last_fds} "
              f"(seen: {sorted({f for _, f in long_after})})")
        if grew(base, tail) > LIMIT:
            failures.append(f"memory grew {100 * grew(base, tail):.2f}% after the first "
                            "validation")
        if last_fds != first_fds:
            failures.append(f"descriptors held went from {first_fds} to {last_fds} after the "
                            "first validation")
    # What the allocators hold bounds the resident memory tensors can use: a resident set that
    # rises while it stays flat is touching pages the process already held, not growing.
    held = held_after_validation(run / "metrics.jsonl")
    if len(held) >= 4:
        base, tail = held[0][1], max(h for _, h in held[len(held) * 3 // 4:])
        print(f"long process after its first validation, as xl-train logged it: resident "
              f"{held[0][0]:.0f} -> {held[-1][0]:.0f} MiB, held by the CPU allocators "
              f"{base:.0f} -> {tail:.0f} MiB ({100 * grew(base, tail):+.2f}%), per record: " +
              " ".join(f"{h:.0f}" for _, h in held))
        if grew(base, tail) > LIMIT:
            failures.append(f"the memory the allocators hold grew {100 * grew(base, tail):.2f}% "
                            "after the first validation")
    else:
        failures.append("xl-train logged too few training records after its first validation")
    settled = [statistics.median(r for r, _ in s[len(s) // 2:]) for s in resumed if s]
    if len(settled) >= 2:
        print(f"settled memory of the resumed processes: {settled[0]:.0f} -> {settled[-1]:.0f} "
              f"MiB ({100 * grew(settled[0], settled[-1]):+.2f}%)")
        if grew(settled[0], settled[-1]) > LIMIT:
            failures.append(f"memory grew {100 * grew(settled[0], settled[-1]):.2f}% across "
                            "the resumes")
        medians = [statistics.median(h) for h in held_by_process(run / "metrics.jsonl")[1:] if h]
        if len(medians) >= 2:
            change = grew(medians[0], medians[-1])
            print(f"held by the CPU allocators in the resumed processes (medians): "
                  f"{medians[0]:.1f} -> {medians[-1]:.1f} MiB ({100 * change:+.2f}%): " +
                  " ".join(f"{h:.1f}" for h in medians))
            if change > LIMIT:
                failures.append(f"the memory the allocators hold grew {100 * change:.2f}% "
                                "across the resumes")
        if len({s[-1][1] for s in resumed if s}) > 1:
            failures.append("descriptors differ across the resumes")
    if args.keep:
        print(f"run folder kept: {run}")
    else:
        shutil.rmtree(work)
    for failure in failures:
        print(f"soak: {failure}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
