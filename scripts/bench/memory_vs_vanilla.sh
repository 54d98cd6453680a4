#!/usr/bin/env bash
# Transformer-XL's memory evaluation against the fixed-context (vanilla) evaluation of the
# character transformer at the same attention length, on random bytes, in one run: the
# Transformer-XL paper's Table 9 (up to 1,800x at 3,800 characters). Both models are 12 x 512
# with 8 heads and FFN 2048 (configs/transformer_xl/enwik8_base.yaml, configs/char_transformer/enwik8_t12.yaml).
# Transformer-XL reads segments of SEGMENT new bytes with CONTEXT - SEGMENT bytes of memory,
# keeping the memory's projections between segments (and, for comparison, recomputing them);
# the character transformer reads a CONTEXT-byte window per scored byte, sliding by one.
# Usage: scripts/bench/memory_vs_vanilla.sh CONTEXT [SEGMENT] [BATCH] [STEPS] [--set k=v ...]
#   (the --set overrides go to both runs, e.g. --set train.device=cuda --set train.bf16=true)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
context=$1 segment=${2:-128} batch=${3:-2} steps=${4:-2}
shift $(($# < 4 ? $# : 4))
bin=${XL_BUILD_DIR:-$root/build}/bin
python=${XL_PYTHON:-$root/.venv/bin/python}
if ((segment >= context)); then
  echo "memory_vs_vanilla.sh: SEGMENT ($segment) must be shorter than CONTEXT ($context)" >&2
  exit 2
fi
common=(--n-token 256 --warmup 1 --steps "$steps" --set "eval.batch_size=$batch")
memory=$("$bin/xl-bench" --config "$root/configs/transformer_xl/enwik8_base.yaml" --modes eval,eval_recompute \
  "${common[@]}" \
  --set "eval.tgt_len=$segment" --set "eval.mem_len=$((context - segment))" \
  --set eval.clamp_len=null "$@" 2>/dev/null | tail -1)
vanilla=$("$bin/xl-bench" --config "$root/configs/char_transformer/enwik8_t12.yaml" --modes vanilla \
  "${common[@]}" --set "model.char_transformer.n_ctx=$context" --set "train.tgt_len=$context" \
  --set eval.stride=1 "$@" 2>/dev/null | tail -1)
"$python" - "$context" "$memory" "$vanilla" <<'PY'
import json, sys
context = sys.argv[1]
memory, recompute = json.loads(sys.argv[2])["results"]
vanilla = json.loads(sys.argv[3])["results"][0]
for name, r in (("Transformer-XL memory", memory),
                ("Transformer-XL memory, projections recomputed", recompute),
                ("vanilla", vanilla)):
    print(f"{name}: {r['tokens_per_s']:.2f} scored bytes/s ({r['setting']}), "
          f"peak {r['peak_memory_mib']:.0f} MiB")
ratio = memory["tokens_per_s"] / vanilla["tokens_per_s"]
before = recompute["tokens_per_s"] / vanilla["tokens_per_s"]
print(f"context {context}: memory / vanilla = {ratio:.0f}x "
      f"({before:.0f}x recomputing the memory's projections)")
PY
