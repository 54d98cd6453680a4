#!/usr/bin/env python3
"""Users' probe: hundreds of inputs a user types into the inference and export tools, each with
what it should do (after the build).

  python3 scripts/probe_users.py [--timeout S] [--only TEXT]... [--jobs N] [--list] [--keep]

Where scripts/bad_inputs.py expects every case to be refused, these cases are a user's own
texts and files, good and bad, on every family (a Transformer-XL, an XLNet language model, an
XLNet classifier, a character transformer): `xl-eval --file` in each of its modes, `xl-predict`,
`xl-sample`, `xl-eval --documents`, `xl-export`, every output flag pointed at devices, pipes,
links, folders and the run's own files (with and without --force), and two ranks that disagree.
Each worker (--jobs, default: the cores) prepares its corpora and trains the four tiny runs in a
folder of its own. A case expects `ok` (exit 0, a result that says something), `refuse` (exit 2,
one `error:` line) or `either`. Each outcome is one of:

  clear     as expected (a refusal: exit 2 with its one error line)
  silent    exit 0 where a refusal was expected, or a result that says nothing (no token
            scored, a NaN, a perplexity of exactly 1) or fails the case's own check
  unclear   exit 2 where a result was expected, or a refusal with several `error:` lines
  internal  "internal error" or LibTorch's or the standard library's own text
  crash     another exit status, or killed by a signal
  hang      still running after --timeout seconds (then killed)
  damage    a file of a run or an input changed, or a device or its link replaced

Prints one line per case that is not clear, then the counts by outcome and by group; exits 1
when any case is a crash, hang, damage or internal (the work folder is then kept).
"""
import gzip
import json
import math
import os
import pathlib
import shutil
import subprocess
import sys

from bad_input_cases import BIN, ROOT, TXL, XLNET_CLS
from bad_inputs import (damaged, fingerprint, must, parse_arguments, prepare_nsmc, run,
                        run_and_report)

XLNET = ROOT / "configs" / "xlnet" / "tiny.yaml"
CHAR = ROOT / "configs" / "char_transformer" / "tiny.yaml"
RUNS = ["t", "l", "x", "c"]  # Transformer-XL, XLNet LM, XLNet classifier, character
DEVICES = ["/dev/stdout", "/dev/stderr", "/dev/null", "/dev/fd"]


def corpus(name, lines):
    text = subprocess.check_output(["xz", "-dc", ROOT / f"data/{name}.xz"])
    return b"".join(text.splitlines(True)[:lines])


def prepare(work):
    """The corpora, the four runs and the user's files the cases read."""
    text = work / "text"
    text.mkdir()
    (text / "train.txt").write_bytes(corpus("wikitext-2/wiki.valid.tokens", 2000))
    must(run([BIN / "xl-prep", "--train", text / "train.txt", "--valid", text / "train.txt",
              "--test", text / "train.txt", "--out", work / "words"]), "xl-prep (words)")
    (text / "bytes.txt").write_bytes(corpus("enwik8/enwik8-prefix-1M", 4000))
    must(run([BIN / "xl-prep", "--format", "byte", "--train", text / "bytes.txt", "--valid",
              text / "bytes.txt", "--test", text / "bytes.txt", "--out", work / "bytes"]),
         "xl-prep (bytes)")
    prepare_nsmc(work, test_reviews=300)
    short = ["--set", "train.max_step=6", "--set", "train.eval_interval=6",
             "--set", "train.max_eval_steps=2", "--set", "train.warmup_step=0"]
    for name, config, data in [("t", TXL, "words"), ("l", XLNET, "nsmc"),
                               ("x", XLNET_CLS, "nsmc"), ("c", CHAR, "bytes")]:
        must(run([BIN / "xl-train", "--config", config, "--set", f"data.dir={work / data}",
                  "--set", f"run.dir={work / name}"] + short), f"training {name}")
    user_files(work)


def user_files(work):
    """A user's texts (in/), good and bad, and the folders the outputs go to (out/)."""
    d = work / "in"
    d.mkdir()
    (work / "out").mkdir()
    en = corpus("wikitext-2/wiki.test.tokens", 60).decode()
    ko = "\n".join(line.split("\t")[1] for line in
                   corpus("nsmc/ratings_test.txt", 40).decode().splitlines()[1:]) + "\n"
    texts = {
        "en.txt": en, "ko.txt": ko, "en_nonl.txt": en.replace("\n", " ").strip(),
        "en_crlf.txt": en.replace("\n", "\r\n"), "en_bom.txt": "\ufeff" + en,
        "ko_nospace.txt": ko.replace(" ", ""), "zh.txt": "我们今天去公园散步，天气很好。\n" * 5,
        "ja.txt": "今日はとても良い天気ですね。映画を見に行きましょう。\n" * 5,
        "emoji.txt": "the game 😀 was 🎮 fun 👍\n" * 5,
        "code.txt": "int main() {\n  return std::printf(\"%d\\n\", 42);\n}\n" * 4,
        "url.txt": "https://example.com/a/b?c=d&e=f see http://x.y/z\n" * 4,
        "tabs.txt": en.replace(" ", "\t"), "numbers.txt": "3 1 4 1 5 9 2 6 5 3 5\n" * 10,
        "mixed.txt": "the 영화 was 映画 and film фильм ταινία\n" * 5,
        "ctrl.txt": "the \x1b[31mgame\x1b[0m is \x07on\x01\n" * 3,
        "two_words.txt": "the game\n", "one_word.txt": "the\n", "one_char.txt": "a",
        "long_line.txt": ("the game is on " * 20000).strip() + "\n",
        "empty.txt": "", "newlines.txt": "\n\n\n\n", "spaces.txt": "   \t  \n  \n",
        "labels.tsv": "1\t좋은 영화\n0\t별로였다\n1\t정말 재미있다\n",
        "docs.jsonl": json.dumps({"text": en[:400]}) + "\n" + json.dumps({"text": ko[:200]}) + "\n",
    }
    for name, content in texts.items():
        (d / name).write_text(content, encoding="utf-8", newline="")
    (d / "big.txt").write_text(en * 40)
    for name, codec in [("u16.txt", "utf-16"), ("u16le.txt", "utf-16-le"),
                        ("u16be.txt", "utf-16-be"), ("u32.txt", "utf-32")]:
        (d / name).write_bytes(en.encode(codec))
    (d / "latin1.txt").write_bytes("the café is open\n".encode("latin-1"))
    (d / "nul.txt").write_bytes(b"the game\x00 is on\n")
    (d / "noise.bin").write_bytes(bytes((i * 37) % 256 for i in range(4000)))
    (d / "en.txt.gz").write_bytes(gzip.compress(en.encode()))
    (d / "folder").mkdir()
    (d / "link.txt").symlink_to(d / "en.txt")
    (d / "dangling.txt").symlink_to(d / "missing.txt")
    os.mkfifo(work / "fifo")  # outside in/, which is copied
    shutil.copy(work / "words" / "test.bin", d / "words.bin")
    shutil.copy(work / "bytes" / "test.bin", d / "bytes.bin")
    shutil.copy(work / "nsmc" / "test.pieces", d / "ko.pieces")
    docs = {
        "docs_empty.jsonl": "", "docs_blank.jsonl": "\n\n",
        "docs_notjson.jsonl": "{not json\n", "docs_notext.jsonl": '{"id": 1}\n',
        "docs_number.jsonl": '{"text": 3}\n', "docs_textempty.jsonl": '{"text": ""}\n',
        "docs_crlf.jsonl": json.dumps({"text": en[:300]}) + "\r\n",
        "docs_bom.jsonl": "\ufeff" + json.dumps({"text": en[:300]}) + "\n",
        "docs_array.jsonl": '[{"text": "the game"}]\n',
        "docs_unicode.jsonl": json.dumps({"text": "영화 映画 😀 the game"}) + "\n",
        "docs_long.jsonl": json.dumps({"text": en * 5}) + "\n",
        "docs_many.jsonl": "".join(json.dumps({"text": f"the game {i}"}) + "\n"
                                   for i in range(300)),
    }
    for name, content in docs.items():
        (d / name).write_text(content, encoding="utf-8", newline="")
    for folder, files in [("docs_dir", {"a.txt": en[:300], "b.txt": ko[:200]}),
                          ("docs_dir_empty", {}), ("docs_dir_binary", {"a.txt": None})]:
        (d / folder).mkdir()
        for name, content in files.items():
            if content is None:
                (d / folder / name).write_bytes(b"\x00\x01\x02")
            else:
                (d / folder / name).write_text(content)
    (work / "out" / "existing.txt").write_text("the user's own file\n")
    (work / "out" / "victim.txt").write_text("the file a link leads to\n")


def result_says_nothing(text):
    low = text.lower()
    return (" nan" in low or ("| 0 tokens" in text and "(no score)" not in text)
            or "ppl 1.000 " in text or "ppl inf" in low or "-nan" in low)


def json_check(path, key="tokens"):
    """A check that `path` holds a JSON result with `key` > 0 and a finite loss."""
    def check(work):
        try:
            result = json.loads((work / path).read_text())
        except (OSError, ValueError) as e:
            return f"{path}: {e}"
        if not result.get(key, 0) > 0 or not math.isfinite(result.get("loss", 0.0)):
            return f"{path}: {key} {result.get(key)} loss {result.get('loss')}"
        return None
    return check


def link_kept(link, target):
    """A check that `link` is still a link and the file it leads to was written."""
    def check(work):
        if not (work / link).is_symlink():
            return f"{link} is no longer a link"
        if (work / target).read_text() == "the file a link leads to\n":
            return f"{target} was not written"
        return None
    return check


TEXT_EXPECT = {  # what each family does with each text: ok, refuse or either
    "en.txt": "ok", "ko.txt": "ok", "en_nonl.txt": "ok", "en_crlf.txt": "ok",
    "en_bom.txt": "ok", "ko_nospace.txt": "ok", "zh.txt": "ok", "ja.txt": "ok",
    "emoji.txt": "ok", "code.txt": "ok", "url.txt": "ok", "tabs.txt": "ok", "numbers.txt": "ok",
    "mixed.txt": "ok", "ctrl.txt": "either", "two_words.txt": "either",
    "one_word.txt": "either", "one_char.txt": "either", "long_line.txt": "ok",
    "big.txt": "ok", "link.txt": "ok", "empty.txt": "refuse", "newlines.txt": "refuse",
    "spaces.txt": "refuse", "u16.txt": "refuse", "u16le.txt": "refuse", "u16be.txt": "refuse",
    "u32.txt": "refuse", "latin1.txt": "either", "nul.txt": "refuse", "noise.bin": "refuse",
    "en.txt.gz": "refuse", "folder": "refuse", "dangling.txt": "refuse",
    "missing.txt": "refuse", "words.bin": "refuse", "bytes.bin": "refuse",
    "ko.pieces": "refuse",
}
OWN_FILE = {"t": "words.bin", "l": "ko.pieces", "c": "bytes.bin"}
MODES = {
    "t": [[], ["--per-token", "P", "--json", "J"], ["--streams", "3"]],
    "l": [[], ["--per-token", "P", "--json", "J"], ["--permutation"], ["--streams", "2"]],
    "c": [[], ["--per-token", "P", "--json", "J"], ["--streams", "3"]],
}


def file_cases(work):
    """xl-eval --file of every text on each language model in each mode; xl-predict of each
    on the classifier."""
    out = []
    for r, modes in MODES.items():
        for name, expect in TEXT_EXPECT.items():
            if name == OWN_FILE[r]:
                expect = "ok"
            elif r == "c" and name in ("latin1.txt", "u16.txt", "u16le.txt", "u16be.txt",
                                       "u32.txt", "nul.txt", "noise.bin", "en.txt.gz",
                                       "ctrl.txt", "newlines.txt", "spaces.txt"):
                expect = "either"  # bytes are bytes, spaces and line ends characters
            for m, mode in enumerate(modes):
                i = len(out)
                flags = [f"out/{i}.tsv" if f == "P" else f"out/{i}.json" if f == "J" else f
                         for f in mode]
                check = json_check(f"out/{i}.json") if "J" in mode and expect == "ok" else None
                out.append(("--file", [BIN / "xl-eval", "--run", r, "--file", f"in/{name}"]
                            + flags, expect, check))
    for name, expect in TEXT_EXPECT.items():
        if name in ("two_words.txt", "one_word.txt", "one_char.txt", "numbers.txt"):
            expect = "ok"  # one example each
        out.append(("xl-predict", [BIN / "xl-predict", "--run", "x", "--file", f"in/{name}"],
                    expect, None))
    out.append(("xl-predict", [BIN / "xl-predict", "--run", "x", "--file", "in/labels.tsv"],
                "ok", None))
    # Pipes: a process substitution, a slow one, standard input, a named pipe without writer.
    for r in ["t", "l", "c"]:
        out.append(("--file", f"{BIN}/xl-eval --run {r} --file <(cat in/en.txt)", "ok", None))
        out.append(("--file", f"{BIN}/xl-eval --run {r} --file /dev/stdin < in/en.txt", "ok",
                    None))
        out.append(("--file", [BIN / "xl-eval", "--run", r, "--file", "fifo"], "refuse",
                    None))
    out.append(("--file", f"{BIN}/xl-eval --run t --file <(sleep 11; cat in/en.txt)", "ok",
                None))
    return out


def sample_cases():
    out = []
    prompts = [["--prompt", "the game"], ["--prompt", ""], ["--prompt", " "],
               ["--prompt", "정말 재미있는 영화"], ["--prompt", "😀"],
               ["--prompt", "the game " * 3000], ["--prompt-file", "in/en.txt"],
               ["--prompt-file", "in/empty.txt"], ["--prompt-file", "in/u16.txt"],
               ["--prompt-file", "in/nul.txt"], ["--prompt-file", "in/folder"]]
    expect = ["ok", "either", "either", "ok", "either", "ok", "ok", "either", "refuse",
              "refuse", "refuse"]
    flags = [(["--tokens", "0"], "refuse"), (["--tokens", "-1"], "refuse"),
             (["--tokens", "1"], "ok"), (["--top-k", "-1"], "refuse"),
             (["--top-k", "100000"], "either"), (["--temperature", "0"], "ok"),
             (["--temperature", "-1"], "refuse"), (["--temperature", "nan"], "refuse"),
             (["--temperature", "inf"], "refuse"), (["--top-p", "0"], "refuse"),
             (["--top-p", "1.5"], "refuse"), (["--seed", "-1"], "refuse"),
             (["--seed", "18446744073709551616"], "refuse"), (["--samples", "0"], "refuse"),
             (["--samples", "3"], "ok"), (["--no-memory", "--window", "0"], "refuse"),
             (["--checkpoint", "step_999"], "refuse")]
    for r in ["t", "l", "c"]:
        for prompt, e in zip(prompts, expect):
            # XLNet's sampling may be refused for its family: either way, in one line.
            e = "either" if r == "l" else e
            if r == "c" and prompt == ["--prompt-file", "in/en.txt"]:
                e = "either"  # a byte it never saw ('@') is refused by name in a prompt
            out.append(("xl-sample", [BIN / "xl-sample", "--run", r, "--tokens", "20"] + prompt,
                        e, None))
        for flag, e in flags:
            e = "either" if r == "l" and e == "ok" else e
            out.append(("xl-sample", [BIN / "xl-sample", "--run", r, "--tokens", "10",
                                      "--prompt", "the"] + flag if flag[0] != "--tokens" else
                        [BIN / "xl-sample", "--run", r, "--prompt", "the"] + flag, e, None))
    out.append(("xl-sample", [BIN / "xl-sample", "--run", "x", "--prompt", "the"], "refuse",
                None))
    return out


def document_cases():
    out = []
    for r in ["t", "l"]:
        for name in ["docs.jsonl", "docs_crlf.jsonl", "docs_bom.jsonl", "docs_unicode.jsonl",
                     "docs_long.jsonl", "docs_many.jsonl", "docs_dir"]:
            out.append(("--documents", [BIN / "xl-eval", "--run", r, "--documents",
                                        f"in/{name}", "--out", f"out/{r}{name}.out"], "ok",
                        None))
        for name in ["docs_empty.jsonl", "docs_blank.jsonl", "docs_notjson.jsonl",
                     "docs_notext.jsonl", "docs_number.jsonl", "docs_array.jsonl",
                     "docs_dir_empty", "docs_dir_binary", "u16.txt", "missing.jsonl"]:
            out.append(("--documents", [BIN / "xl-eval", "--run", r, "--documents",
                                        f"in/{name}", "--out", f"out/{r}{name}.out"],
                        "refuse", None))
        out.append(("--documents", [BIN / "xl-eval", "--run", r, "--documents",
                                    "in/docs_textempty.jsonl", "--out", f"out/{r}te.out"],
                    "either", None))
        out.append(("--documents", [BIN / "xl-eval", "--run", r, "--documents", "in/docs.jsonl",
                                    "--out", f"out/{r}s.out", "--shard", "3/2"], "refuse",
                    None))
    out.append(("--documents", [BIN / "xl-eval", "--run", "x", "--documents", "in/docs.jsonl",
                                "--out", "out/xd.out"], "refuse", None))
    return out


def output_cases(work):
    """Every output flag pointed at devices, pipes, links, folders, inputs and the run's own
    files, with and without --force."""
    apps = {
        "xl-eval --json": [BIN / "xl-eval", "--run", "t", "--file", "in/en.txt", "--json"],
        "xl-eval --per-token": [BIN / "xl-eval", "--run", "t", "--file", "in/en.txt",
                                "--per-token"],
        "xl-predict --out": [BIN / "xl-predict", "--run", "x", "--file", "in/labels.tsv",
                             "--out"],
        "xl-compare --csv": [BIN / "xl-compare", "t", "c", "--csv"],
        "xl-eval --documents --out": [BIN / "xl-eval", "--run", "t", "--documents",
                                      "in/docs.jsonl", "--out"],
        "xl-bench --json": [BIN / "xl-bench", "--config", TXL, "--set",
                            f"data.dir={work / 'words'}", "--steps", "1", "--warmup", "0",
                            "--modes", "eval", "--json"],
    }
    targets = [("/dev/stdout", "ok", "ok"), ("/dev/stderr", "ok", "ok"),
               ("/proc/self/fd/1", "ok", "ok"), ("/dev/fd/2", "ok", "ok"),
               ("/dev/null", "ok", "ok"), ("/dev/full", "refuse", "refuse"),
               ("out/new.txt", "ok", "ok"), ("out/a/b/new.txt", "ok", "ok"),
               ("out/existing.txt", "refuse", "ok"), ("out/link", "either", "ok"),
               ("out/dangling", "either", "either"), ("out", "refuse", "refuse"),
               ("INPUT", "refuse", "refuse"), ("t/metrics.jsonl", "refuse", "refuse"),
               ("t/config.yaml", "refuse", "refuse"),
               ("t/checkpoints/best.pt", "refuse", "refuse"), ("t", "refuse", "refuse")]
    # The file each reads: never its output, --force neither (xl-compare and xl-bench read
    # runs and data folders, the run's files above).
    inputs = {"xl-eval --json": "in/en.txt", "xl-eval --per-token": "in/en.txt",
              "xl-predict --out": "in/labels.tsv", "xl-eval --documents --out": "in/docs.jsonl"}
    out = []
    for label, argv in apps.items():
        for target, plain, forced in targets:
            if target == "INPUT":
                if label not in inputs:
                    continue
                target = inputs[label]
            for force in (False, True):
                expect = forced if force else plain
                check = link_kept("out/link", "out/victim.txt") if (
                    target == "out/link" and force) else None
                out.append((f"output {label}", argv + [target] + (["--force"] if force else []),
                            expect, check))
        out.append((f"output {label}", f"{' '.join(map(str, argv))} >(cat > /dev/null)", "ok",
                    None))
    return out


def export_cases():
    out = []
    for r in ["t", "l", "x", "c"]:
        family_ok = "refuse" if r == "c" else "ok"  # Hugging Face has no character model
        for target, plain, forced in [
                ("out/exp_new", family_ok, family_ok), ("out/a/b/exp", family_ok, family_ok),
                ("out/exp_again", family_ok, family_ok), ("words", "refuse", "refuse"),
                ("nsmc", "refuse", "refuse"), ("t", "refuse", "refuse"),
                ("t/checkpoints", "refuse", "refuse"), ("/dev/null", "refuse", "refuse"),
                ("out/existing.txt", "refuse", "refuse"), ("in", "refuse", "refuse")]:
            for force in (False, True):
                out.append(("xl-export", [BIN / "xl-export", "--run", r, "--out", target]
                            + (["--force"] if force else []), forced if force else plain,
                            None))
    return out


def rank_cases(work):
    """Two ranks of one data-parallel run that disagree: both refuse, one line each."""
    base = (f"{BIN}/xl-train --config {TXL} --set data.dir={work / 'words'} "
            "--set train.max_step=4 --set train.dist_start_timeout_s=20 ")
    out = []
    for label, first, second in [
            ("seeds", "", "--set train.seed=8"), ("deadlines", "--stop-at-step 2", ""),
            ("sizes", "", "--set model.d_inner=48"), ("data", "",
                                                      f"--set data.dir={work / 'bytes'}"),
            ("lr", "", "--set train.lr=0.01"), ("world", "", "WORLD=3")]:
        rd = f"out/ranks_{label}"
        cmds = []
        for rank, extra in enumerate([first, second]):
            world = "3" if extra == "WORLD=3" else "2"
            extra = "" if extra == "WORLD=3" else extra
            cmds.append(f"env RANK={rank} LOCAL_RANK={rank} WORLD_SIZE={world} "
                        f"MASTER_ADDR=127.0.0.1 MASTER_PORT=$port {base} --set run.dir={rd} "
                        f"{extra}")
        out.append(("two ranks",
                    "port=$(python3 -c 'import socket; s=socket.socket(); s.bind((\"\", 0)); "
                    "print(s.getsockname()[1])'); "
                    f"{cmds[0]} > out/{label}0.log 2>&1 & p=$!; {cmds[1]} > out/{label}1.log "
                    f"2>&1; s1=$?; wait $p; s0=$?; cat out/{label}0.log out/{label}1.log; "
                    "[ $s0 = 2 ] && [ $s1 = 2 ] && exit 2; exit $((s0 > s1 ? s0 : s1))",
                    "refuse2", None))
    return out


def cases(work):
    return (file_cases(work) + sample_cases() + document_cases() + output_cases(work)
            + export_cases() + rank_cases(work))


def devices_intact():
    return all(os.path.islink(p) or p == "/dev/null" for p in DEVICES) and \
        pathlib.Path("/dev/null").is_char_device()


def outcome(expect, result, harmed, check_said):
    if harmed:
        return "damage"
    if result is None:
        return "hang"
    text = result.stdout + result.stderr
    if result.returncode not in (0, 2):
        return "crash"
    if "internal error" in text or "terminate called" in text or "Exception raised from" in text:
        return "internal"
    errors = [line for line in text.splitlines() if line.startswith("error: ")]
    if result.returncode == 2:
        if expect == "ok":
            return "unclear"
        return "clear" if len(errors) == (2 if expect == "refuse2" else 1) else "unclear"
    if expect in ("refuse", "refuse2"):
        return "silent"
    if result_says_nothing(result.stdout) or check_said:
        return "silent"
    return "clear"


def probe(work, indices, timeout):
    work.mkdir()
    prepare(work)
    all_cases = cases(work)
    watched = [work / r for r in RUNS] + [work / "in", work / "words", work / "nsmc"]
    pristine = work / "pristine"
    for folder in watched:
        shutil.copytree(folder, pristine / folder.name, symlinks=True)
    results = []
    for index in indices:
        group, argv, expect, check = all_cases[index]
        (work / "out" / "link").unlink(missing_ok=True)
        (work / "out" / "link").symlink_to(work / "out" / "victim.txt")
        (work / "out" / "dangling").unlink(missing_ok=True)
        (work / "out" / "dangling").symlink_to(work / "out" / "nothing.txt")
        before = [fingerprint(f) for f in watched]
        shell = isinstance(argv, str)
        try:
            result = subprocess.run(
                ["bash", "-c", argv] if shell else [str(a) for a in argv], capture_output=True,
                text=True, errors="replace", timeout=timeout, cwd=work)
        except subprocess.TimeoutExpired:
            result = None
        after = [fingerprint(f) for f in watched]
        harmed = any(damaged(b, a) for b, a in zip(before, after)) or not devices_intact()
        said = check(work) if check and result is not None and result.returncode == 0 else None
        kind = outcome(expect, result, harmed, said)
        shown = ""
        if kind != "clear":
            text = "" if result is None else (result.stdout + result.stderr).strip()[-300:]
            command = argv if shell else " ".join(map(str, argv))
            shown = f"{kind} ({expect}): {command[:300]}\n    {said or ''}{text!r}"
        results.append((index, group, kind, shown))
        if before != after:
            for folder in watched:
                shutil.rmtree(folder)
                shutil.copytree(pristine / folder.name, folder, symlinks=True)
        if not devices_intact():
            sys.exit("a device or its link was replaced: restore /dev/stdout, /dev/stderr, "
                     "/dev/fd and /dev/null")
        for entry in (work / "out").iterdir():
            if entry.name not in ("existing.txt", "victim.txt"):
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() \
                    else entry.unlink()
        (work / "out" / "existing.txt").write_text("the user's own file\n")
        (work / "out" / "victim.txt").write_text("the file a link leads to\n")
    return results


def main():
    args, top = parse_arguments(__doc__, 90.0, "run the cases whose group or command holds "
                                "TEXT (repeatable)", "xl-probe-users-")
    all_cases = cases(top / "w0")
    if args.list:
        for group, argv, expect, _ in all_cases:
            print(group, expect, argv if isinstance(argv, str) else " ".join(map(str, argv)))
        print(f"{len(all_cases)} cases")
        shutil.rmtree(top)
        return
    chosen = [i for i, (group, argv, _, _) in enumerate(all_cases)
              if not args.only or any(t in group + " " + (
                  argv if isinstance(argv, str) else " ".join(map(str, argv)))
                  for t in args.only)]
    run_and_report(probe, top, chosen, args, "inputs",
                   lambda group: group.split(" ")[0] if group.startswith("output") else group,
                   lambda kind: kind in ("crash", "hang", "damage", "internal"))


if __name__ == "__main__":
    main()
