#!/usr/bin/env python3
"""Checks the library's layers: docs/architecture.md against the build and the includes.

docs/architecture.md holds two fenced blocks: `layers` (one line per folder of src/ and
include/xl/, "folder: the folders it uses directly", each named on an earlier line) and
`levels` (the folders by level, highest first: a folder's level is one above the highest of
its folders'). This script fails, naming the file and line, when
  - a folder of src/ or include/xl/ is missing from the layers, or a layer has no folder;
  - the levels drawn are not those the layers give;
  - an `xl_layer(<folder> DEPS ...)` of src/CMakeLists.txt names other folders than its layer;
  - a file of src/<folder>/ or include/xl/<folder>/ includes "xl/<other>/..." where <other> is
    neither one of the folders its layer uses nor one below them;
  - a model family's folder (models/<family>/) is seen from outside: its headers are included by
    files other than its own and the registry's (src/models/registry.cpp), or code outside
    config/ and the family folders compares a type with a family's name (`type == "xlnet"`).
    The rest of xl asks the family's descriptor (models/family.h) instead;
  - a source of a folder (src/<folder>/*.cpp, include/xl/<folder>/*.h, a family's folder too)
    is not named, in backticks, in that folder's row of the table in docs/architecture.md
    (`| \`folder/\` | ... |`), or a folder has no row;
  - a file of src/, apps/ or include/ includes a CUDA header (c10/cuda, ATen/cuda, the CUDA
    runtime's) other than the runtime files that talk to CUDA (CUDA_FILES): the rest of xl asks
    runtime/cuda.h, and the graph code's interface needs none;
  - a file outside app/ and apps/ includes CLI11 (command-line parsing is the apps' alone), or a
    file of xl-prep's command line (apps/xl_prep.cpp, app/prep.*) names a flag of a format
    (one described in src/prep/prep_formats.cpp, Described("--min-freq", ...)): the formats are data there, so
    that a new tokenizer edits src/prep/ alone;
  - a source or header of src/, include/ or apps/ is longer than MAX_LINES lines (split it
    where it holds two things);
  - a family's folder includes the front door of models/ (factory.h, memory_estimate.h,
    registry.h, hf.h: what asks the registry), which sits above the families; a family builds
    from the kit below them (kit.h, memory_shape.h, family.h, language_model.h, ...).
The build runs it before compiling anything (src/CMakeLists.txt), and CI with it.

Usage: scripts/check-layers.py [--root DIR]
"""

import argparse
import re
import sys
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s+"xl/([A-Za-z0-9_]+)/')
FAMILY_INCLUDE = re.compile(r'^\s*#\s*include\s+"xl/models/([A-Za-z0-9_]+)/')
FAMILY_NAME = re.compile(r'\btype\s*[!=]=\s*"([A-Za-z0-9_]+)"')
REGISTRY = Path("src/models/registry.cpp")
MODELS_INCLUDE = re.compile(r'^\s*#\s*include\s+"xl/models/([A-Za-z0-9_]+\.h)"')
FRONT_DOOR = {"factory.h", "memory_estimate.h", "registry.h", "hf.h"}
LAYER_CALL = re.compile(r"xl_layer\(\s*([A-Za-z0-9_]+)((?:\s+[^)]*)?)\)", re.S)


def fenced_block(text, name, where):
    """The lines of the fenced block ```<name> of `text` and the line number of its first."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "```" + name:
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), None)
            if end is None:
                raise SystemExit(f"{where}:{i + 1}: the ```{name} block is not closed")
            return lines[i + 1:end], i + 2
    raise SystemExit(f"{where}: no ```{name} block (see scripts/check-layers.py)")


def read_layers(doc):
    """{folder: [folders it uses directly]} in the order written, each use named earlier."""
    lines, first = fenced_block(doc.read_text(), "layers", doc)
    layers = {}
    for number, line in enumerate(lines, first):
        if not line.strip():
            continue
        folder, sep, uses = line.partition(":")
        folder = folder.strip()
        if not sep or not re.fullmatch(r"[a-z0-9_]+", folder):
            raise SystemExit(f"{doc}:{number}: expected 'folder: folders it uses', got '{line}'")
        if folder in layers:
            raise SystemExit(f"{doc}:{number}: {folder} is named twice")
        for use in uses.split():
            if use not in layers:
                raise SystemExit(
                    f"{doc}:{number}: {folder} uses {use}, which is not on an earlier line "
                    "(a folder uses only folders below it)")
        layers[folder] = uses.split()
    return layers


def below(layers):
    """{folder: every folder it may include: its uses and everything below them}."""
    closure = {}
    for folder, uses in layers.items():  # written bottom-up, so uses are done first
        reach = set(uses)
        for use in uses:
            reach |= closure[use]
        closure[folder] = reach
    return closure


def check_levels(doc, layers, errors):
    level = {}
    for folder, uses in layers.items():
        level[folder] = 1 + max((level[u] for u in uses), default=-1)
    expected = {}
    for folder, n in level.items():
        expected.setdefault(n, set()).add(folder)
    lines, first = fenced_block(doc.read_text(), "levels", doc)
    drawn = {}
    for number, line in enumerate(lines, first):
        words = line.split()
        if not words:
            continue
        if not words[0].isdigit():
            errors.append(f"{doc}:{number}: expected 'level folders...', got '{line}'")
            continue
        drawn[int(words[0])] = set(words[1:])
    if drawn != expected:
        want = "\n".join(
            f"  {n}  {' '.join(sorted(expected[n]))}" for n in sorted(expected, reverse=True))
        errors.append(f"{doc}:{first}: the levels drawn are not those of the layers; expected\n{want}")


def check_cmake(cmake, layers, errors):
    text = cmake.read_text()
    called = {}
    for match in LAYER_CALL.finditer(text):
        folder, rest = match.group(1), match.group(2).split()
        end = rest.index("EXTERNAL") if "EXTERNAL" in rest else rest.index("SOURCES")
        deps = rest[rest.index("DEPS") + 1:end] if "DEPS" in rest else []
        called[folder] = (deps, text.count("\n", 0, match.start()) + 1)
    for folder, (deps, number) in called.items():
        if folder not in layers:
            errors.append(f"{cmake}:{number}: xl_layer({folder}) has no line in the layers")
        elif sorted(deps) != sorted(layers[folder]):
            errors.append(
                f"{cmake}:{number}: xl_layer({folder}) DEPS {' '.join(deps) or '(none)'}; the "
                f"layers say {' '.join(layers[folder]) or '(none)'}")
    for folder in layers:
        if folder not in called:
            errors.append(f"{cmake}: no xl_layer({folder} ...) for the layer {folder}")


def check_includes(root, layers, errors):
    allowed = below(layers)
    folders = set()
    for top in (root / "src", root / "include" / "xl"):
        for path in sorted(top.rglob("*")):
            if path.suffix not in (".h", ".cpp") or not path.is_file():
                continue
            parts = path.relative_to(top).parts
            if len(parts) < 2:
                continue
            folder = parts[0]
            folders.add(folder)
            if folder not in layers:
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                match = INCLUDE.match(line)
                if match and match.group(1) != folder and match.group(1) not in allowed[folder]:
                    may = " ".join(sorted(allowed[folder])) or "no other folder"
                    errors.append(
                        f"{path.relative_to(root)}:{number}: {folder}/ includes "
                        f"xl/{match.group(1)}/, which is not below it (it may use: {may})")
    for folder in sorted(folders - set(layers)):
        errors.append(f"docs/architecture.md: the folder {folder}/ has no line in the layers")
    for folder in sorted(set(layers) - folders):
        errors.append(f"docs/architecture.md: the layer {folder} has no folder in src/ or include/xl/")


def check_families(root, errors):
    """Only a family's own folder and the registry see the family."""
    families = {p.name for p in (root / "src" / "models").glob("*") if p.is_dir()}
    families |= {p.name for p in (root / "include" / "xl" / "models").glob("*") if p.is_dir()}
    for top in (root / "src", root / "include" / "xl"):
        for path in sorted(top.rglob("*")):
            if path.suffix not in (".h", ".cpp") or not path.is_file():
                continue
            parts = path.relative_to(top).parts
            own = parts[1] if parts[0] == "models" and len(parts) > 2 else None
            name = path.relative_to(root)
            for number, line in enumerate(path.read_text().splitlines(), 1):
                match = FAMILY_INCLUDE.match(line)
                if (match and match.group(1) in families and match.group(1) != own
                        and name != REGISTRY):
                    errors.append(
                        f"{name}:{number}: includes the family folder models/{match.group(1)}/; "
                        "only that folder and src/models/registry.cpp see a family (ask its "
                        "descriptor, models/family.h)")
                door = MODELS_INCLUDE.match(line)
                if door and door.group(1) in FRONT_DOOR and own is not None:
                    errors.append(
                        f"{name}:{number}: the family folder models/{own}/ includes the front "
                        f"door xl/models/{door.group(1)}, which asks the registry; a family "
                        "builds from the kit (models/kit.h, memory_shape.h, family.h)")
                named = FAMILY_NAME.search(line)
                if (named and named.group(1) in families and parts[0] != "config"
                        and own is None):
                    errors.append(
                        f"{name}:{number}: names a family ({named.group(0)}) outside config/ "
                        "and the family folders (ask the descriptor, models/family.h)")


def check_apps(root, errors):
    """Every app of XL_APPS is run by an end-to-end test (tests/e2e/*.cpp names it)."""
    cmake = (root / "apps" / "CMakeLists.txt").read_text()
    match = re.search(r"set\(XL_APPS ([^)]*)\)", cmake)
    if not match:
        errors.append("apps/CMakeLists.txt: no set(XL_APPS ...) to check the apps' tests against")
        return
    tests = "".join(p.read_text() for p in sorted((root / "tests" / "e2e").glob("*.cpp")))
    for app in match.group(1).split():
        if not re.search(r"\b" + re.escape(app) + r"\b", tests):
            errors.append(
                f"apps/CMakeLists.txt: {app} is run by no end-to-end test (tests/e2e/*.cpp "
                "names it nowhere); docs/architecture.md says every app is")


CLI_INCLUDE = re.compile(r'^\s*#\s*include\s+[<"]CLI/')
FLAG_LITERAL = re.compile(r'"(--[a-z0-9][a-z0-9-]*)"')
# a flag's description opens with its name: Described("--min-freq", ...) or {"--min-freq", ...}
DESCRIBED = re.compile(r'(?:\{|Described\()\s*"(--[a-z0-9][a-z0-9-]*)"')
PREP_FORMATS = Path("src/prep/prep_formats.cpp")
PREP_COMMAND = (Path("apps/xl_prep.cpp"), Path("src/app/prep.cpp"), Path("include/xl/app/prep.h"))


def check_command_line(root, errors):
    """CLI11 in app/ and apps/ alone; xl-prep's command line names no format's flag."""
    for top in ("src", "include"):
        for path in sorted((root / top).rglob("*")):
            name = path.relative_to(root)
            if path.suffix not in (".h", ".cpp") or "app" in name.parts:
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if CLI_INCLUDE.match(line):
                    errors.append(
                        f"{name}:{number}: includes CLI11 outside app/ and apps/; the apps parse "
                        "command lines, the library takes values")
    formats = root / PREP_FORMATS
    flags = set(DESCRIBED.findall(formats.read_text())) if formats.exists() else set()
    for name in PREP_COMMAND:
        if not (root / name).exists():
            continue
        for number, line in enumerate((root / name).read_text().splitlines(), 1):
            for flag in sorted(set(FLAG_LITERAL.findall(line)) & flags):
                errors.append(
                    f"{name}:{number}: names {flag}, a flag of {PREP_FORMATS}'s formats; the "
                    "command line makes them from their descriptions there")


MAX_LINES = 400


def check_sizes(root, errors):
    """No file of the library or the apps over MAX_LINES lines."""
    for top in ("src", "include", "apps"):
        for path in sorted((root / top).rglob("*")):
            if path.suffix not in (".h", ".cpp") or not path.is_file():
                continue
            lines = len(path.read_text().splitlines())
            if lines > MAX_LINES:
                errors.append(
                    f"{path.relative_to(root)}: {lines} lines, over the {MAX_LINES} a file may "
                    "have (docs/architecture.md); split it where it holds two things")


CUDA_INCLUDE = re.compile(r'^\s*#\s*include\s+[<"](c10/cuda/|ATen/cuda/|cuda_runtime|cuda\.h)')
CUDA_FILES = {Path("src/runtime/cuda.cpp"), Path("src/runtime/cuda_graph_capture.cpp")}


def check_cuda_includes(root, errors):
    """CUDA's headers in the files of CUDA_FILES only."""
    for top in ("src", "apps", "include"):
        for path in sorted((root / top).rglob("*")):
            if path.suffix not in (".h", ".cpp") or not path.is_file():
                continue
            name = path.relative_to(root)
            if name in CUDA_FILES:
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if CUDA_INCLUDE.match(line):
                    errors.append(
                        f"{name}:{number}: includes a CUDA header; outside "
                        f"{', '.join(sorted(map(str, CUDA_FILES)))} xl asks runtime/cuda.h")


ROW = re.compile(r"^\|\s*`([a-z0-9_/]+)/`\s*\|(.*)\|\s*$")
NAMED = re.compile(r"`([^`]+)`")


def check_rows(root, doc, errors):
    """Every source of a folder is named in the folder's row of the table."""
    rows = {}
    for number, line in enumerate(doc.read_text().splitlines(), 1):
        match = ROW.match(line)
        if match:
            named = set()
            for token in NAMED.findall(match.group(2)):
                for word in re.split(r"[\s,()]+", token):
                    named.add(Path(word).name.split(".")[0])
            rows[match.group(1)] = (named, number)
    folders = {}
    for top, suffix in ((root / "src", ".cpp"), (root / "include" / "xl", ".h")):
        for path in sorted(top.rglob("*" + suffix)):
            relative = path.relative_to(top)
            if len(relative.parts) >= 2:
                folders.setdefault(str(relative.parent), set()).add(path.stem)
    for folder, stems in sorted(folders.items()):
        if folder not in rows:
            errors.append(f"{doc.relative_to(root)}: the folder {folder}/ has no row in the table")
            continue
        named, number = rows[folder]
        for stem in sorted(stems - named):
            errors.append(
                f"{doc.relative_to(root)}:{number}: the row of {folder}/ does not name "
                f"`{stem}` ({folder}/{stem}.*): say in a few words what it is")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    doc = args.root / "docs" / "architecture.md"
    layers = read_layers(doc)
    errors = []
    check_levels(doc, layers, errors)
    check_cmake(args.root / "src" / "CMakeLists.txt", layers, errors)
    check_includes(args.root, layers, errors)
    check_families(args.root, errors)
    check_rows(args.root, doc, errors)
    check_cuda_includes(args.root, errors)
    check_apps(args.root, errors)
    check_command_line(args.root, errors)
    check_sizes(args.root, errors)
    for error in errors:
        print(error, file=sys.stderr)
    if errors:
        print(f"check-layers: {len(errors)} problem(s); the layers are in docs/architecture.md",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
