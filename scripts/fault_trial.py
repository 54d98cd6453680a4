#!/usr/bin/env python3
"""Fault trial: random kills, failed writes, signals and corruptions against a built xl (build/bin).

  python3 scripts/fault_trial.py [--kills N] [--first-checkpoint-kills N] [--replacement-kills N]
      [--prep-kills N] [--export-kills N] [--rank-deadlines N] [--signals N]
      [--no-write-failures] [--corruptions N] [--seed S] [--steps N]

A reference run of configs/transformer_xl/tiny.yaml (constant learning rate, --steps steps) on WikiText-2,
then, each run continued with --auto-resume (what a scheduler or torchrun --max-restarts does):

- kills: SIGKILL after a random delay in [0, the reference's duration];
- first-checkpoint kills: SIGKILL the moment the first checkpoint's temporary file appears
  (polled, as a real crash would hit it), or a random few milliseconds later;
- replacement kills: SIGKILL the moment a replacement of any of the run's files (a
  checkpoint, the config) has its temporary file, the first one after a random delay;
- write failures: the run under `ulimit -n` (descriptors) or `ulimit -f` (file size) limits,
  which make a checkpoint or a record fail to be written, then continued without them;
- signals: SIGHUP after a random delay (the run checkpoints and stops; continued), and SIGUSR1
  (it checkpoints and goes on: its losses must be the reference's, with no resume).

A run survives when it then logs, for every step after the checkpoint it continued from,
exactly the reference's loss, and ends with the reference's validation loss.

Prep kills: `xl-prep --force` replacing a prepared folder with one of another vocabulary,
SIGKILLed after a random delay (or the moment its staging folder appears); the folder must then
hold the old files or the new ones, byte for byte, never a mix, and a second xl-prep must
complete it. Export kills: `xl-export --force` over an earlier export of another run, killed
the same ways: the folder is the earlier export or the new one, byte for byte (what Hugging
Face loads: config.json beside its own weights), and a second xl-export completes it. Rank
deadlines: two ranks of a data-parallel run (a new one, or one resumed) given different
--stop-at-step, or one none: both must refuse within 2 minutes, each in one error line naming
the flag, the run's files as they were; every third trial gives both the same step, which the
run must reach.

Corruptions: N times, one random byte of one file of the reference run XOR-ed with a random
non-zero value (last.pt, the test split's token file or the vocabulary; put back afterwards). A
corruption is caught when xl-eval exits 2, reports no perplexity, and its error names the file.

Prints one line per trial and the counts; exits 1 when any trial was not survived or not caught
(the work folder is then kept).
"""
import argparse
import json
import os
import pathlib
import random
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = ROOT / "build" / "bin"
CONFIG = ROOT / "configs" / "transformer_xl" / "tiny.yaml"


def run(args, **kwargs):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)


def records(run_dir):
    """The whole lines of the run's metrics.jsonl, parsed (a torn last line is left out)."""
    path = run_dir / "metrics.jsonl"
    text = path.read_text() if path.exists() else ""
    return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines()]


def losses(run_dir, split):
    """step -> loss of the last record of each step: a resumed run's records come later."""
    return {r["step"]: r["loss"] for r in records(run_dir) if r.get("split") == split}


def checkpoint_step(run_dir):
    """The step the last resume started from (its `resumed` record), 0 when none."""
    step = 0
    for record in records(run_dir):
        if record.get("event") == "resumed":
            step = record["step"]
    return step


def temporaries(folder):
    """The names of the temporary files an atomic write has open in `folder` and checkpoints/."""
    found = set()
    for where in (folder, folder / "checkpoints"):
        try:
            found.update(f"{where.name}/{n}" for n in os.listdir(where) if ".tmp." in n)
        except OSError:
            pass
    return found


def kill_at_temporary(process, folder, delay, extra_delay, only_checkpoints=False):
    """SIGKILLs `process` the moment a temporary file appears in `folder` (or its checkpoints/,
    with `only_checkpoints`) after `delay` seconds, then `extra_delay` seconds later; returns
    the temporary's name, or None when the run ended first."""
    time.sleep(delay)
    while process.poll() is None:
        found = sorted(t for t in temporaries(folder) if not only_checkpoints or "checkpoints/" in t)
        if found:
            if extra_delay:
                time.sleep(extra_delay)
            process.send_signal(signal.SIGKILL)
            process.wait()
            return found[0]
    return None


class Trial:
    """The reference run and the checks every trial shares."""

    def __init__(self, work, data, steps):
        self.work = work
        self.data = data
        self.steps = steps
        ref = work / "ref"
        start = time.monotonic()
        r = run(self.train(ref))
        self.duration = time.monotonic() - start
        if r.returncode != 0:
            sys.exit("reference run failed:\n" + r.stderr)
        self.ref = ref
        self.ref_train, self.ref_valid = losses(ref, "train"), losses(ref, "valid")
        self.failures = 0

    def train(self, run_dir, *extra):
        return [BIN / "xl-train", "--config", CONFIG, "--set", f"data.dir={self.data}",
                "--set", f"run.dir={run_dir}", "--set", "train.scheduler=constant",
                "--set", f"train.max_step={self.steps}", *extra]

    def start(self, run_dir, *extra):
        return subprocess.Popen([str(a) for a in self.train(run_dir, *extra)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def exact(self, run_dir, since):
        """Whether every step after `since` logged the reference's loss, and the last
        validation is the reference's."""
        got_train, got_valid = losses(run_dir, "train"), losses(run_dir, "valid")
        ok = all(got_train.get(s) == self.ref_train[s] for s in self.ref_train if s > since)
        return ok and got_valid.get(self.steps) == self.ref_valid.get(self.steps)

    def continued(self, run_dir, label, what):
        """Continues `run_dir` with --auto-resume and judges it; prints one line."""
        resumed = run(self.train(run_dir, "--auto-resume"))
        saved = checkpoint_step(run_dir)
        ok = resumed.returncode == 0 and self.exact(run_dir, saved)
        said = [line for line in resumed.stderr.splitlines() if "newest checkpoint" in line]
        where = f"{what}, continued from step {saved}" + (" (" + said[-1].split("] ")[-1][:120]
                                                          + ")" if said else "")
        return self.judge(run_dir, label, where, ok, resumed)

    def judge(self, run_dir, label, where, ok, result):
        if ok:
            shutil.rmtree(run_dir)
            print(f"{label}: {where}: exact")
        else:
            self.failures += 1
            print(f"{label}: {where}: NOT EXACT (exit {result.returncode}) {result.stderr[-400:]}")
        return ok


def random_kills(trial, rng, n):
    survived = 0
    for i in range(n):
        cut = trial.work / f"kill-{i}"
        delay = rng.uniform(0, trial.duration)
        process = trial.start(cut)
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
        survived += trial.continued(cut, f"kill {i}", f"killed after {delay:.2f} s")
    return survived


def temporary_kills(trial, rng, n, first_checkpoint):
    """Kills inside a file replacement: the first checkpoint's, or the first replacement of any
    of the run's files (a checkpoint, the config) after a random delay."""
    survived = missed = 0
    kind = "first-checkpoint" if first_checkpoint else "replacement"
    for i in range(n):
        cut = trial.work / f"{kind}-{i}"
        delay = 0 if first_checkpoint else rng.uniform(0, trial.duration)
        extra = rng.choice([0, 0, rng.uniform(0, 0.01)])
        process = trial.start(cut)
        name = kill_at_temporary(process, cut, delay, extra, only_checkpoints=first_checkpoint)
        if name is None:
            missed += 1
            shutil.rmtree(cut)
            print(f"{kind} kill {i}: no replacement after {delay:.2f} s (the run ended first)")
            continue
        survived += trial.continued(
            cut, f"{kind} kill {i}",
            f"killed at {name} after {delay:.2f} s (+{extra * 1000:.1f} ms)")
    return survived, missed


def write_failures(trial):
    """The run under descriptor and file-size limits, then continued without them."""
    # Descriptors: too few to read the data, to open the event file, to write best.pt, to read
    # it back for last.pt (the first checkpoint half written), and enough. File sizes: the
    # config, the first checkpoint (about 1 MB), none.
    limits = [("-n", n) for n in (5, 6, 7, 8, 9)] + [
        ("-f", blocks) for blocks in (1, 8, 256, 1024, 4096)]
    survived = 0
    for flag, value in limits:
        cut = trial.work / f"ulimit{flag}{value}"
        command = " ".join(shlex.quote(str(a)) for a in trial.train(cut))
        limited = run(["bash", "-c", f"ulimit {flag} {value} && exec {command}"])
        said = (limited.stderr.strip().splitlines() or [""])[-1][:100]
        survived += trial.continued(
            cut, f"ulimit {flag} {value}", f"exit {limited.returncode} ({said})")
    return survived, len(limits)


def signals(trial, rng, n):
    """SIGHUP: a checkpoint and a stop, then continued. SIGUSR1: a checkpoint, and training
    goes on to the reference's losses without a resume."""
    survived = 0
    for i in range(n):
        sig = signal.SIGHUP if i % 2 == 0 else signal.SIGUSR1
        cut = trial.work / f"signal-{i}"
        # After start-up: before it, the default action (SIGHUP ends a process) is all there is.
        delay = rng.uniform(0.5, 1.0) * trial.duration
        process = subprocess.Popen([str(a) for a in trial.train(cut)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        process.send_signal(sig)
        _, stderr = process.communicate()
        label = f"{sig.name} {i}"
        where = f"after {delay:.2f} s, exit {process.returncode}"
        if sig == signal.SIGHUP:
            stopped = process.returncode in (0, 128 + signal.SIGHUP)
            if not stopped:
                trial.failures += 1
                print(f"{label}: {where}: NOT STOPPED CLEANLY {stderr[-300:]}")
                continue
            survived += trial.continued(cut, label, where)
        else:
            ok = process.returncode == 0 and trial.exact(cut, 0)
            # No checkpoint at the signal when it came after the last step.
            asked = "SIGUSR1: checkpointed step" in stderr
            where += ", a checkpoint at the signal" if asked else ", none (after the last step)"
            result = subprocess.CompletedProcess([], process.returncode, "", stderr)
            survived += trial.judge(cut, label, where, ok, result)
    return survived


def prepared(folder):
    """name -> bytes of a prepared folder's files."""
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def every_file(folder):
    """relative path -> bytes of every file under `folder`."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def staged_kills(work, name, tool, command, old, new, duration, rng, n):
    """`command(out)` replacing the folder `old` holds by what `new` holds, through a staging
    folder, stopped n times by SIGKILL, SIGINT or SIGTERM (every third the moment the staging
    folder appears, the others after a random delay up to `duration`): a trial passes when the
    folder is old or new, never a mix, and the next run completes it and leaves nothing beside
    it. Returns the trials passed and failed."""
    want_old, want_new = prepared(old), prepared(new)
    kept = failures = 0
    for i in range(n):
        out = work / f"{name}-{i}"
        shutil.copytree(old, out)
        process = subprocess.Popen([str(a) for a in command(out)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if i % 3 == 0:
            staging = work / f".{name}-{i}.staged"
            while process.poll() is None and not staging.exists():
                pass
            delay = 0.0
        else:
            delay = rng.uniform(0, duration)
            time.sleep(delay)
        sig = [signal.SIGKILL, signal.SIGINT, signal.SIGTERM][(i // 3) % 3]
        process.send_signal(sig)
        process.wait()
        state = prepared(out)
        found = "old" if state == want_old else "new" if state == want_new else "MIXED"
        again = run(command(out))
        ok = found != "MIXED" and again.returncode == 0 and prepared(out) == want_new
        ok = ok and not any(p.name.startswith(f".{name}-{i}.") for p in work.iterdir())
        where = (f"{name} kill {i}: {sig.name} after {delay:.2f} s (exit {process.returncode}): "
                 f"the folder {found}")
        if ok:
            kept += 1
            shutil.rmtree(out)
            print(f"{where}, completed by the next {tool}")
        else:
            failures += 1
            print(f"{where}: NOT KEPT (next {tool} exit {again.returncode}) "
                  f"{again.stderr[-300:]}")
    return kept, failures


def prep_kills(work, text, rng, n):
    """xl-prep --force replacing a folder of one vocabulary by one of another, stopped at random:
    the folder is old or new, never a mix, and the next xl-prep completes it."""
    def prep(out, *extra):
        return [BIN / "xl-prep", "--format", "word", "--train", text / "train.txt",
                "--valid", text / "valid.txt", "--test", text / "valid.txt", "--out", out,
                *extra]
    new_flags = ["--max-size", "2000", "--unk", "--force"]
    old, new = work / "prep-old", work / "prep-new"
    start = time.monotonic()
    for folder, extra in [(old, []), (new, new_flags)]:
        r = run(prep(folder, *extra))
        if r.returncode != 0:
            sys.exit("xl-prep failed:\n" + r.stdout + r.stderr)
    duration = (time.monotonic() - start) / 2
    return staged_kills(work, "prep", "xl-prep", lambda out: prep(out, *new_flags), old, new,
                        duration, rng, n)


def export_kills(trial, rng, n):
    """xl-export --force over an earlier export of another run, killed (SIGKILL, SIGINT, SIGTERM)
    at random or as its staging folder appears: the folder is the earlier export or the new one,
    never a mix, and the next xl-export completes it."""
    other = trial.work / "export-other"
    r = run(trial.train(other, "--set", "train.seed=7", "--set", "train.max_step=20"))
    if r.returncode != 0:
        sys.exit("the second run failed:\n" + r.stdout + r.stderr)

    def export(run_dir, out):
        return [BIN / "xl-export", "--run", run_dir, "--out", out, "--force"]
    old, new = trial.work / "export-old", trial.work / "export-new"
    start = time.monotonic()
    for run_dir, out in [(other, old), (trial.ref, new)]:
        r = run(export(run_dir, out))
        if r.returncode != 0:
            sys.exit("xl-export failed:\n" + r.stdout + r.stderr)
    duration = (time.monotonic() - start) / 2
    return staged_kills(trial.work, "export", "xl-export", lambda out: export(trial.ref, out),
                        old, new, duration, rng, n)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def two_ranks(trial, run_dir, deadlines, timeout=120):
    """Two ranks of a data-parallel run of `run_dir` (--auto-resume), each with its own
    --stop-at-step (None: none): their exit statuses (None: still running after `timeout` s,
    then killed) and standard errors."""
    port = free_port()
    processes = []
    for rank, deadline in enumerate(deadlines):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2",
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        extra = ["--auto-resume"] + (["--stop-at-step", str(deadline)] if deadline else [])
        processes.append(subprocess.Popen([str(a) for a in trial.train(run_dir, *extra)], env=env,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                          text=True))
    statuses, errors = [], []
    end = time.monotonic() + timeout
    for process in processes:
        try:
            _, err = process.communicate(timeout=max(0.1, end - time.monotonic()))
            statuses.append(process.returncode)
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate()
            statuses.append(None)
        errors.append(err)
    return statuses, errors


def rank_deadlines(trial, rng, n):
    """Two ranks given different --stop-at-step (or one none), on a new run and on one resumed:
    both refuse at once, each with an error line naming the flag, and the run's files stay as
    they were; every third trial gives both the same deadline, and the run reaches it."""
    base = trial.work / "ranks-base"
    statuses, errors = two_ranks(trial, base, [10, 10])
    if statuses != [0, 0] or max(losses(base, "train"), default=0) != 10:
        sys.exit(f"two ranks to step 10 failed ({statuses}):\n" + "".join(errors))
    agreed = 0
    for i in range(n):
        run_dir = trial.work / f"ranks-{i}"
        resumed = i % 2 == 1
        if resumed:
            shutil.copytree(base, run_dir)
        before = every_file(run_dir) if resumed else None
        first = rng.randint(11, trial.steps)
        if i % 3 == 2:
            deadlines = [first, first]
        else:
            other = None if i % 4 == 0 else rng.choice(
                [s for s in range(11, trial.steps + 1) if s != first])
            deadlines = [first, other] if rng.random() < 0.5 else [other, first]
        statuses, errors = two_ranks(trial, run_dir, deadlines)
        what = f"rank deadlines {i}: {'resumed' if resumed else 'new'} run, {deadlines}"
        if deadlines[0] == deadlines[1]:
            ok = statuses == [0, 0] and max(losses(run_dir, "train"), default=0) == first
        else:
            said = [[line for line in e.splitlines() if line.startswith("error:")] for e in errors]
            ok = statuses == [2, 2] and all(len(s) == 1 and "--stop-at-step" in s[0] for s in said)
            ok = ok and (every_file(run_dir) == before if resumed else not run_dir.exists())
        if ok:
            agreed += 1
            shutil.rmtree(run_dir, ignore_errors=True)
            print(f"{what}: {'reached' if deadlines[0] == deadlines[1] else 'refused by both'}")
        else:
            trial.failures += 1
            print(f"{what}: NOT AS EXPECTED (exits {statuses}) {[e[-300:] for e in errors]}")
    return agreed


def corruptions(trial, rng, n):
    ref, data = trial.ref, trial.data
    targets = [ref / "checkpoints" / "last.pt", data / "test.bin", data / "vocab.txt"]
    caught = 0
    counts = {t.name: [0, 0] for t in targets}
    for i in range(n):
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
            trial.failures += 1
            print(f"{where}: NOT CAUGHT (exit {r.returncode}): {message[:400]}")
    return caught, counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--first-checkpoint-kills", type=int, default=12)
    parser.add_argument("--replacement-kills", type=int, default=24)
    parser.add_argument("--prep-kills", type=int, default=24)
    parser.add_argument("--export-kills", type=int, default=12)
    parser.add_argument("--rank-deadlines", type=int, default=9)
    parser.add_argument("--signals", type=int, default=10)
    parser.add_argument("--no-write-failures", action="store_true")
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
    trial = Trial(work, data, args.steps)
    print(f"reference: {args.steps} steps in {trial.duration:.1f} s; work folder {work}")

    summary = [f"kills: {random_kills(trial, rng, args.kills)} of {args.kills} resumed exactly"]
    for n, first in [(args.first_checkpoint_kills, True), (args.replacement_kills, False)]:
        survived, missed = temporary_kills(trial, rng, n, first)
        kind = "first-checkpoint" if first else "replacement"
        summary.append(f"{kind} kills: {survived} of {n - missed} resumed exactly"
                       f" ({missed} ended before the replacement was seen)")
    if not args.no_write_failures:
        survived, total = write_failures(trial)
        summary.append(f"write failures: {survived} of {total} continued exactly")
    summary.append(f"signals: {signals(trial, rng, args.signals)} of {args.signals} exact")
    kept, prep_failures = prep_kills(work, text, rng, args.prep_kills)
    trial.failures += prep_failures
    summary.append(f"prep kills: {kept} of {args.prep_kills} left the old or the new folder")
    kept, export_failures = export_kills(trial, rng, args.export_kills)
    trial.failures += export_failures
    summary.append(f"export kills: {kept} of {args.export_kills} left the earlier or the new "
                   "export")
    agreed = rank_deadlines(trial, rng, args.rank_deadlines)
    summary.append(f"rank deadlines: {agreed} of {args.rank_deadlines} as expected")
    caught, counts = corruptions(trial, rng, args.corruptions)
    summary.append(f"corruptions: {caught} of {args.corruptions} caught (" + ", ".join(
        f"{name} {c[1]} of {c[0]}" for name, c in counts.items()) + ")")
    print("\n".join(summary))
    if trial.failures == 0:
        shutil.rmtree(work)
    sys.exit(1 if trial.failures else 0)


if __name__ == "__main__":
    main()
