#!/usr/bin/env bash
# Checks xl's Transformer-XL against Hugging Face's TransfoXLLMHeadModel on any config and seed:
# per-token log-probs and memories over segments with memory, the loss over two segments, every
# gradient, and every weight after one optimizer step, at float32 tolerance (1e-5). Prints the
# largest differences; exits 0 when all agree, 1 when something differs, 2 for a bad config.
#   scripts/parity/check.sh CONFIG [SEED] [--batch B] [--segments S] [--n-token N]
#                           [--tolerance T] [--set key=value ...]
# Needs the build (scripts/build.sh) and the .venv of scripts/bootstrap.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ $# -lt 1 ]; then
  sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
config=$1
shift
seed=0
if [ $# -gt 0 ] && [[ $1 != --* ]]; then
  seed=$1
  shift
fi
bin=${XL_BIN:-$root/${XL_BUILD_DIR:-build}/bin}
python=${XL_PYTHON:-$root/.venv/bin/python}
reference=()
checker=()
while [ $# -gt 0 ]; do
  case $1 in
    --batch | --segments | --n-token) reference+=("$1" "$2"); shift 2 ;;
    --tolerance) checker+=("$1" "$2"); shift 2 ;;
    --set) checker+=("$1" "$2"); shift 2 ;;
    *) echo "check.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
overrides=()
for ((i = 0; i < ${#checker[@]}; i += 2)); do
  [ "${checker[i]}" = --set ] && overrides+=(--set "${checker[i + 1]}")
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin/xl-train" --config "$config" "${overrides[@]}" --dump-config >"$work/resolved.yaml"
"$python" "$root/scripts/parity/transfo_xl.py" --config "$work/resolved.yaml" --out "$work/ref" \
  --seed "$seed" "${reference[@]}"
"$bin/xl-parity-check" --config "$config" --ref "$work/ref" "${checker[@]}"
