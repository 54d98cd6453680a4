#!/usr/bin/env bash
# Copied from the shared GPU helpers by scripts/gpu/prepare.sh. Run ON THE GPU MACHINE from the
# project root (the device tool starts there), with .device carried.
# Unpacks the carried Debian packages into /opt/xldeps, configures the project against the
# machine's own LibTorch (python3's torch, CUDA build) and builds it in build-gpu/ (Release, Ninja).
# Extra CMake flags: XL_CMAKE_ARGS="-DFOO=ON" bash .device/build.sh
# A warm machine keeps build-gpu/ between calls, so a second call only rebuilds what changed.
set -euo pipefail
root=$(pwd)
# Unpacked again whenever the carried packages change (a warm machine keeps /opt/xldeps).
debs=$(cd "$root/.device/debs" && ls -1 ./*.deb)
if [ "$(cat /opt/xldeps/.done 2>/dev/null)" != "$debs" ]; then
  mkdir -p /opt/xldeps
  for f in "$root"/.device/debs/*.deb; do dpkg -x "$f" /opt/xldeps; done
  echo "$debs" >/opt/xldeps/.done
fi
# shellcheck disable=SC1091
source "$root/.device/env.sh"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
  "gpu", torch.cuda.is_available())'
# The system g++, not the image's CXX (/opt/gcc/bin/g++, a wrapper that links libstdc++
# statically): xl's link lines name the shared libstdc++ first so that the dynamic linker binds
# std::filesystem to it rather than to the broken copy libtorch exports (src/CMakeLists.txt);
# with a static libstdc++ that does not hold, and every test that removes a folder crashed.
cxx=$(command -v g++)
# shellcheck disable=SC2086 # XL_CMAKE_ARGS holds several flags
cmake -S "$root" -B "$root/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$CMAKE_PREFIX_PATH" -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DPython3_EXECUTABLE="$(command -v python3)" ${XL_CMAKE_ARGS:-} \
  >"$root/build-gpu.configure.log" 2>&1 \
  || { tail -60 "$root/build-gpu.configure.log"; exit 1; }
cmake --build "$root/build-gpu" -j "$(nproc)" 2>&1 | tail -40
