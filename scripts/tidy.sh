#!/usr/bin/env bash
# Runs clang-tidy (the checks of .clang-tidy, warnings as errors) over src/ and apps/. Configures
# build-tidy/ without the precompiled header first (clang cannot read GCC's), which takes seconds;
# nothing is compiled. Each file still parses all of LibTorch (half a minute); the clang-tidy of
# .venv (scripts/requirements.txt) checks only what is not in a system header, where Debian's
# clang-tidy 14 spent more time again matching LibTorch's declarations.
#   scripts/tidy.sh [FILE...]      (default: every .cpp of src/ and apps/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${XL_TIDY_DIR:-build-tidy}
venv=.venv
[ -x "$venv/bin/clang-tidy" ] ||
  { echo "tidy: $venv/bin/clang-tidy not found: run scripts/bootstrap.sh"; exit 1; }
# shellcheck disable=SC2086
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXL_USE_PCH=OFF ${XL_CMAKE_ARGS:-} \
  >"$build.configure.log" 2>&1 ||
  { tail -40 "$build.configure.log"; echo "tidy: CMake configure failed"; exit 1; }
files=("$@")
[ ${#files[@]} -gt 0 ] || mapfile -t files < <(git ls-files --cached --others --exclude-standard 'src/*.cpp' 'apps/*.cpp')
log="$build/tidy.log"
status=0
"$venv/bin/python" "$venv/bin/run-clang-tidy.py" -clang-tidy-binary "$venv/bin/clang-tidy" \
  -quiet -hide-progress -p "$build" -j "$(nproc)" "${files[@]}" >"$log" 2>&1 || status=$?
sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -v -e '^Suppressed [0-9]* warnings' -e '^Use -header-filter=' \
  -e 'warnings* generated' -e '^Running clang-tidy in ' -e '^$' || true
if [ "$status" -ne 0 ]; then
  echo "tidy: clang-tidy found problems (above; full log: $log)"
  exit 1
fi
echo "tidy: ${#files[@]} files pass .clang-tidy"
