#!/usr/bin/env bash
# Builds the fuzz targets (tests/fuzz: clang, libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer on all of xl) into build-fuzz/ and runs each for SECONDS, starting
# from seed files that xl's own writers make from real text (WikiText-2) and from configs/.
# Any crash, sanitizer report, hang (10 s per input), memory blow-up or exception other than a
# clear user error fails the run; the input that caused it is kept under build-fuzz/findings/.
#   scripts/fuzz.sh [SECONDS] [TARGET...]   (default: 10 s each, every target)
# Targets: config vocab token_file pieces safetensors checkpoint labelled.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${1:-10}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(config vocab token_file pieces safetensors checkpoint labelled)
build=${XL_FUZZ_DIR:-build-fuzz}
cxx=$(command -v clang++-14 || command -v clang++) || { echo "fuzz: clang++ not found"; exit 1; }
CXX=$cxx cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXL_FUZZ=ON \
  -DXL_BUILD_TESTS=OFF >"$build.configure.log" 2>&1 ||
  { tail -40 "$build.configure.log"; echo "fuzz: CMake configure failed"; exit 1; }
cmake --build "$build" -j "$(nproc)" --target "${targets[@]/#/xl-fuzz-}"

work=$build/fuzz-work
mkdir -p "$work" "$build/findings"
# head closes the pipe early: xz's SIGPIPE is expected.
[ -s "$work/text.txt" ] ||
  { xz -dc data/wikitext-2/wiki.valid.tokens.xz || true; } | head -c 300000 >"$work/text.txt"
export XL_FUZZ_TEXT=$work/text.txt
# Leaks are not findings (LibTorch keeps global state to the end); memory growth is, through
# -rss_limit_mb.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
for t in "${targets[@]}"; do
  seeds=$work/seeds-$t
  rm -rf "$seeds"
  XL_FUZZ_SEEDS=$seeds "$build/bin/xl-fuzz-$t" >"$work/seeds-$t.log" 2>&1 ||
    { cat "$work/seeds-$t.log"; echo "fuzz: $t could not write its seeds"; exit 1; }
  corpus=$work/corpus-$t
  mkdir -p "$corpus"
  extra=()
  [ "$t" != config ] || extra=(configs/transformer_xl configs/xlnet configs/char_transformer)
  log=$work/run-$t.log
  if "$build/bin/xl-fuzz-$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$build/findings/$t-" "$corpus" "$seeds" \
    "${extra[@]}" >"$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$')
    echo "fuzz: $t: $runs inputs in ${seconds} s, no finding (corpus $(ls "$corpus" | wc -l) files)"
  else
    grep -m1 -e 'finding:' -e 'ERROR: ' -e 'runtime error' "$log" || tail -20 "$log"
    echo "fuzz: $t: FOUND A PROBLEM (log: $log; input: $build/findings/$t-*)"
    status=1
  fi
done
exit $status
