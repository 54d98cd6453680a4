#!/usr/bin/env bash
# Our training step against Hugging Face's TransfoXL step on the same config, batch, segment
# length, memory and threads, in one run, on random tokens.
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
print(f"xl train: {xl['tokens_per_s']:.0f} tok/s ({xl['ms_per_iteration']:.1f} ms/step)")
print(f"HF train: {hf['tokens_per_s']:.0f} tok/s ({hf['ms_per_iteration']:.1f} ms/step), "
      f"{hf['threads']} threads")
print(f"speed ratio xl / HF: {xl['tokens_per_s'] / hf['tokens_per_s']:.2f}")
PY
