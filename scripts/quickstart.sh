#!/usr/bin/env bash
# From a fresh clone: install, build, prepare the bundled WikiText-2, train the small
# Transformer-XL (configs/transformer_xl/wt2_small.yaml) and evaluate it with a long memory.
# Extra arguments go to xl-train, e.g. scripts/quickstart.sh --set train.max_step=200
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/bootstrap.sh
scripts/build.sh xl-prep xl-train xl-eval
bin=${XL_BUILD_DIR:-build}/bin

[ -f data/prepared/wikitext-2/test.bin ] || scripts/getdata.sh wikitext-2

run=${XL_RUN_NAME:-wt2_small}
resume=()
[ -f "runs/$run/checkpoints/last.pt" ] && resume=(--resume)
"$bin/xl-train" --config configs/transformer_xl/wt2_small.yaml --set "run.name=$run" "${resume[@]}" "$@"
"$bin/xl-eval" --run "runs/$run"
