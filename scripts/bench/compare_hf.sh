#!/usr/bin/env bash
# Our training step against Hugging Face's on the same config, batch, segment length, memory and
# threads, in one run, on random data: TransfoXLLMHeadModel for Transformer-XL configs,
# XLNetLMHeadModel for XLNet pretraining configs (same num_predict, bi_data, reuse_len).
# Usage: scripts/bench/compare_hf.sh CONFIG N_TOKEN [STEPS] [THREADS] [--set k=v ...]
# (scripts/bench/compare.py takes more rounds, interleaved, and kimiyoung's code.)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
config=$1 n_token=$2 steps=${3:-10} threads=${4:-$(nproc)}
shift $(($# < 4 ? $# : 4))
exec "${XL_PYTHON:-$root/.venv/bin/python}" "$root/scripts/bench/compare.py" "$config" "$n_token" \
  --steps "$steps" --threads "$threads" "$@"
