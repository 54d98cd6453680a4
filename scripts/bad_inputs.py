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

from bad_input_cases import BIN, PYTHON, ROOT, TXL, XLNET_CLS, cases

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
# Headers that are no safetensors header, and weights that are not finite or not floats.
import struct
from safetensors.torch import load_file, save_file
for name, header in [("st_notjson", b"{not json"), ("st_zero", b""), ("st_array", b"[1, 2]"),
                     ("st_notutf8", b'{"\\xff": 1}'),
                     ("st_entry", b'{"transformer.word_emb.emb_layers.0.weight": 3}'),
                     ("st_overlap", b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
                                    b'"b": {"dtype": "F32", "shape": [1], "data_offsets": [2, 6]}}'),
                     ("st_twice", b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
                                  b'"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}')]:
    open(name + ".safetensors", "wb").write(struct.pack("<Q", len(header)) + header + b"    " * 2)
weights = load_file("txl/model.safetensors")
nan = dict(weights)
nan["transformer.layers.0.pos_ff.CoreNet.0.bias"] = nan[
    "transformer.layers.0.pos_ff.CoreNet.0.bias"] * float("nan")
save_file(nan, "txl_nan.safetensors")
ints = dict(weights)
ints["transformer.layers.0.pos_ff.CoreNet.0.bias"] = ints[
    "transformer.layers.0.pos_ff.CoreNet.0.bias"].long()
save_file(ints, "txl_int.safetensors")
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


def prepare_nsmc(work, test_reviews):
    """work/nsmc: 3,000 NSMC training reviews (300 held out) and `test_reviews` test ones,
    labelled, and a 1,000-piece SentencePiece model of them with their pieces files."""
    text = work / "text"
    for split, n in [("train", 3000), ("test", test_reviews)]:
        lines = subprocess.check_output(
            ["xz", "-dc", ROOT / f"data/nsmc/ratings_{split}.txt.xz"]).splitlines(True)
        (text / f"nsmc_{split}.txt").write_bytes(b"".join(lines[: n + 1]))
    nsmc = work / "nsmc"
    must(run([BIN / "xl-prep", "--format", "nsmc", "--train", text / "nsmc_train.txt",
              "--test", text / "nsmc_test.txt", "--holdout", 300, "--out", nsmc]),
         "xl-prep (nsmc)")
    must(run([BIN / "xl-prep", "--format", "pieces", "--vocab-size", 1000,
              "--character-coverage", 0.995, "--train", nsmc / "train.txt", "--valid",
              nsmc / "valid.txt", "--test", nsmc / "test.txt", "--out", nsmc]),
         "xl-prep (xlnet)")
    return nsmc


def prepare(work):
    """The corpora and the two runs the cases read."""
    text = work / "text"
    text.mkdir()
    for split, name in [("train", "valid"), ("valid", "test")]:
        (text / f"{split}.txt").write_bytes(subprocess.check_output(
            ["xz", "-dc", ROOT / f"data/wikitext-2/wiki.{name}.tokens.xz"]))
    must(run([BIN / "xl-prep", "--train", text / "train.txt", "--valid", text / "valid.txt",
              "--test", text / "valid.txt", "--out", work / "words"]), "xl-prep (words)")
    nsmc = prepare_nsmc(work, test_reviews=500)
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
    (work / "moses_vocab.txt").write_text("#xl-vocab v1 kind=word size=2 tokenization=moses\n<eos>\na\n")
    hf = work / "hf"
    hf.mkdir()
    must(run([PYTHON, "-c", HF_FOLDERS, hf]), "Hugging Face folders")
    # Text that is no UTF-8 word text, a config with a NUL byte, byte data, a sweep's folder
    # with the user's own table, checkpoints that are links to nothing or to a device.
    (work / "utf16.txt").write_bytes("the game is on\n".encode("utf-16"))
    for name, codec in [("utf16le", "utf-16-le"), ("utf16be", "utf-16-be"), ("utf32", "utf-32")]:
        (work / f"{name}.txt").write_bytes("the game is on\n".encode(codec))
    (work / "nul.txt").write_bytes(b"the game\x00 is on\n")
    (work / "spaces.txt").write_text("  \t \n\n")  # no word to score
    (work / "docs_array.json").write_text('[{"text": "the game"}, {"text": "is on"}]\n')
    (work / "docs_bad.jsonl").write_text('{"id": 1}\n{"text": 3}\n{not json\n\n')
    (work / "nul.yaml").write_bytes(f"base: {TXL}\n".encode() + b"\x00train:\n  lr: 1\n")
    must(run([BIN / "xl-prep", "--format", "byte", "--train", text / "valid.txt", "--out",
              work / "bytes"]), "xl-prep (bytes)")
    (work / "own_sweep").mkdir()
    (work / "own_sweep" / "compare.csv").write_text("the user's own table\n")
    (work / "dangling.pt").symlink_to(work / "missing.pt")
    (work / "zero.pt").symlink_to("/dev/zero")
    # Configs with an alias inside the node it names, text after the document's end, a number
    # tagged as text, an empty base.
    (work / "loop_model.yaml").write_text(f"base: {TXL}\nmodel: &m\n  transformer_xl: *m\n")
    (work / "loop_train.yaml").write_text(f"base: {TXL}\ntrain: &t\n  x: *t\n")
    (work / "loop_list.yaml").write_text(f"base: {TXL}\nmodel:\n  cutoffs: &c [1, *c]\n")
    (work / "doc_end.yaml").write_text(f"base: {TXL}\n...\ntrain:\n  lr: 1\n")
    (work / "str_tag.yaml").write_text(f"base: {TXL}\ntrain:\n  lr: !!str 0.003\n")
    (work / "base_empty.yaml").write_text("base: ''\n")
    # A third probe's: YAML that xl would not read as written.
    (work / "custom_tag.yaml").write_text(f"base: {TXL}\ntrain:\n  lr: !mytag 0.01\n")
    (work / "empty.yaml").write_text("")
    (work / "comments.yaml").write_text("# to do\n")
    (work / "merge_key.yaml").write_text(f"base: {TXL}\ntrain: &t\n  lr: 0.01\neval:\n  <<: *t\n")
    (work / "tab_indent.yaml").write_text(f"base: {TXL}\ntrain:\n\tlr: 0.01\n")
    (work / "blanks.txt").write_text(" \n\t\n\n   \n")
    (work / "blank_lines.txt").write_text("\n\n\n")
    (work / "victim.txt").write_text("the user's own text, an input\n")
    # A copy of r whose config.yaml was broken by hand, and one whose .lock is a link.
    shutil.copytree(work / "r", work / "rbroken")
    (work / "rbroken" / "config.yaml").write_text("model: [unclosed\n")
    shutil.copytree(work / "r", work / "rlock")
    (work / "rlock" / ".lock").unlink(missing_ok=True)
    (work / "rlock" / ".lock").symlink_to(work / "victim.txt")
    # A copy of r whose best.pt is a folder.
    shutil.copytree(work / "r", work / "rdir")
    (work / "rdir" / "checkpoints" / "best.pt").unlink()
    (work / "rdir" / "checkpoints" / "best.pt").mkdir()
    # A copy of r whose train.log is a folder.
    shutil.copytree(work / "r", work / "rlog")
    (work / "rlog" / "train.log").unlink()
    (work / "rlog" / "train.log").mkdir()
    # A run folder with a best.pt and no last.pt (an import, or last.pt removed).
    shutil.copytree(work / "r", work / "best_only")
    (work / "best_only" / "checkpoints" / "last.pt").unlink()


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


def run_and_report(probe_fn, top, chosen, args, what, group_of, failing):
    """Runs the cases `chosen` in args.jobs workers, each in its own folder under `top` (so
    that a case sees only its own worker's runs change, and no two cases share an output);
    prints the cases not clear, then the counts by outcome and by group_of(group); exits 1
    when an outcome is failing(kind), keeping `top` (or always with --keep)."""
    jobs = max(1, min(args.jobs, len(chosen)))
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        parts = list(pool.map(lambda k: probe_fn(top / f"w{k}", chosen[k::jobs], args.timeout),
                              range(jobs)))
    counts, by_group = {}, {}
    for _, group, kind, shown in sorted(r for part in parts for r in part):
        counts[kind] = counts.get(kind, 0) + 1
        g = by_group.setdefault(group_of(group), {})
        g[kind] = g.get(kind, 0) + 1
        if shown:
            print(shown)
    print(f"{len(chosen)} {what}: " + ", ".join(f"{counts[k]} {k}" for k in sorted(counts)))
    for group in sorted(by_group):
        print(f"  {group}: " + ", ".join(f"{n} {k}" for k, n in sorted(by_group[group].items())))
    failed = any(failing(k) for k in counts)
    if failed or args.keep:
        print(f"work folder kept: {top}")
    else:
        shutil.rmtree(top)
    sys.exit(1 if failed else 0)


def parse_arguments(doc, timeout, only_help, prefix):
    """The options both probes take; the work folder they make."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--timeout", type=float, default=timeout)
    parser.add_argument("--only", action="append", default=[], help=only_help)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="workers, each with its own work folder and runs (default: the "
                        "cores)")
    parser.add_argument("--list", action="store_true", help="print the cases and exit")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    return parser.parse_args(), pathlib.Path(tempfile.mkdtemp(prefix=prefix))


def main():
    args, top = parse_arguments(__doc__, 60.0, "run the cases whose command or environment "
                                "holds TEXT (repeatable: any of them)", "xl-bad-inputs-")
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
    run_and_report(probe, top, chosen, args, "bad inputs", lambda app: app,
                   lambda kind: kind != "clear")


if __name__ == "__main__":
    main()
