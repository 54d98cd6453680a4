#!/usr/bin/env bash
# Run on the CPU machine, from the project root, before using the lent GPU machine.
# Copies build.sh and env.sh into .device/ (ignored by git; it travels with the device tool's
# `carry`) and downloads the Debian packages the GPU machine lacks into .device/debs/. With
# XL_NVIDIA_TXL set to the Transformer-XL/pytorch/ folder of an NVIDIA/DeepLearningExamples
# checkout (fetched for the measurement; none of it is committed), copies its model code into
# .device/nvidia/ for checks.sh's side-by-side timing.
# Then: device run, carry [".device"], command e.g.
#   bash .device/build.sh && source .device/env.sh && ctest --test-dir build-gpu -L gpu
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(git -C "$here" rev-parse --show-toplevel)
dest="$root/.device"
mkdir -p "$dest/debs"
cp "$here"/build.sh "$here"/env.sh "$dest/"
if [ -n "${XL_NVIDIA_TXL:-}" ]; then
  mkdir -p "$dest/nvidia/utils"
  cp "$XL_NVIDIA_TXL/mem_transformer.py" "$dest/nvidia/"
  cp "$XL_NVIDIA_TXL"/utils/{proj_adaptive_softmax,log_uniform_sampler}.py "$dest/nvidia/utils/"
fi
cd "$dest/debs"
# The libraries (with Gloo's headers, which c10d's ProcessGroupGloo.hpp includes), then cairo
# (xl-compare's plots) with the .pc files its pkg-config entry needs and its runtime libraries
# (the C and C++ runtimes, zlib and expat are the machine's own), and xz for the test corpora.
packages=(libsentencepiece-dev libsentencepiece0 libspdlog-dev libspdlog1.10 libfmt-dev libfmt9
  libyaml-cpp-dev libyaml-cpp0.7 libcli11-dev libgtest-dev libgmock-dev nlohmann-json3-dev
  libgloo-dev
  libcairo2 libcairo2-dev libbrotli-dev libbrotli1 libbsd0 libmd0 libexpat1-dev libffi-dev
  libfontconfig-dev libfontconfig1 libfreetype-dev libfreetype6 libglib2.0-dev libpcre2-dev
  libpixman-1-0 libpixman-1-dev libpng-dev libpng16-16 libx11-6 libx11-dev libxau-dev libxau6
  libxcb-render0 libxcb-render0-dev libxcb-shm0 libxcb-shm0-dev libxcb1 libxcb1-dev
  libxdmcp-dev libxdmcp6 libxext-dev libxext6 libxrender-dev libxrender1 x11proto-dev
  zlib1g-dev xz-utils)
apt-get download "${packages[@]}" 2>&1 | tail -1
ls -1 "$dest/debs"
