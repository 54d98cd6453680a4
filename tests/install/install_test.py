#!/usr/bin/env python3
"""xl as a library, installed: `cmake --install` into a temporary prefix, then examples/ built
against that prefix alone and run on a tiny run (ctest: e2e.install, after the build).

Checks that
  - the installed tree holds no path of the source or build folder (they are the machine's
    that built it), and still works moved to another folder;
  - xl/xl.h compiles alone with only the installed include folder and LibTorch's;
  - docs/library.md's configure and build lines, as written, build examples/ against the
    prefix alone (moved to $HOME/opt/xl) with neither Python nor CUDA's folder on PATH; the
    project configures again, and with -DTorch_DIR=<torch> (no Python asked for torch);
  - the examples link neither cairo nor CLI11 nor SentencePiece's trainer (the layers that need
    them are not xl::xl's);
  - score_text gives xl-eval --file's perplexity to 1e-6, and generate_text xl-sample's text
    for the same seed (the installed commands' own), on a run whose data folder is gone.

  XL_BUILD_DIR=build python3 tests/install/install_test.py [--keep]
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("XL_BUILD_DIR", ROOT / "build")).resolve()
PYTHON = ROOT / ".venv" / "bin" / "python"
if not PYTHON.exists():
    PYTHON = pathlib.Path(sys.executable)


def run(args, **kwargs):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(map(str, args))}\n{r.stdout}{r.stderr}")
    return r


def holding(prefix, needle, allowed):
    """The installed files whose bytes hold `needle` other than as the start of `allowed` (where
    a dependency is: LibTorch in the project's .venv, which the commands' RPATH names)."""
    found = []
    for path in prefix.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes().replace(allowed.encode(), b"")
            if needle.encode() in data:
                found.append(str(path.relative_to(prefix)))
    return found


def library_md_lines():
    """The commands of docs/library.md's block that configures and builds a user's project."""
    text = (ROOT / "docs" / "library.md").read_text()
    start = text.index("```bash", text.index("## Link")) + len("```bash")
    block = text[start:text.index("```", start)].strip()
    if "cmake -S . -B build" not in block:
        sys.exit(f"docs/library.md's Link block is no configure line:\n{block}")
    return block


def main():
    keep = "--keep" in sys.argv
    work = pathlib.Path(tempfile.mkdtemp(prefix="xl-install-test-"))
    installed = work / "installed"
    run(["cmake", "--install", BUILD, "--prefix", installed])
    torch_prefix = run([PYTHON, "-c", "import torch; print(torch.utils.cmake_prefix_path)"])
    torch_prefix = pathlib.Path(torch_prefix.stdout.strip())
    torch_root = str(torch_prefix.parent.parent)  # .../site-packages/torch
    for folder in {ROOT, BUILD}:
        leaks = holding(installed, str(folder) + "/", torch_root)
        if leaks:
            sys.exit(f"the installed tree names {folder}: {', '.join(sorted(leaks)[:10])}")
    # Moved after installing, to where docs/library.md installs it: nothing in it may depend on
    # where it was put.
    home = work / "home"
    prefix = home / "opt" / "xl"
    prefix.parent.mkdir(parents=True)
    installed.rename(prefix)
    torch_include = pathlib.Path(torch_root) / "include"
    run(["c++", "-std=c++17", "-fsyntax-only", "-I", prefix / "include", "-I", torch_include,
         "-x", "c++", prefix / "include" / "xl" / "xl.h"])
    # docs/library.md's lines as written, in a user's own project (a copy of examples/): the
    # prefix alone, found by its recorded LibTorch, with no Python and no CUDA folder on PATH.
    project = work / "project"
    shutil.copytree(ROOT / "examples", project)
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                           if ".venv" not in p and "cuda" not in p)
    documented = library_md_lines()
    run(["bash", "-ec", documented], cwd=project, env={**os.environ, "HOME": str(home),
                                                       "PATH": path})
    examples = project / "build"
    # Configured again (Torch_DIR cached), and with -DTorch_DIR alone; no Python to ask for
    # torch, which either once needed.
    no_python = "-DPython3_EXECUTABLE=/bin/false"
    run(["cmake", "-S", project, "-B", examples, no_python])
    run(["cmake", "-S", ROOT / "examples", "-B", work / "torch-dir", "-G", "Ninja", no_python,
         f"-DCMAKE_PREFIX_PATH={prefix}", f"-DTorch_DIR={torch_prefix / 'Torch'}"])
    for program in ("score_text", "generate_text", "time_score"):
        linked = run(["ninja", "-C", examples, "-t", "commands", program]).stdout.splitlines()[-1]
        linked += run(["ldd", examples / program]).stdout
        for unwanted in ("cairo", "CLI11", "sentencepiece_train"):
            if unwanted in linked:
                sys.exit(f"{program} links {unwanted}, which xl::xl does not need:\n{linked}")

    # A tiny run, with the installed commands.
    bin_dir = prefix / "bin"
    text = work / "text"
    text.mkdir()
    valid = subprocess.check_output(["xz", "-dc", ROOT / "data/wikitext-2/wiki.valid.tokens.xz"])
    (text / "train.txt").write_bytes(valid)
    (text / "mine.txt").write_text(
        "the film was released in the united states \n"
        " = = reception = = \n"
        "critics praised the game , and it sold well in japan . \n")
    run([bin_dir / "xl-prep", "--train", text / "train.txt", "--valid", text / "train.txt",
         "--test", text / "train.txt", "--out", work / "data"])
    run([bin_dir / "xl-train", "--config", ROOT / "configs/transformer_xl/tiny.yaml", "--set",
         f"data.dir={work / 'data'}", "--set", f"run.dir={work / 'run'}", "--set",
         "train.max_step=20", "--set", "train.warmup_step=2"])
    shutil.rmtree(work / "data")  # the run keeps its tokenizer

    evaluated = run([bin_dir / "xl-eval", "--run", work / "run", "--file", text / "mine.txt",
                     "--json", work / "eval.json"])
    want = json.loads((work / "eval.json").read_text())["ppl"]
    scored = run([examples / "score_text", work / "run", text / "mine.txt"]).stdout
    got = float(scored.split()[1])
    if abs(got - want) > 1e-6 * want:
        sys.exit(f"score_text: ppl {got!r}, xl-eval --file: {want!r}\n{evaluated.stdout}")

    sampled = run([bin_dir / "xl-sample", "--run", work / "run", "--prompt", "the game",
                   "--tokens", "30", "--seed", "3"]).stdout
    generated = run([examples / "generate_text", work / "run", "the game", "30", "3"]).stdout
    if generated != sampled:
        sys.exit(f"generate_text gave\n{generated!r}\nxl-sample\n{sampled!r}")
    print(f"installed, moved, built the examples: ppl {got:.6f} as xl-eval's, "
          f"{len(generated.split())} words as xl-sample's")
    if keep:
        print(f"kept {work}")
    else:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
