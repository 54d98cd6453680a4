#!/usr/bin/env bash
# Installs what is missing, builds everything with warnings as errors and runs all tests
# (ctest: labels unit, parity, e2e, gpu; GPU tests skip themselves without a GPU).
# Run a subset: scripts/test.sh -L unit   (arguments go to ctest)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/bootstrap.sh
XL_CMAKE_ARGS="-DXL_WERROR=ON ${XL_CMAKE_ARGS:-}" scripts/build.sh
ctest --test-dir "${XL_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" "$@"
