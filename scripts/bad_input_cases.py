"""The cases of the bad-input probe (scripts/bad_inputs.py): every command a user could type by
mistake that an xl app must refuse with one clear line, and the paths they use."""
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = ROOT / os.environ.get("XL_BUILD_DIR", "build") / "bin"
# Every family's smallest configs, by the registry's convention (configs/<folder>/tiny*.yaml,
# test::tiny_configs): the generic cases run on each, so a new family is probed with no edit here.
TINY_CONFIGS = sorted((ROOT / "configs").glob("*/tiny*.yaml"))
# The cases of one family's keys and data.
TXL = ROOT / "configs" / "transformer_xl" / "tiny.yaml"
XLNET_CLS = ROOT / "configs" / "xlnet" / "tiny_cls.yaml"
XLNET = ROOT / "configs" / "xlnet" / "tiny.yaml"
CHAR = ROOT / "configs" / "char_transformer" / "tiny.yaml"
# The converters need transformers: the project's environment (scripts/bootstrap.sh) has it.
PYTHON = ROOT / ".venv" / "bin" / "python"
if not PYTHON.exists():
    PYTHON = pathlib.Path(sys.executable)
CONVERT = ROOT / "scripts" / "convert"


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
    xlnet_prep = ["--format", "pieces", "--train", work / "nsmc" / "train.txt", "--out",
                  work / "prep_x"]
    for flag, bad in [("--vocab-size", ["0", "-1", "5", "abc"]),
                      ("--character-coverage", ["0", "2", "-1", "nan", "abc"])]:
        for value in bad:
            add("xl-prep", xlnet_prep + [flag, value])
    # Values SentencePiece refuses only after reading the corpus, and a corpus of one long line.
    for flag, value in [("--character-coverage", "0.5"), ("--character-coverage", "1e-9"),
                        ("--vocab-size", "18"), ("--vocab-size", "100000")]:
        add("xl-prep", xlnet_prep + [flag, value])
    add("xl-prep", ["--format", "pieces", "--train", work / "one_line.txt", "--out",
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
            ("train.threads", ["3000000000", "100000", "1000"]),
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
    # What every family refuses alike.
    for tiny in TINY_CONFIGS:
        for assignment in ["modle.x=1", "data.dir=/nonexistent", "train.lr=-1", "model.n_layer=0",
                           "model.d_model=0", "train.max_step=0"]:
            out.append(("xl-train", [BIN / "xl-train", "--config", tiny, "--set", assignment]
                        + new_run(), {}))
    # Values each family refuses: heads beyond the window, a pretraining that caches nothing.
    out.append(("xl-train", [BIN / "xl-train", "--config", CHAR, "--set",
                             f"data.dir={work / 'words'}", "--set",
                             "model.char_transformer.target_weights=[1, 1, 1]", "--set",
                             "train.tgt_len=2"] + new_run(), {}))
    out.append(("xl-train", [BIN / "xl-train", "--config", XLNET_CLS, "--set",
                             f"data.dir={work / 'nsmc'}", "--set", "train.batch_size=8", "--set",
                             "data.train_examples=1"] + new_run(), {}))
    # Class names that do not name the classes: too few, twice, empty, a pretraining's.
    for labels in ["[negative]", "[good, good]", "['', x]", "[a, 'b\tc']"]:
        out.append(("xl-train", [BIN / "xl-train", "--config", XLNET_CLS, "--set",
                                 f"data.dir={work / 'nsmc'}", "--set",
                                 f"model.xlnet.labels={labels}"] + new_run(), {}))
    for key, value in [("model.xlnet.reuse_len", "0"), ("model.xlnet.perm_size", "5"),
                       ("model.xlnet.summary", "mean"),
                       ("model.xlnet.labels", "[a, b]")]:
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
    x_run = work / "x"
    owned = [r / "metrics.jsonl", r / "config.yaml", r / "train.log", r / "checkpoints/best.pt",
             r / "checkpoints/last.pt", r / "checkpoints/new.csv", r / ".lock"]
    for path in owned:
        for flag in ["--csv", "--plot"]:
            add("xl-compare", [r, flag, path, "--force"])
        add("xl-eval", ["--run", r, "--max-steps", "1", "--dump-batches", path, "--force"])
        add("xl-bench", ["--config", TXL, "--steps", "1", "--json", path, "--force"])
    for flag in ["--csv", "--plot"]:
        for path in ["", work / "notes", work / "afile" / "x.csv", work / "afile"]:
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
    add("xl-prep", ["--format", "pieces", "--train", work / "nsmc" / "train.txt", "--out",
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
    add("xl-eval", ["--run", r, "--file", work / "spaces.txt"])
    # Documents none of which can be read, a JSON array instead of JSON Lines.
    for documents in [work / "docs_bad.jsonl", work / "docs_array.json"]:
        add("xl-eval", ["--run", r, "--documents", documents, "--out", work / "d" / "s.jsonl"])
    # Wide text, with and without its byte-order mark, each family.
    for name in ["utf16.txt", "utf16le.txt", "utf16be.txt", "utf32.txt"]:
        add("xl-eval", ["--run", r, "--file", work / name])
        add("xl-eval", ["--run", work / "x", "--file", work / name])
    add("xl-export", ["--run", r, "--checkpoint", work / "x" / "checkpoints" / "best.pt",
                      "--out", work / "exp"])
    add("xl-average", ["--run", r, "--checkpoints", "step_20",
                       work / "x" / "checkpoints" / "best.pt", "--out", "avg"])
    for argv in [["--config", work / "missing.yaml"], ["--config", TXL, "--set", "train.lrr=1"],
                 ["--config", TXL, "--modes", "train,fast"],
                 ["--config", TXL, "--set", f"data.dir={work / 'words'}", "--prepared-data",
                  "--n-token", "5"],
                 ["--config", TXL, "--set", f"data.dir={work / 'missing'}", "--prepared-data"]]:
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

    # A user's own text and predictions: outputs over a run's files or each other, inputs that
    # are no text, the command of the other kind of run.
    text = work / "text" / "train.txt"
    for path in owned:
        for flag in ["--per-token", "--json"]:
            add("xl-eval", ["--run", r, "--file", text, flag, path, "--force"])
        add("xl-predict", ["--run", x_run, "--file", work / "labels.tsv", "--out", path,
                           "--force"])
    add("xl-eval", ["--run", r, "--file", text, "--json", work / "o.txt", "--per-token",
                    work / "o.txt"])
    for path in [work / "missing.txt", work / "notes", "/dev/zero", work / "noise.bin",
                 work / "empty.txt", work / "latin1.txt"]:
        add("xl-eval", ["--run", r, "--file", path, "--per-token", work / "p.tsv"])
        add("xl-predict", ["--run", x_run, "--file", path])
    add("xl-predict", ["--run", r, "--file", text])  # a language model: xl-eval --file
    add("xl-eval", ["--run", x_run, "--file", work / "labels.tsv", "--per-token", work / "p.tsv"])
    add("xl-predict", ["--run", x_run, "--file", work / "labels.tsv"])  # a label of 5 classes
    add("xl-predict", ["--run", x_run, "--file", work / "labels.tsv", "--format", "nsmc"])
    add("xl-predict", ["--run", x_run, "--file", work / "labels.tsv", "--format", "csv"])
    add("xl-prep", ["--format", "word", "--vocab", work / "words" / "vocab.txt", "--unk",
                    "--test", text, "--out", work / "prep"])
    add("xl-prep", ["--format", "word", "--out", work / "prep"])
    # Rules for raw text: one xl does not know, asked of bytes, or --pretokenized with nothing
    # to split by rules (a vocabulary built here reads its splits as they stand).
    add("xl-prep", ["--format", "word", "--vocab", work / "moses_vocab.txt", "--test", text,
                    "--out", work / "prep"])
    add("xl-prep", ["--format", "word", "--train", text, "--tokenization", "moses", "--out",
                    work / "prep"])
    add("xl-prep", ["--format", "byte", "--train", text, "--tokenization", "wikitext", "--out",
                    work / "prep"])
    add("xl-prep", ["--format", "word", "--train", text, "--pretokenized", "--out",
                    work / "prep"])

    # Names longer than the file system takes once xl adds to them, or as given.
    add("xl-average", ["--run", r, "--last", "2", "--out", "a" * 253])
    add("xl-eval", ["--run", r, "--checkpoint", "c" * 256, "--max-steps", "1"])
    # Imports Hugging Face has no model for, damaged headers, weights that are no weights.
    imported = ["--set", f"data.dir={work / 'words'}", "--set", f"run.dir={work / 'imported'}"]
    txl_weights = work / "hf" / "txl" / "model.safetensors"
    add("xl-import", ["--config", TXL, "--set", "model.transformer_xl.attn_type=absolute"]
        + imported + ["--weights", txl_weights])
    add("xl-import", ["--config", CHAR, "--set", f"data.dir={work / 'bytes'}", "--set",
                      f"run.dir={work / 'imported'}", "--weights", txl_weights])
    for name in ["st_notjson", "st_zero", "st_array", "st_notutf8", "st_entry", "st_overlap",
                 "st_twice", "txl_nan",
                 "txl_int"]:
        add("xl-import", ["--config", TXL] + imported
            + ["--weights", work / "hf" / f"{name}.safetensors"])
    # Word corpora that are no UTF-8 text, as --format pieces refuses them.
    for name in ["utf16.txt", "noise.bin", "nul.txt", "latin1.txt"]:
        add("xl-prep", ["--format", "word", "--train", work / name, "--out", work / "prep"])
    # Vocabulary flags beside a vocabulary reused.
    for flags in [["--min-freq", "2"], ["--max-size", "10"], ["--vocab-from", "all"],
                  ["--tokenization", "none"]]:
        add("xl-prep", ["--vocab", work / "words" / "vocab.txt", "--test", text, "--out",
                        work / "prep"] + flags)
    # A run inside another run, or inside its checkpoints.
    for inside in [r / "sub", r / "checkpoints" / "sub"]:
        out.append(("xl-train", train + ["--set", f"run.dir={inside}"], {}))
        add("xl-import", ["--config", TXL, "--set", f"data.dir={work / 'words'}", "--set",
                          f"run.dir={inside}", "--weights", txl_weights])
    # A sweep's folder holding the user's own table; a plot of a format xl-compare cannot draw.
    add("xl-sweep", ["-c", TXL, "--set", f"data.dir={work / 'words'}", "train.max_step=2",
                     "--dir", work / "own_sweep", "--grid", "train.lr=1,2"])
    add("xl-compare", [r, "--plot", work / "curves.jpg"])
    # A window a model with a memory never reads; no bench mode; a home folder the shell kept.
    add("xl-sample", ["--run", r, "--tokens", "2", "--window", "8"])
    add("xl-bench", ["--config", TXL, "--modes", ""])
    for value in ["~", "~/runs/x"]:
        out.append(("xl-train", train + ["--set", f"run.dir={value}"], {}))
    # Checkpoints that are no files: a run whose best.pt is a folder, links to nothing or to a
    # device, a pipe, a folder.
    add("xl-eval", ["--run", work / "rdir", "--max-steps", "1"])
    for checkpoint in [work / "dangling.pt", work / "zero.pt", work / "fifo", work / "notes"]:
        add("xl-eval", ["--run", r, "--checkpoint", checkpoint, "--max-steps", "1"])
    # A data.dir that is a file, a config with a NUL byte, a classifier's reviews too short.
    out.append(("xl-train", train + new_run() + ["--set", f"data.dir={work / 'afile'}"], {}))
    add("xl-train", ["--config", work / "nul.yaml"] + new_run())
    # A config under configs/ folder names of before (configs/txl/, configs/char/).
    add("xl-train", ["--config", ROOT / "configs" / "txl" / "tiny.yaml"] + new_run())
    out.append(("xl-train", [BIN / "xl-train", "--config", XLNET_CLS, "--set",
                             f"data.dir={work / 'nsmc'}", "--set", "train.tgt_len=2"]
                + new_run(), {}))
    # Another run's data, and another family's config, for a trained run.
    add("xl-eval", ["--run", r, "--set", f"data.dir={work / 'bytes'}", "--max-steps", "1"])
    add("xl-export", ["--run", r, "--config", CHAR, "--set", f"data.dir={work / 'bytes'}",
                      "--out", work / "exp"])

    # A second probe's findings (docs/integrity.md): configs that are no tree of values.
    for config in ["loop_model.yaml", "loop_train.yaml", "loop_list.yaml", "doc_end.yaml",
                   "str_tag.yaml", "base_empty.yaml", "custom_tag.yaml", "empty.yaml",
                   "comments.yaml", "merge_key.yaml", "tab_indent.yaml"]:
        add("xl-train", ["--config", work / config, "--set", f"data.dir={work / 'words'}"]
            + new_run())
    add("xl-sweep", ["-c", work / "loop_train.yaml", "--dir", work / "sweep", "--grid",
                     "train.lr=1,2", "--dry-run"])
    out.append(("xl-train", train + new_run() + ["--set", "train.lr=!foo 1"], {}))
    # The parity checker's reference folder and tolerance.
    for argv in [["--ref", work / "missing"], ["--ref", work / "notes"],
                 ["--ref", work / "notes", "--tolerance", "nan"],
                 ["--ref", work / "notes", "--tolerance", "-1"]]:
        add("xl-parity-check", ["--config", TXL] + argv)
    # Scratch space that is no folder; outputs over the input, with --force too.
    for tmpdir in [work / "missing", work / "afile"]:
        out.append(("xl-eval", [BIN / "xl-eval", "--run", r, "--file", text],
                    {"TMPDIR": str(tmpdir)}))
    for flag in ["--per-token", "--json", "--dump-batches"]:
        add("xl-eval", ["--run", r, "--file", work / "victim.txt", flag, work / "victim.txt",
                        "--force"])
    add("xl-predict", ["--run", x_run, "--file", work / "victim.txt", "--out",
                       work / "victim.txt", "--force"])
    # A lock that is a link; progress intervals no clock keeps; a seed past 64 bits.
    add("xl-train", ["--config", work / "rlock" / "config.yaml", "--set",
                     f"run.dir={work / 'rlock'}", "--resume"])
    for value in ["nan", "0", "1e-300", "1e400", "-1"]:
        add("xl-prep", xlnet_prep + ["--progress-seconds", value])
    add("xl-sample", sample + ["--seed", "18446744073709551615"])
    # Results that cannot be written: a full standard output.
    for command in [f"{BIN / 'xl-eval'} --run {r} --max-steps 1",
                    f"{BIN / 'xl-train'} -c {TXL} --dump-config",
                    f"{BIN / 'xl-compare'} {r}"]:
        out.append(("stdout", ["bash", "-c", f"exec {command} >/dev/full"], {}))
    # Corpora of no words, a vocabulary of special tokens alone; no examples; a broken run.
    add("xl-prep", ["--train", work / "blanks.txt", "--out", work / "prep"])
    add("xl-prep", prep + ["--min-freq", "1000000"])
    add("xl-predict", ["--run", x_run, "--file", work / "blank_lines.txt"])
    add("xl-compare", [work / "rbroken"])
    return out
