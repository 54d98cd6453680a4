#!/usr/bin/env bash
# Configures and builds xl into build/ (or $XL_BUILD_DIR). Extra CMake flags: $XL_CMAKE_ARGS.
# Targets to build may be given as arguments (default: everything).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${XL_BUILD_DIR:-build}
jobs=${XL_JOBS:-$(nproc)}
# shellcheck disable=SC2086
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${XL_CMAKE_ARGS:-} >"$build.configure.log" 2>&1 ||
  { tail -40 "$build.configure.log"; echo "build: CMake configure failed (full log: $build.configure.log)"; exit 1; }
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build" -j "$jobs" "${targets[@]}"
