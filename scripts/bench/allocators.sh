#!/usr/bin/env bash
# xl's CPU allocator (runtime/cpu_cache with glibc tuned by mallopt) against glibc's defaults and
# against mimalloc, jemalloc and tcmalloc put in front of malloc with LD_PRELOAD (Debian's
# libmimalloc2.0, libjemalloc2, libtcmalloc-minimal4), and xl's cache with tcmalloc under it
# for the smaller blocks, on one config's training step: alone, then two runs of one thread each
# sharing the cores. Rounds interleave the allocators.
# Usage: [XL_ALLOCATORS="xl_cache tcmalloc ..."] scripts/bench/allocators.sh [ROUNDS] [xl-bench arguments ...]
# (default: every allocator, the mid-size step of docs/benchmarks.md, 3 rounds)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${XL_BUILD_DIR:-$root/build}/bin
rounds=${1:-3}
shift $(($# > 0 ? 1 : 0))
args=("$@")
if [ ${#args[@]} -eq 0 ]; then
  args=(-c "$root/configs/transformer_xl/wt103_base.yaml" --n-token 267735 --modes train --warmup 1
    --steps 3 --set train.batch_size=4 --set model.n_layer=4 --set train.device=cpu)
fi
lib=/usr/lib/x86_64-linux-gnu
declare -A preload=([xl_cache]="" [glibc]="" [mimalloc]=$lib/libmimalloc.so.2
  [jemalloc]=$lib/libjemalloc.so.2 [tcmalloc]=$lib/libtcmalloc_minimal.so.4
  [xl_cache+tcmalloc]=$lib/libtcmalloc_minimal.so.4)
read -r -a order <<<"${XL_ALLOCATORS:-xl_cache glibc mimalloc jemalloc tcmalloc xl_cache+tcmalloc}"
for name in "${order[@]}"; do
  [ -n "${preload[$name]+set}" ] || { echo "allocators: unknown allocator '$name'" >&2; exit 1; }
done
for name in "${order[@]}"; do
  [ -z "${preload[$name]}" ] || [ -f "${preload[$name]}" ] ||
    { echo "allocators: ${preload[$name]} is missing (apt-get install it)" >&2; exit 1; }
done

# One xl-bench: prints "ms/step minor-faults peak-MiB" of its run.
bench() { # name threads
  local env=(env)
  [[ "$1" = xl_cache* ]] || env+=(XL_ALLOCATOR=malloc)
  [ -z "${preload[$1]}" ] || env+=(LD_PRELOAD="${preload[$1]}")
  local out
  out=$("${env[@]}" /usr/bin/time -f 'faults %R' "$bin/xl-bench" "${args[@]}" \
    --set train.threads="$2" 2>&1 | grep -E '^\{|^faults')
  python3 -c '
import json, sys
lines = sys.stdin.read().splitlines()
r = json.loads(next(l for l in lines if l.startswith("{")))["results"][0]
faults = next(l for l in lines if l.startswith("faults")).split()[1]
print("%.1f %s %.0f" % (r["ms_per_iteration"], faults, r["peak_memory_mib"]))' <<<"$out"
}

echo "allocator | round | alone, 2 threads: ms/step, minor faults, peak MiB | shared, 1 thread each: ms/step of the two"
for r in $(seq "$rounds"); do
  for name in "${order[@]}"; do
    alone=$(bench "$name" 2)
    bench "$name" 1 >"/tmp/xl_alloc_a.$$" &
    b=$(bench "$name" 1)
    wait
    a=$(cat "/tmp/xl_alloc_a.$$")
    echo "$name | $r | $alone | ${a%% *} ${b%% *}"
  done
done
rm -f "/tmp/xl_alloc_a.$$"
