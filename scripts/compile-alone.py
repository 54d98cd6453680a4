#!/usr/bin/env python3
"""Parses every source of src/ and apps/ as a translation unit of its own, and every header that
no source includes first, so that an include a file lacks fails here and not in someone's build.

The build compiles in unity batches (several .cpp in one unit), where a file can use what an
earlier file of its batch included; scripts/tidy.sh batches too. Here each .cpp but the first
of its batch (compiled alone by the build: nothing comes before it) is parsed alone
(-fsyntax-only) with the flags and the precompiled header its target compiles it with (from
the build's compile_commands.json; a unity batch's members get the batch's flags), sources that
only another configuration compiles (src/runtime/no_cuda.cpp beside a CUDA LibTorch) with those
of their folder's. A .cpp that has a header of its own includes it first, so that parsing the
.cpp checks the header alone too (refused otherwise); a header without a .cpp is parsed in a
unit that includes it alone. The tests' sources are left to their build (about 90 more units
at ~3 s each: loading LibTorch's precompiled header dominates).

Usage: scripts/compile-alone.py [--build DIR] [--jobs N] [FILE...]
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MEMBER = re.compile(r'^#include "(.+)"$', re.M)
INCLUDE = re.compile(r'^\s*#\s*include\s+[<"]([^>"]+)[>"]', re.M)


def tracked(*patterns):
    # new files too, not yet added
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard",
                          *patterns], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    return [ROOT / name for name in out.split()]


def parse_flags(entry):
    """The entry's compiler and flags, without its input and output."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    if Path(args[0]).name == "ccache":
        args = args[1:]
    out = args.index("-o")
    args = args[:out] + args[out + 2:]
    return [a for a in args if a not in ("-c", entry["file"])]


def units(build):
    """(source, flags) for each .cpp the build compiles in a unity batch, and the flags of each
    folder of src/ and apps/, for the sources compiled in no batch here."""
    sources, folders = {}, {}
    for entry in json.loads((build / "compile_commands.json").read_text()):
        batch = Path(entry["file"])
        if "Unity" not in batch.parts:
            continue  # compiled alone by the build already (the kernels, the launcher)
        flags = parse_flags(entry)
        for n, member in enumerate(MEMBER.findall(batch.read_text())):
            path = Path(member)
            # the first of a batch is compiled alone by the build: nothing comes before it
            sources[path] = flags if n > 0 else None
            folders.setdefault(path.parent, flags)
    return sources, folders


def own_header(source):
    """The header of src/<folder>/<name>.cpp: include/xl/<folder>/<name>.h or src/'s."""
    if ROOT / "src" not in source.parents:
        return None
    relative = source.relative_to(ROOT / "src").with_suffix(".h")
    for header in (ROOT / "include" / "xl" / relative, ROOT / "src" / relative):
        if header.exists():
            return header
    return None


def plan(build, scratch, only):
    """The units to parse, (what, flags, file), and the problems found before parsing; `only`:
    the files to parse (all when empty)."""
    sources, folders = units(build)
    jobs, problems, first = [], [], set()
    for source in tracked("src/*.cpp", "apps/*.cpp"):
        flags = sources[source] if source in sources else folders.get(source.parent)
        if flags is not None and (not only or source in only):
            jobs.append((source.relative_to(ROOT), flags, source))
        header = own_header(source)
        if header is None:
            continue
        includes = INCLUDE.findall(source.read_text())
        if includes and header.name == Path(includes[0]).name:
            first.add(header)
        else:
            problems.append(
                f"{source.relative_to(ROOT)}: include its own header "
                f"{header.relative_to(ROOT)} first, so that parsing it alone checks the header")
    any_flags = next(iter(folders.values()))
    for header in tracked("include/*.h", "src/*.h"):
        if header in first or (only and header not in only):
            continue
        unit = scratch / (str(header.relative_to(ROOT)).replace("/", "_") + ".cpp")
        unit.write_text(f'#include "{header}"\n')
        flags = folders.get(ROOT / "src" / header.parent.name, any_flags)
        jobs.append((header.relative_to(ROOT), flags, unit))
    return jobs, problems


def parse(job, build):
    what, flags, unit = job
    result = subprocess.run([*flags, "-fsyntax-only", str(unit)], cwd=build,
                            capture_output=True, text=True)
    return what, result.returncode, result.stderr


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, default=ROOT / os.environ.get("XL_BUILD_DIR", "build"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("files", nargs="*", type=Path, help="only these (default: all)")
    args = parser.parse_args()
    only = {path.resolve() for path in args.files}
    if not (args.build / "compile_commands.json").exists():
        sys.exit(f"compile-alone: {args.build}/compile_commands.json not found: build first "
                 "(scripts/build.sh)")
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="xl-alone-") as scratch:
        jobs, problems = plan(args.build, Path(scratch), only)
        with ThreadPoolExecutor(args.jobs) as pool:
            for what, status, errors in pool.map(lambda job: parse(job, args.build), jobs):
                if status != 0:
                    problems.append(f"{what}: does not compile alone\n{errors}")
    for problem in problems:
        print(problem, file=sys.stderr)
    headers = sum(1 for what, _, _ in jobs if what.suffix == ".h")
    print(f"compile-alone: {len(jobs) - headers} sources and {headers} headers parsed alone, "
          f"{args.jobs} at a time, in {time.monotonic() - start:.0f} s; "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
