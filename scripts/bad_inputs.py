#!/usr/bin/env python3
"""Bad-input probe: hundreds of bad or careless inputs against every xl app (after the build).

  python3 scripts/bad_inputs.py [--timeout S] [--only TEXT]... [--jobs N] [--list] [--keep]

Each of --jobs workers (default: the cores) prepares a small word corpus (WikiText-2) and NSMC
slice in a work folder of its own, trains a tiny Transformer-XL run (`r`, with snapshots) and a
tiny XLNet classifier (`x`), then runs its share of the cases, one at a time, each case being
a command that a user could type by mistake (numbers out of range or not numbers, outputs over
a run's files, names that are paths, files that are devices, folders or not text, flags of
another format, torchrun environments without their peers, sweep specs that would train
elsewhere, ...). Every case expects a refusal. Each outcome is one of:

  clear     exit 2 with one `error:` line, no "internal error", and no number of 20 digits or
            more that the user did not type (a range message printing the largest double)
  unclear   exit 2, but several `error:` lines, an internal error or such a number
  accepted  exit 0: the bad input was taken (silently wrong, or ignored)
  crash     another exit status, or killed by a signal
  hang      still running after --timeout seconds (then killed)
  damaged   a file of `r` or `x` changed (checked after every case; the runs are then restored)

Prints one line per case that is not clear, then the counts by outcome and by app; exits 1 when
any case is not clear (the work folder is then kept).
"""
import argparse
import concurrent.futures
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = ROOT / os.environ.get("XL_BUILD_DIR", "build") / "bin"
TXL = ROOT / "configs" / "txl" / "tiny.yaml"
XLNET_CLS = ROOT / "configs" / "xlnet" / "tiny_cls.yaml"
XLNET = ROOT / "configs" / "xlnet" / "tiny.yaml"
CHAR = ROOT / "configs" / "char" / "tiny.yaml"
# The converters need transformers: the project's environment (scripts/bootstrap.sh) has it.
PYTHON = ROOT / ".venv" / "bin" / "python"
if not PYTHON.exists():
    PYTHON = pathlib.Path(sys.executable)
CONVERT = ROOT / "scripts" / "convert"
# Tiny Hugging Face folders, and copies damaged as a user's might be.
HF_FOLDERS = """
import json, os, shutil, sys, warnings
warnings.filterwarnings("ignore")
from transformers import TransfoXLConfig, TransfoXLLMHeadModel, XLNetConfig, XLNetLMHeadModel
os.chdir(sys.argv[1])
TransfoXLLMHeadModel(TransfoXLConfig(vocab_size=100, d_model=16, d_embed=16, n_head=2, d_head=8,
    d_inner=32, n_layer=2, cutoffs=[50], div_val=1, mem_len=8)).save_pretrained("txl")
XLNetLMHeadModel(XLNetConfig(vocab_size=100, d_model=16, n_layer=2, n_head=2,
    d_inner=32)).save_pretrained("xln")
for m in ["txl", "xln"]:
    shutil.copytree(m, m + "_notjson")
    open(m + "_notjson/config.json", "w").write("{not json")
    shutil.copytree(m, m + "_trunc")
    data = open(m + "/model.safetensors", "rb").read()
    open(m + "_trunc/model.safetensors", "wb").write(data[: len(data) // 2])
    shutil.copytree(m, m + "_noweights")
    os.remove(m + "_noweights/model.safetensors")
    shutil.copytree(m, m + "_shapes")
    config = json.load(open(m + "/config.json"))
    config["d_inner"] = 64
    json.dump(config, open(m + "_shapes/config.json", "w"))
"""


def run(args, timeout=None, env=None, cwd=None):
    return subprocess.run(
        [a if isinstance(a, bytes) else str(a) for a in args], capture_output=True, text=True,
        errors="replace", timeout=timeout, env=env, cwd=cwd)


def must(result, what):
    if result.returncode != 0:
        sys.exit(f"{what} failed:\n{result.stdout}{result.stderr}")


def fingerprint(folder):
    """path -> the bytes of every file of a run but its lock."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != ".lock"}


def damaged(before, after):
    """Whether a file of the run changed: replaced, cut or removed. New files, and lines
    appended to its metrics, log and event files (xl-eval's records, a refused resume's log
    lines), are what tools may add."""
    for name, old in before.items():
        new = after.get(name)
        appendable = name in ("metrics.jsonl", "train.log") or name.startswith("events.out.")
        if new is None or (new != old and not (appendable and new.startswith(old))):
            return True
    return False


def prepare(work):
    """The corpora and the two runs the cases read."""
    text = work / "text"
    text.mkdir()
    for split, name in [("train", "valid"), ("valid", "test")]:
        (text / f"{split}.txt").write_bytes(subprocess.check_output(
            ["xz", "-dc", ROOT / f"data/wikitext-2/wiki.{name}.tokens.xz"]))
    must(run([BIN / "xl-prep", "--train", text / "train.txt", "--valid", text / "valid.txt",
              "--test", text / "valid.txt", "--out", work / "words"]), "xl-prep (words)")
    for split, n in [("train", 3000), ("test", 500)]:
        lines = subprocess.check_output(
            ["xz", "-dc", ROOT / f"data/nsmc/ratings_{split}.txt.xz"]).splitlines(True)
        (text / f"nsmc_{split}.txt").write_bytes(b"".join(lines[: n + 1]))
    nsmc = work / "nsmc"
    must(run([BIN / "xl-prep", "--format", "nsmc", "--train", text / "nsmc_train.txt",
              "--test", text / "nsmc_test.txt", "--holdout", 300, "--out", nsmc]),
         "xl-prep (nsmc)")
    must(run([BIN / "xl-prep", "--format", "xlnet", "--vocab-size", 1000,
              "--character-coverage", 0.995, "--train", nsmc / "train.txt", "--valid",
              nsmc / "valid.txt", "--test", nsmc / "test.txt", "--out", nsmc]),
         "xl-prep (xlnet)")
    must(run([BIN / "xl-train", "--config", TXL, "--set", f"data.dir={work / 'words'}",
              "--set", f"run.dir={work / 'r'}", "--set", "train.max_step=20",
              "--set", "train.eval_interval=10", "--set", "train.keep_snapshots=2"]),
         "training r")
    must(run([BIN / "xl-train", "--config", XLNET_CLS, "--set", f"data.dir={nsmc}",
              "--set", f"run.dir={work / 'x'}", "--set", "train.max_step=4",
              "--set", "train.eval_interval=4", "--set", "train.max_eval_steps=2",
              "--set", "train.warmup_step=0"]),
         "training x")
    (work / "afile").write_text("a file, not a folder\n")
    (work / "notes").mkdir()
    (work / "notes" / "config.yaml").write_text("the user's own notes\n")
    (work / "noise.bin").write_bytes(bytes((i * 37) % 256 for i in range(4000)))
    (work / "empty.txt").write_text("")
    (work / "labels.tsv").write_text("0\t좋은 영화\n5\t다섯 번째 부류\n")
    (work / "garbage.yaml").write_text("model: [unclosed\n")
    # A section of only comments is YAML null: it must never erase the base's under a --set.
    (work / "null_train.yaml").write_text(f"base: {TXL}\ntrain:\n  # to do\n")
    (work / "prompt.txt").write_text("The game\n")
    os.mkfifo(work / "fifo")  # a named pipe that nothing writes to
    # NSMC files without their header, with another file's, with a review that is not UTF-8.
    (work / "nsmc_headless.txt").write_text("1\t좋은 영화\t1\n2\t별로\t0\n")
    (work / "nsmc_foreign.txt").write_text("label\ttext\n1\t좋은 영화\n")
    (work / "nsmc_latin1.txt").write_bytes(b"id\tdocument\tlabel\n1\tcaf\xe9\t1\n")
    # One line longer than SentencePiece's 4,192 bytes (it drops such lines).
    (work / "one_line.txt").write_text("좋은 영화 " * 2000 + "\n")
    (work / "base_folder.yaml").write_text(f"base: {work / 'notes'}\n")
    (work / "base_null.yaml").write_text("base: /dev/null\n")
    (work / "two_docs.yaml").write_text(f"base: {TXL}\n---\ntrain:\n  lr: 1\n")
    (work / "deep.yaml").write_text("model: " + "[" * 3000 + "]" * 3000 + "\n")
    # Bases that inherit from themselves, directly or through another file.
    (work / "base_self.yaml").write_text("base: base_self.yaml\n")
    (work / "base_a.yaml").write_text("base: base_b.yaml\n")
    (work / "base_b.yaml").write_text("base: base_a.yaml\n")
    (work / "latin1.txt").write_bytes(b"the caf\xe9 is open\n")
    hf = work / "hf"
    hf.mkdir()
    must(run([PYTHON, "-c", HF_FOLDERS, hf]), "Hugging Face folders")
    # A copy of r whose train.log is a folder.
    shutil.copytree(work / "r", work / "rlog")
    (work / "rlog" / "train.log").unlink()
    (work / "rlog" / "train.log").mkdir()
    # A run folder with a best.pt and no last.pt (an import, or last.pt removed).
    shutil.copytree(work / "r", work / "best_only")
    (work / "best_only" / "checkpoints" / "last.pt").unlink()


def cases(work):
    """(app, argv, extra environment) of every case: each input is bad."""
    out = []
    train = [BIN / "xl-train", "--config", TXL, "--set", f"data.dir={work / 'words'}"]
    fresh = iter(range(10**6))

    def new_run():
        return ["--set", f"run.dir={work / 'new' / str(next(fresh))}"]

    def add(app, argv, env=None):
        out.append((app, [BIN / app] + argv, env or {}))

    integer_bad = ["-1", "abc", "", "1.5", "nan", "1e400", "99999999999999999999"]
    # Numbers of every app's flags.
    for flag, bad in [("--stop-at-step", integer_bad + ["0"])]:
        for value in bad:
            out.append(("xl-train", train + new_run() + [flag, value], {}))
    for flag, bad in [("--max-steps", integer_bad + ["0"])]:
        for value in bad:
            add("xl-eval", ["--run", work / "r", flag, value])
    sample = ["--run", work / "r", "--tokens", "2"]
    for flag, bad in [
            ("--tokens", integer_bad + ["0"]),
            ("--samples", integer_bad + ["0", "100000000"]),
            ("--top-k", integer_bad),
            ("--window", integer_bad + ["0"]),
            ("--temperature", ["nan", "-1", "inf", "-inf", "1e-300", "1e400", "abc", ""]),
            ("--top-p", ["nan", "0", "-0.1", "1.5", "inf", "abc", ""]),
            ("--seed", ["-1", "abc", "1.5", "99999999999999999999999"])]:
        for value in bad:
            add("xl-sample", sample + [flag, value])
    for value in integer_bad + ["0", "10"]:
        add("xl-average", ["--run", work / "r", "--last", value, "--out", "avg"])
    for flag, bad in [("--steps", integer_bad + ["0"]), ("--warmup", integer_bad),
                      ("--n-token", integer_bad)]:
        for value in bad:
            add("xl-bench", ["--config", TXL, flag, value])
    prep = ["--train", work / "text" / "train.txt", "--out", work / "prep"]
    for flag, bad in [("--min-freq", integer_bad), ("--max-size", integer_bad + ["0", "1"])]:
        for value in bad:
            add("xl-prep", prep + [flag, value])
    xlnet_prep = ["--format", "xlnet", "--train", work / "nsmc" / "train.txt", "--out",
                  work / "prep_x"]
    for flag, bad in [("--vocab-size", ["0", "-1", "5", "abc"]),
                      ("--character-coverage", ["0", "2", "-1", "nan", "abc"])]:
        for value in bad:
            add("xl-prep", xlnet_prep + [flag, value])
    # Values SentencePiece refuses only after reading the corpus, and a corpus of one long line.
    for flag, value in [("--character-coverage", "0.5"), ("--character-coverage", "1e-9"),
                        ("--vocab-size", "18"), ("--vocab-size", "100000")]:
        add("xl-prep", xlnet_prep + [flag, value])
    add("xl-prep", ["--format", "xlnet", "--train", work / "one_line.txt", "--out",
                    work / "prep_x"])
    for name in ["nsmc_headless.txt", "nsmc_foreign.txt", "nsmc_latin1.txt"]:
        add("xl-prep", ["--format", "nsmc", "--train", work / name, "--out", work / "prep_n"])
    # Empty names, and flags of the step a reused model or a given split skips.
    spm = ["--spm-model", work / "nsmc" / "spiece.model"]
    for argv in [xlnet_prep + ["--spm-model", ""], prep + ["--vocab", ""],
                 xlnet_prep + spm + ["--vocab-size", "100"],
                 xlnet_prep + spm + ["--character-coverage", "0.99"],
                 ["--format", "nsmc", "--train", work / "text" / "nsmc_train.txt", "--valid",
                  work / "text" / "nsmc_test.txt", "--holdout", "10", "--out", work / "prep_n"]]:
        add("xl-prep", argv)
    for value in ["-1", "abc", "1.5"]:
        add("xl-prep", ["--format", "nsmc", "--train", work / "text" / "nsmc_train.txt",
                        "--out", work / "prep_n", "--holdout", value])
    # Flags of another format.
    for argv in [prep + ["--vocab-size", "100"], prep + ["--holdout", "5"],
                 prep + ["--spm-model", work / "nsmc" / "spiece.model"],
                 prep + ["--character-coverage", "0.9"],
                 ["--format", "byte"] + prep + ["--min-freq", "2"],
                 ["--format", "byte"] + prep + ["--unk"],
                 xlnet_prep + ["--vocab-from", "all"], xlnet_prep + ["--min-freq", "2"],
                 xlnet_prep + ["--vocab", work / "words" / "vocab.txt"]]:
        add("xl-prep", argv)

    # Config values through --set.
    for key, bad in [
            ("train.lr", ["0", "-1", "nan", "inf", "1e400", "abc", "[1, 2]"]),
            ("train.max_step", ["0", "-5", "1.5", "abc"]),
            ("model.n_layer", ["0", "-1", "abc", "{a: 1}"]),
            ("model.d_model", ["0", "-8"]),
            ("model.dropout", ["1.5", "-0.1", "nan"]),
            ("train.batch_size", ["0", "-1"]),
            ("train.tgt_len", ["0"]),
            ("eval.batch_size", ["0"]),
            ("model.transformer_xl.mem_len", ["-1"]),
            ("train.clip", ["-1", "nan", "1e308", "1e39"]),
            ("train.eps", ["1e-50"]),
            ("train.threads", ["3000000000"]),
            ("model.init_std", ["1e39"]),
            ("train.progress_seconds", ["1e300"]),
            ("train.warmup_step", ["-1", "1000000"]),
            ("train.dist_start_timeout_s", ["0", "nan", "-1"]),
            ("run.name", ["..", ".", "a/b", "../x"]),
            ("run.dir", ["''"]),
            ("data.dir", ["/nonexistent"]),
            ("train.optim", ["sgdd"]),
            ("eval.split", ["train"])]:
        for value in bad:
            out.append(("xl-train", train + new_run() + ["--set", f"{key}={value}"], {}))
    # Values each family refuses: heads beyond the window, a pretraining that caches nothing.
    out.append(("xl-train", [BIN / "xl-train", "--config", CHAR, "--set",
                             f"data.dir={work / 'words'}", "--set",
                             "model.char_transformer.target_weights=[1, 1, 1]", "--set",
                             "train.tgt_len=2"] + new_run(), {}))
    out.append(("xl-train", [BIN / "xl-train", "--config", XLNET_CLS, "--set",
                             f"data.dir={work / 'nsmc'}", "--set", "train.batch_size=8", "--set",
                             "data.train_examples=1"] + new_run(), {}))
    for key, value in [("model.xlnet.reuse_len", "0"), ("model.xlnet.perm_size", "5"),
                       ("model.xlnet.summary", "mean")]:
        out.append(("xl-train", [BIN / "xl-train", "--config", XLNET, "--set",
                                 f"data.dir={work / 'nsmc'}", "--set", f"{key}={value}"]
                    + new_run(), {}))
    for assignment in ["train.lrr=1", "modle.x=1", "train=3", "=1", "train.lr"]:
        out.append(("xl-train", train + new_run() + ["--set", assignment], {}))
    for config in [work / "missing.yaml", work / "notes", "/dev/zero", work / "empty.txt",
                   work / "garbage.yaml", work / "noise.bin", work / "fifo",
                   work / "base_folder.yaml", work / "base_null.yaml", work / "two_docs.yaml",
                   work / "deep.yaml", work / "base_self.yaml", work / "base_a.yaml"]:
        add("xl-train", ["--config", config] + new_run())
    add("xl-train", ["--config", work / "null_train.yaml", "--set", f"data.dir={work / 'words'}",
                     "--set", "train.threads=1"] + new_run())

    # Names and paths that are not UTF-8: refused before anything is created.
    for assignment in [b"run.name=caf\xe9", b"run.dir=" + bytes(work / "new") + b"/caf\xe9"]:
        out.append(("xl-train", train + ["--set", assignment], {}))
    add("xl-prep", ["--train", work / "text" / "train.txt", "--out", bytes(work) + b"/p\xe9"])
    add("xl-average", ["--run", work / "r", "--last", "2", "--out", b"avg\xe9"])
    # A resumed run whose train.log is a folder.
    add("xl-train", ["--config", work / "rlog" / "config.yaml", "--set",
                     f"run.dir={work / 'rlog'}", "--resume"])

    # Outputs: a run's files and folder, names that are paths, existing outputs.
    r = work / "r"
    owned = [r / "metrics.jsonl", r / "config.yaml", r / "train.log", r / "checkpoints/best.pt",
             r / "checkpoints/last.pt", r / "checkpoints/new.csv", r / ".lock"]
    for path in owned:
        for flag in ["--csv", "--plot"]:
            add("xl-compare", [r, flag, path, "--force"])
        add("xl-eval", ["--run", r, "--max-steps", "1", "--dump-batches", path, "--force"])
        add("xl-bench", ["--config", TXL, "--steps", "1", "--json", path, "--force"])
    for flag in ["--csv", "--plot"]:
        for path in ["", "/dev/null", work / "notes", work / "afile" / "x.csv", work / "afile"]:
            add("xl-compare", [r, flag, path])
    for name in ["best", "last", "step_20", "step_10", "..", ".", "", "../../x", "a/b",
                 "x\ny", "best.pt", "step_20.pt"]:
        add("xl-average", ["--run", r, "--last", "2", "--out", name])
    for path in [r, r / "checkpoints", r / "checkpoints/hf", work / "afile", ""]:
        add("xl-export", ["--run", r, "--out", path])
        add("xl-prep", ["--train", work / "text" / "train.txt", "--out", path])
    add("xl-export", ["--run", r, "--out", work / "notes"])  # not empty, without --force
    # Earlier outputs, without --force: the files it would write exist.
    add("xl-prep", ["--train", work / "text" / "train.txt", "--out", work / "words"])
    add("xl-prep", ["--format", "xlnet", "--train", work / "nsmc" / "train.txt", "--out",
                    work / "nsmc"])
    out.append(("xl-train", train + ["--set", f"run.dir={work / 'notes'}"], {}))
    out.append(("xl-train", train + ["--set", f"run.dir={r}"], {}))  # over a finished run

    # Inputs: missing, folders, devices, not text, another run's or family's.
    for path in [work / "missing.txt", work / "notes", "/dev/zero", work / "noise.bin",
                 work / "fifo"]:
        add("xl-eval", ["--run", work / "x", "--file", path])
        add("xl-sample", ["--run", r, "--prompt-file", path, "--tokens", "2"])
    add("xl-eval", ["--run", work / "x", "--file", work / "empty.txt"])  # (xl-sample: a new line)
    add("xl-eval", ["--run", r, "--file", work / "fifo"])
    add("xl-prep", ["--train", work / "fifo", "--out", work / "prep"])
    add("xl-eval", ["--run", work / "x", "--file", work / "labels.tsv"])
    for checkpoint in ["missing", work / "empty.txt", work / "noise.bin",
                       work / "x" / "checkpoints" / "best.pt"]:
        add("xl-eval", ["--run", r, "--checkpoint", checkpoint, "--max-steps", "1"])
    for run_dir in [work / "afile", work / "missing", work / "notes", "", r / "checkpoints"]:
        add("xl-eval", ["--run", run_dir])
        add("xl-sample", ["--run", run_dir])
        add("xl-export", ["--run", run_dir, "--out", work / "exp"])
    add("xl-sample", ["--run", work / "x", "--tokens", "2"])  # XLNet samples nothing
    for assignment in ["eval.batch_size=0", "eval.tgt_len=0", "eval.mem_len=-1",
                       "eval.split=train", "eval.mode=fast"]:
        add("xl-eval", ["--run", r, "--max-steps", "1", "--set", assignment])
    add("xl-export", ["--run", r, "--checkpoint", "missing", "--out", work / "exp"])
    add("xl-average", ["--run", r, "--checkpoints", "step_20", "missing", "--out", "avg"])
    add("xl-compare", [r, work / "missing"])
    add("xl-compare", [r, work / "notes"])
    for weights in [work / "missing.safetensors", work / "noise.bin", work / "empty.txt",
                    work / "hf" / "xln" / "model.safetensors"]:  # (another family's)
        add("xl-import", ["--config", TXL, "--set", f"data.dir={work / 'words'}", "--set",
                          f"run.dir={work / 'imported'}", "--weights", weights])
    # An import over a run folder that holds a best.pt but no last.pt.
    add("xl-import", ["--config", TXL, "--set", f"data.dir={work / 'words'}", "--set",
                      f"run.dir={work / 'best_only'}", "--weights",
                      work / "hf" / "txl" / "model.safetensors"])
    # Data of another family, text that is not UTF-8, a checkpoint of another family.
    out.append(("xl-train", train + new_run() + ["--set", f"data.dir={work / 'nsmc'}"], {}))
    add("xl-train", ["--config", XLNET_CLS, "--set", f"data.dir={work / 'words'}"] + new_run())
    add("xl-eval", ["--run", r, "--file", work / "latin1.txt"])
    add("xl-export", ["--run", r, "--checkpoint", work / "x" / "checkpoints" / "best.pt",
                      "--out", work / "exp"])
    add("xl-average", ["--run", r, "--checkpoints", "step_20",
                       work / "x" / "checkpoints" / "best.pt", "--out", "avg"])
    for argv in [["--config", work / "missing.yaml"], ["--config", TXL, "--set", "train.lrr=1"],
                 ["--config", TXL, "--modes", "train,fast"]]:
        add("xl-bench", argv)
    add("xl-compare", [])
    out.append(("xl-train", train + ["--set", f"run.dir={work / 'new' / 'r'}", "--resume"], {}))
    out.append(("xl-train", train + ["--set", f"run.dir={work / 'best_only'}"], {}))
    out.append(("xl-train", train + new_run() + ["--set", f"train.init_from={r}", "--set",
                                                 'train.init_exclude=["*"]'], {}))
    out.append(("xl-train", train + new_run() + ["--set", f"train.init_from={r}", "--set",
                                                 "model.d_inner=48"], {}))
    # A resume or an auto-resume that would stop before the run's step (20).
    add("xl-train", ["--config", r / "config.yaml", "--resume", "--set", "train.max_step=10"])
    add("xl-train", ["--config", r / "config.yaml", "--resume", "--stop-at-step", "10"])
    add("xl-train", ["--config", r / "config.yaml", "--resume", "--set",
                     f"train.init_from={work / 'x'}"])
    add("xl-train", ["--config", r / "config.yaml", "--set", "model.d_model=64", "--resume"])
    add("xl-train", ["--config", r / "config.yaml", "--set", "train.batch_size=7", "--resume"])

    # torchrun's environment without its peers.
    quick = ["--set", "train.dist_start_timeout_s=2"]
    for env in [{"WORLD_SIZE": "2", "RANK": "0", "MASTER_PORT": "29871"},
                {"WORLD_SIZE": "2", "RANK": "1", "MASTER_ADDR": "no-such-host.invalid"},
                {"RANK": "1"}, {"WORLD_SIZE": "abc", "RANK": "0"},
                {"WORLD_SIZE": "2", "RANK": "2"}, {"WORLD_SIZE": "2"},
                {"WORLD_SIZE": "2", "RANK": "0", "MASTER_PORT": "70000"},
                {"WORLD_SIZE": "2", "RANK": "-1"}, {"WORLD_SIZE": "1", "RANK": "3"},
                {"WORLD_SIZE": "2", "RANK": "0", "LOCAL_RANK": "abc"},
                {"WORLD_SIZE": "2", "RANK": "0", "TORCHELASTIC_RESTART_COUNT": "-3"}]:
        out.append(("xl-train", train + new_run() + quick, env))

    # The Hugging Face converters: folders that are not a model's, another family's, damaged.
    hf = work / "hf"
    for script, own, other in [("hf_transfo_xl.py", "txl", "xln"), ("hf_xlnet.py", "xln", "txl")]:
        for model in [work / "notes", work / "missing", work / "afile", hf / f"{own}_notjson",
                      hf / other, hf / f"{own}_trunc", hf / f"{own}_noweights",
                      hf / f"{own}_shapes"]:
            out.append(("convert", [PYTHON, CONVERT / script, "--model", model, "--out",
                                    work / "exp"], {}))
        for target in [work / "afile", work / "notes"]:  # a file; a folder holding config.yaml
            out.append(("convert", [PYTHON, CONVERT / script, "--model", hf / own, "--out",
                                    target], {}))

    # Sweeps that would train elsewhere or hide their table.
    sweep = ["-c", TXL, "--set", f"data.dir={work / 'words'}", "train.max_step=2",
             "--dir", work / "sweep"]
    for variant in ["..", ".", "compare.csv", "curves.png", "a/b x=1", "v run.dir=/tmp/x",
                    "v run.name=x", "", "=1", "v train.lr"]:
        add("xl-sweep", sweep + ["--variant", variant])
    for axis in ["run.name=a,b", "run.dir=a,b", "train.lr=", "=1,2", "train.lr=1,,2",
                 "train.lr"]:
        add("xl-sweep", sweep + ["--grid", axis])
    add("xl-sweep", sweep)
    add("xl-sweep", sweep + ["--grid", "train.lr=1,2", "--grid", "train.lr=3"])
    add("xl-sweep", sweep + ["--grid", "train.lr=1,2", "--variant", "v train.lr=3"])
    add("xl-sweep", ["-c", TXL, "--dir", work / "afile", "--grid", "train.lr=1,2"])
    add("xl-sweep", ["-c", TXL, "--dir", r, "--grid", "train.lr=1,2"])
    add("xl-sweep", sweep + ["--set", "run.dir=x", "--grid", "train.lr=1,2"])
    return out


def outcome(result, before, after, argv):
    if any(damaged(b, a) for b, a in zip(before, after)):
        return "damaged"
    if result is None:
        return "hang"
    text = result.stdout + result.stderr
    if result.returncode == 0:
        return "accepted"
    if result.returncode != 2:
        return "crash"
    errors = [line for line in text.splitlines() if line.startswith("error: ")]
    for given in map(str, argv):  # a long number the user typed may be echoed
        text = text.replace(given, "")
    if (len(errors) != 1 or "internal error" in text or "Internal:" in text
            or re.search(r"[0-9]{20}", text)):
        return "unclear"
    return "clear"


def probe(work, indices, timeout):
    """Prepares `work` and runs the cases of these indices there, one at a time: for each, its
    app, outcome and (when not clear) what to print."""
    work.mkdir()
    prepare(work)
    all_cases = cases(work)
    runs = [work / "r", work / "x"]
    pristine = work / "pristine"
    for folder in runs:
        shutil.copytree(folder, pristine / folder.name)
    results = []
    for index in indices:
        app, argv, env = all_cases[index]
        before = [fingerprint(f) for f in runs]
        try:
            result = run(argv, timeout=timeout, env={**os.environ, **env}, cwd=work)
        except subprocess.TimeoutExpired:
            result = None
        after = [fingerprint(f) for f in runs]
        kind = outcome(result, before, after, argv)
        shown = ""
        if kind != "clear":
            said = "" if result is None else (result.stdout + result.stderr).strip()[-300:]
            shown = (f"{kind}: {' '.join(f'{k}={v}' for k, v in env.items())} "
                     f"{' '.join(map(str, argv))}\n    {said!r}")
        results.append((index, app, kind, shown))
        if before != after:  # back to the runs every case expects
            for folder in runs:
                shutil.rmtree(folder)
                shutil.copytree(pristine / folder.name, folder)
        for scratch in ["new", "prep", "prep_x", "prep_n", "exp", "imported", "sweep"]:
            shutil.rmtree(work / scratch, ignore_errors=True)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--only", action="append", default=[],
                        help="run the cases whose command or environment holds TEXT "
                        "(repeatable: any of them)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="workers, each with its own work folder and runs (default: the "
                        "cores)")
    parser.add_argument("--list", action="store_true", help="print the cases and exit")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()
    top = pathlib.Path(tempfile.mkdtemp(prefix="xl-bad-inputs-"))
    all_cases = cases(top / "w0")
    if args.list:
        for app, argv, env in all_cases:
            print(" ".join(f"{k}={v}" for k, v in env.items()), *map(str, argv))
        print(f"{len(all_cases)} cases")
        shutil.rmtree(top)
        return
    chosen = [i for i, (_, argv, env) in enumerate(all_cases)
              if not args.only or any(text in " ".join(map(str, argv)) + str(env)
                                      for text in args.only)]
    jobs = max(1, min(args.jobs, len(chosen)))
    # Each worker prepares its own folder, so that a case sees only its own worker's runs
    # change (the damage check) and no two cases share an output.
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        parts = list(pool.map(lambda k: probe(top / f"w{k}", chosen[k::jobs], args.timeout),
                              range(jobs)))
    counts = {}
    by_app = {}
    for _, app, kind, shown in sorted(r for part in parts for r in part):
        counts[kind] = counts.get(kind, 0) + 1
        by_app.setdefault(app, {}).setdefault(kind, 0)
        by_app[app][kind] += 1
        if shown:
            print(shown)
    print(f"{len(chosen)} bad inputs: " +
          ", ".join(f"{counts[k]} {k}" for k in sorted(counts)))
    for app in sorted(by_app):
        print(f"  {app}: " + ", ".join(f"{n} {k}" for k, n in sorted(by_app[app].items())))
    failed = any(k != "clear" for k in counts)
    if failed or args.keep:
        print(f"work folder kept: {top}")
    else:
        shutil.rmtree(top)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
