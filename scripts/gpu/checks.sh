#!/usr/bin/env bash
# The whole GPU check in one device call: build, the `gpu` tests, the GPU benchmarks of
# docs/benchmarks/gpu.md (with a profile of the wt103_base steps), then the whole test suite on
# the CUDA build (its apps pick the GPU: train.device is auto) for the time left. The benchmarks
# come before the suite because a lent GPU's minutes are few: each phase has a deadline, so one
# that runs long leaves the others their logs. On the CPU machine first:
# `bash scripts/gpu/prepare.sh`, and the parity tests' transformers 4.35.2 as wheels in .whl/
# (the GPU machine's is too new for TransfoXL):
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --platform manylinux2014_x86_64 -d .whl transformers==4.35.2 tokenizers==0.15.2 \
#     huggingface_hub==0.20.3
# NVIDIA's Transformer-XL is timed beside xl when prepare.sh copied it (XL_NVIDIA_TXL).
# Then the device tool: carry [".device", ".whl"], command `bash scripts/gpu/checks.sh`, with a
# timeout a little over XL_DEADLINE_S.
# Logs land in $OUT: build.txt, gpu_tests.txt, bench.txt, tests.txt.
set -uo pipefail
out=${OUT:-/tmp/xl-gpu}
mkdir -p "$out"
t0=$SECONDS
# Limits (seconds from the start): after XL_BENCH_S no benchmark starts or runs on; the whole
# suite stops at XL_DEADLINE_S.
bench_deadline=${XL_BENCH_S:-400}
deadline=${XL_DEADLINE_S:-540}
phase() { echo "[$((SECONDS - t0)) s] $*"; }

if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
phase build
if ! bash .device/build.sh >"$out/build.txt" 2>&1; then
  tail -60 "$out/build.txt"
  exit 1
fi
head -2 "$out/build.txt"
# shellcheck disable=SC1091
source .device/env.sh
export XL_PYTHON=python3

phase "gpu tests"
timeout 150 ctest --test-dir build-gpu -L gpu --output-on-failure >"$out/gpu_tests.txt" 2>&1
tail -4 "$out/gpu_tests.txt"

phase benchmarks
bin=build-gpu/bin
bench() { # one benchmark, its command echoed above its output
  echo "\$ $*"
  ((SECONDS - t0 < bench_deadline)) || { echo "skipped: past the deadline"; return; }
  timeout $((bench_deadline - SECONDS + t0)) "$@" 2>&1 | grep -v '^\[.*\] \[debug\]'
  echo
}
{
  # The paper's evaluation (64 after 640 of memory) at batch 16; float32 runs on TF32
  # (train.tf32, on by default). The profile says where a step's time goes.
  for bf16 in true false; do
    bench "$bin/xl-bench" -c configs/transformer_xl/wt103_base.yaml --n-token 267735 --modes train,eval \
      --set train.bf16=$bf16 --set eval.batch_size=16 --profile 25
  done
  # The bf16 steps and segments again without CUDA graphs (train.cuda_graphs, on by default on
  # CUDA): what the graphs of the layer stack save on this card.
  bench "$bin/xl-bench" -c configs/transformer_xl/wt103_base.yaml --n-token 267735 --modes train,eval \
    --set train.bf16=true --set eval.batch_size=16 --set train.cuda_graphs=false
  # Hugging Face's and NVIDIA's steps on the same config and card, both precisions interleaved
  # (transformers from .whl; NVIDIA's model from .device/nvidia when prepare.sh copied it)
  peers=()
  [ -f .device/nvidia/mem_transformer.py ] && peers=(--nvidia .device/nvidia)
  XL_BUILD_DIR=build-gpu bench python3 scripts/bench/compare.py configs/transformer_xl/wt103_base.yaml \
    267735 --device cuda --rounds 1 --threads 16 --precisions float32,bf16 "${peers[@]}"
  XL_BUILD_DIR=build-gpu bench scripts/bench/memory_vs_vanilla.sh 3800 128 16 4 \
    --set train.device=cuda
  bench "$bin/xl-bench" -c configs/char_transformer/enwik8_t64.yaml --n-token 256 --modes train \
    --set train.bf16=true --profile 10
  bench "$bin/xl-bench" -c configs/xlnet/mini_ko.yaml --n-token 32000 --modes train,eval \
    --set train.bf16=true --profile 10
} >"$out/bench.txt" 2>&1
grep -E '^\$| (train|eval|vanilla) |memory / vanilla|speed ratio|median|profiled|rror' \
  "$out/bench.txt" | cut -c1-300

phase "whole suite"
timeout $((deadline - SECONDS + t0)) ctest --test-dir build-gpu -j 12 -LE gpu --timeout 240 \
  --output-on-failure >"$out/tests.txt" 2>&1
grep -E 'tests passed|Failed|\*\*\*|Timeout' "$out/tests.txt" | head -40
# A backtrace of the first tests that crashed (the machine has cuda-gdb, not gdb).
crashed=$(grep -oE '#[0-9]+: [A-Za-z0-9_./]+ \.+\*\*\*Exception' "$out/tests.txt" |
  awk '{print $2}' | head -2)
for t in $crashed; do
  ((SECONDS - t0 < deadline)) || break
  read -ra cmd < <(ctest --test-dir build-gpu -N -V -R "^${t}\$" | sed -n 's/.*Test command: //p')
  echo "== backtrace of $t: ${cmd[*]}"
  (cd build-gpu/tests &&
    timeout 60 cuda-gdb -batch -ex run -ex bt --args "${cmd[@]}" 2>&1 | tail -30)
done >>"$out/tests.txt"
phase finished
