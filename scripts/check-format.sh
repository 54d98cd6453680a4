#!/usr/bin/env bash
# Fails if any C++ file differs from .clang-format; `scripts/check-format.sh --fix` rewrites them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# Tracked and new (untracked, not ignored) files alike.
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.h' '*.cpp' '*.cu' '*.cuh' '*.h.in')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
else
  clang-format --dry-run --Werror "${files[@]}"
  echo "format: ${#files[@]} files match .clang-format"
fi
