#!/usr/bin/env bash
# Run on the CPU machine, from the project root, before using the lent GPU machine.
# Copies build.sh and env.sh into .device/ (ignored by git; it travels with the device tool's
# `carry`) and downloads the Debian packages the GPU machine lacks into .device/debs/.
# Then: device run, carry [".device"], command e.g.
#   bash .device/build.sh && source .device/env.sh && ctest --test-dir build-gpu -L gpu
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(git -C "$here" rev-parse --show-toplevel)
dest="$root/.device"
mkdir -p "$dest/debs"
cp "$here"/build.sh "$here"/env.sh "$dest/"
cd "$dest/debs"
if ! ls ./*.deb >/dev/null 2>&1; then
  apt-get download libsentencepiece-dev libsentencepiece0 libspdlog-dev libspdlog1.10 \
    libfmt-dev libfmt9 libyaml-cpp-dev libyaml-cpp0.7 libcli11-dev libgtest-dev libgmock-dev \
    nlohmann-json3-dev 2>&1 | tail -1
fi
ls -1 "$dest/debs"
