#!/usr/bin/env bash
# Checks xl against Hugging Face on any config and seed: Transformer-XL against
# TransfoXLLMHeadModel, XLNet against XLNetLMHeadModel (both streams, permutation masks, segment
# ids, explicit memories).
# Compares per-token log-probs and memories over segments with memory, the loss over two
# segments, every gradient, and every weight after one optimizer step, at float32 tolerance
# (1e-5). Prints the largest differences; exits 0 when all agree, 1 when something differs, 2 for
# a bad config.
#   scripts/parity/check.sh CONFIG [SEED] [--batch B] [--segments S] [--n-token N]
#                           [--predict P] [--bi-data] [--bf16] [--tolerance T] [--set key=value ...]
# --predict and --bi-data are XLNet's: predictions per row, backward rows in the second half.
# --bf16: both forwards under CPU bf16 autocast (log-probs and memories; no training step),
# compared at the --tolerance given.
# Needs the build (scripts/build.sh) and the .venv of scripts/bootstrap.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ $# -lt 1 ]; then
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
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
bf16=()
while [ $# -gt 0 ]; do
  case $1 in
    --batch | --segments | --n-token | --predict) reference+=("$1" "$2"); shift 2 ;;
    --bi-data) reference+=("$1"); shift ;;
    --bf16) bf16=(--bf16); shift ;;
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
family=$(sed -n '/^model:/,/^[a-z]/s/^  type: *//p' "$work/resolved.yaml")
case $family in
  xlnet) script=xlnet.py ;;
  *) script=transfo_xl.py ;;
esac
"$python" "$root/scripts/parity/$script" --config "$work/resolved.yaml" --out "$work/ref" \
  --seed "$seed" "${reference[@]}" "${bf16[@]}"
"$bin/xl-parity-check" --config "$config" --ref "$work/ref" "${checker[@]}" "${bf16[@]}"
