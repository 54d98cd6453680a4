#!/usr/bin/env bash
# Runs clang-tidy (the checks of .clang-tidy, warnings as errors) over src/ and apps/. Configures
# build-tidy/ without the precompiled header first (clang cannot read GCC's), which takes seconds;
# nothing is compiled. The clang-tidy of .venv (scripts/requirements.txt) checks only what is not
# in a system header, where Debian's clang-tidy 14 spent more time again matching LibTorch's
# declarations.
#
# Parsing LibTorch takes ~25 s and our own code a few seconds, so the files are checked in
# batches: each batch is one translation unit that includes its .cpp files, so LibTorch is parsed
# once per batch (16 minutes one file at a time on the 2-core machine, about 4 in batches).
# Every check of .clang-tidy looks at one declaration or statement at a time, so a batch finds
# what the files alone would.
# A batch that does not compile as one (two files defining the same file-local name) is checked
# one file at a time instead.
#   scripts/tidy.sh [FILE...]      (default: every .cpp of src/ and apps/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${XL_TIDY_DIR:-build-tidy}
venv=.venv
[ -x "$venv/bin/clang-tidy" ] ||
  { echo "tidy: $venv/bin/clang-tidy not found: run scripts/bootstrap.sh"; exit 1; }
# shellcheck disable=SC2086
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXL_USE_PCH=OFF -DXL_UNITY_BUILD=OFF ${XL_CMAKE_ARGS:-} \
  >"$build.configure.log" 2>&1 ||
  { tail -40 "$build.configure.log"; echo "tidy: CMake configure failed"; exit 1; }
files=("$@")
[ ${#files[@]} -gt 0 ] || mapfile -t files < <(git ls-files --cached --others --exclude-standard 'src/*.cpp' 'apps/*.cpp')
batches=$build/batches
rm -rf "$batches"
# Groups the files by compile command (what build-tidy/compile_commands.json gives each): group
# g's files are listed in $batches/g<g>/files, its flags in $batches/g<g>/compile_flags.txt, so
# clang-tidy takes them for any batch written there.
"$venv/bin/python" - "$build" "$batches" "${files[@]}" <<'EOF'
import json, os, shlex, sys
build, batches, files = sys.argv[1], sys.argv[2], [os.path.abspath(f) for f in sys.argv[3:]]
entries = {os.path.abspath(os.path.join(e["directory"], e["file"])): e
           for e in json.load(open(os.path.join(build, "compile_commands.json")))}
groups = {}
# A source the build names but compiles only in another configuration (src/runtime/no_cuda.cpp,
# for a LibTorch without CUDA) is said and left out; any other source the build does not compile
# is an error.
cmake_lists = open(os.path.join(os.path.dirname(os.path.abspath(build)), "src", "CMakeLists.txt")).read()
for f in files:
    if f not in entries:
        if os.path.basename(f) in cmake_lists:
            print(f"tidy: {os.path.relpath(f)} is compiled only in another configuration: not checked")
            continue
        sys.exit(f"tidy: {os.path.relpath(f)} is not compiled by any target (not in {build}/compile_commands.json)")
    e = entries[f]
    args = e["arguments"] if "arguments" in e else shlex.split(e["command"])
    out = args.index("-o")
    flags = tuple(a for a in args[1:out] + args[out + 2:] if a not in (e["file"], f, "-c"))
    groups.setdefault(flags, []).append(f)
for g, (flags, members) in enumerate(groups.items()):
    os.makedirs(f"{batches}/g{g}")
    with open(f"{batches}/g{g}/compile_flags.txt", "w") as out:
        out.writelines(f"{a}\n" for a in flags)
    with open(f"{batches}/g{g}/files", "w") as out:
        out.writelines(f"{m}\n" for m in members)
EOF
# write_batch BATCH FILE...: one translation unit of the files; each main gets its own name.
write_batch() {
  local batch=$1 n=0 file
  shift
  for file in "$@"; do
    n=$((n + 1))
    printf '#define main xl_tidy_main_%d\n#include "%s"\n#undef main\n' "$n" "$file"
  done >"$batch"
}
# Paths are matched whole: LibTorch's own csrc/ must not count as our src/.
# shellcheck disable=SC2016
filter="^$(printf '%s' "$root" | sed 's/[].[*^$()+?{|\\]/\\&/g')/(include/xl|src|apps)/"
# tidy_batch BATCH: clang-tidy on a batch, its findings in BATCH.log. A batch that does not compile
# as one is split in two, down to single files, which are checked as the build compiles them.
tidy_batch() {
  local batch=$1 status=0 half
  local -a members
  mapfile -t members < <(sed -n 's/^#include "\(.*\)"$/\1/p' "$batch")
  if [ ${#members[@]} -eq 1 ]; then
    "$venv/bin/clang-tidy" -p "$build" --quiet --header-filter="$filter" "${members[0]}" \
      >"$batch.log" 2>&1
    return
  fi
  "$venv/bin/clang-tidy" --quiet --header-filter="$filter" "$batch" >"$batch.log" 2>&1 && return 0
  grep -q 'clang-diagnostic-error' "$batch.log" || return 1
  mv "$batch.log" "$batch.as-one.txt"
  half=$((${#members[@]} / 2))
  write_batch "${batch%.cpp}.1.cpp" "${members[@]:0:half}"
  write_batch "${batch%.cpp}.2.cpp" "${members[@]:half}"
  tidy_batch "${batch%.cpp}.1.cpp" || status=1
  tidy_batch "${batch%.cpp}.2.cpp" || status=1
  return $status
}
export -f write_batch tidy_batch
export venv build filter
for group in "$batches"/g*; do
  mapfile -t members <"$group/files"
  for ((i = 0; i < ${#members[@]}; i += 12)); do
    write_batch "$group/$((i / 12)).cpp" "${members[@]:i:12}"
  done
done
status=0
# shellcheck disable=SC2016
printf '%s\0' "$batches"/g*/[0-9]*.cpp | xargs -0 -P "$(nproc)" -I{} bash -c 'tidy_batch "$1"' _ {} ||
  status=$?
find "$batches" -name '*.log' -exec cat {} + | sed 's/\x1b\[[0-9;]*m//g' |
  grep -v -e '^Suppressed [0-9]* warnings' -e '^Use -header-filter=' -e 'warnings* generated' \
    -e '^$' || true
if [ "$status" -ne 0 ]; then
  echo "tidy: clang-tidy found problems (above; logs: $batches/g*/*.log)"
  exit 1
fi
echo "tidy: $(cat "$batches"/g*/files | wc -l) files pass .clang-tidy"
