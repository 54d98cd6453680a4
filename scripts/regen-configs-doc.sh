#!/usr/bin/env bash
# Rewrites the key tables of docs/configs.md (everything after its "## Keys" heading) from the
# schema the build knows: what ConfigSchema.DocumentationListsTheCurrentSchema asks for after a
# key, a family or a default changed.
#   scripts/regen-configs-doc.sh   (after the build; XL_BUILD_DIR: build/ by default)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin=${XL_BUILD_DIR:-build}/bin/xl-train
[ -x "$bin" ] || { echo "regen-configs-doc: $bin not found: build first (scripts/build.sh)"; exit 1; }
doc=docs/configs.md
grep -qx '## Keys' "$doc" || { echo "regen-configs-doc: $doc has no '## Keys' heading"; exit 1; }
tables=$(mktemp)
trap 'rm -f "$tables" "$doc.new"' EXIT
"$bin" --print-schema >"$tables"
{ sed "/^## Keys$/q" "$doc"; cat "$tables"; } >"$doc.new"
mv "$doc.new" "$doc"
echo "regen-configs-doc: $doc updated"
