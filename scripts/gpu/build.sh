#!/usr/bin/env bash
# Copied from the shared GPU helpers by scripts/gpu/prepare.sh. Run ON THE GPU MACHINE from the project root (the device tool starts there), with .device carried.
# Unpacks the carried Debian packages into /opt/xldeps, configures the project against the
# machine's own LibTorch (python3's torch, CUDA build) and builds it in build-gpu/ (Release, Ninja).
# Extra CMake flags: XL_CMAKE_ARGS="-DFOO=ON" bash .device/build.sh
# A warm machine keeps build-gpu/ between calls, so a second call only rebuilds what changed.
set -euo pipefail
root=$(pwd)
if [ ! -f /opt/xldeps/.done ]; then
  mkdir -p /opt/xldeps
  for f in "$root"/.device/debs/*.deb; do dpkg -x "$f" /opt/xldeps; done
  touch /opt/xldeps/.done
fi
# shellcheck disable=SC1091
source "$root/.device/env.sh"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.is_available())'
cmake -S "$root" -B "$root/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$CMAKE_PREFIX_PATH" -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DPython3_EXECUTABLE="$(command -v python3)" ${XL_CMAKE_ARGS:-} >"$root/build-gpu.configure.log" 2>&1 \
  || { tail -60 "$root/build-gpu.configure.log"; exit 1; }
cmake --build "$root/build-gpu" -j "$(nproc)" 2>&1 | tail -40
