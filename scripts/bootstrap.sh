#!/usr/bin/env bash
# Installs what xl needs on a fresh Debian/Ubuntu machine, and nothing that is already there:
#   - Debian packages: the toolchain and the C++ libraries (yaml-cpp, spdlog/fmt, CLI11,
#     SentencePiece, GoogleTest, nlohmann-json, cairo and a font for xl-compare's plots, and
#     Gloo's headers, which the torch wheel lacks and LibTorch's c10d headers include), clang
#     with libFuzzer for scripts/fuzz.sh, and curl and unzip for scripts/getdata.sh;
#   - .venv: a Python virtualenv with the pinned torch wheel (our LibTorch), the reference
#     packages of the parity tests and clang-tidy (scripts/requirements.txt).
# Idempotent: a second run checks and returns in seconds.
# Bring your own LibTorch instead: XL_SKIP_VENV=1 scripts/bootstrap.sh, then configure with
# -DTorch_DIR=/path/to/libtorch/share/cmake/Torch (see README.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

packages=(cmake ninja-build g++ ccache xz-utils git python3 python3-venv curl unzip
  libyaml-cpp-dev libspdlog-dev libfmt-dev libcli11-dev libsentencepiece-dev sentencepiece
  libgtest-dev libgmock-dev nlohmann-json3-dev libgloo-dev libcairo2-dev pkg-config
  fonts-dejavu-core clang-format clang libclang-rt-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [ "${XL_SKIP_VENV:-0}" != 1 ]; then
  python=${XL_PYTHON:-python3}
  stamp=.venv/.requirements.sha256
  want=$(sha256sum scripts/requirements.txt | cut -d' ' -f1)
  if [ ! -x .venv/bin/python ]; then
    echo "bootstrap: creating .venv with $($python --version)"
    "$python" -m venv .venv
  fi
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "bootstrap: installing Python packages from scripts/requirements.txt (torch is large: minutes)"
    .venv/bin/pip install -q --disable-pip-version-check -r scripts/requirements.txt
    echo "$want" >"$stamp"
  fi
fi
echo "bootstrap: ready"
