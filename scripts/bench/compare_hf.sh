#!/usr/bin/env bash
# Our training step against Hugging Face's on the same config, batch, segment length, memory and
# threads, in one run, on random data: TransfoXLLMHeadModel for Transformer-XL configs,
# XLNetLMHeadModel for XLNet pretraining configs (same num_predict, bi_data, reuse_len).
# Usage: scripts/bench/compare_hf.sh CONFIG N_TOKEN [STEPS] [THREADS] [--set k=v ...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
config=$1 n_token=$2 steps=${3:-10} threads=${4:-$(nproc)}
shift $(($# < 4 ? $# : 4))
bin=${XL_BUILD_DIR:-$root/build}/bin
python=${XL_PYTHON:-$root/.venv/bin/python}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin/xl-train" --config "$config" --set "train.threads=$threads" --set train.device=cpu "$@" \
  --dump-config >"$tmp/resolved.yaml"
xl=$("$bin/xl-bench" --config "$tmp/resolved.yaml" --n-token "$n_token" --steps "$steps" \
  --modes train 2>/dev/null | tail -1)
hf=$("$python" "$root/scripts/bench/hf_train_step.py" --config "$tmp/resolved.yaml" \
  --n-token "$n_token" --steps "$steps" --threads "$threads" 2>/dev/null | tail -1)
"$python" - "$xl" "$hf" <<'PY'
import json, sys
xl = json.loads(sys.argv[1])["results"][0]
hf = json.loads(sys.argv[2])
print(f"xl train: {xl['input_tokens_per_s']:.0f} input tok/s ({xl['ms_per_iteration']:.1f} ms/step)")
print(f"HF train: {hf['input_tokens_per_s']:.0f} input tok/s ({hf['ms_per_iteration']:.1f} ms/step), "
      f"{hf['threads']} threads")
print(f"speed ratio xl / HF (steps per second): "
      f"{hf['ms_per_iteration'] / xl['ms_per_iteration']:.2f}")
PY
