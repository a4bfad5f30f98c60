# scripts/setup.sh — sourced by scripts/test and scripts/run: makes sure this machine can
# build flashtune (Debian 12 packages, the CUDA toolkit), then configures and builds build/.
# Quick when everything is already there: no apt-get, an incremental build.

FT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FT_BUILD="${FLASHTUNE_BUILD_DIR:-$FT_ROOT/build}"
FT_CUDA="/usr/local/cuda"
FT_PACKAGES=(build-essential cmake ninja-build libsqlite3-dev libssl-dev
             libboost-program-options-dev libgtest-dev libbenchmark-dev
             chromium fonts-dejavu-core  # the browser test of `flashtune db report --html`
             python3-matplotlib          # bench/perf_report.py --plot-only and its test
             python3-pyflakes            # the Python files' static check (ctest pyflakes_python)
             python3-venv)               # the Python package's install test (tests/python/install_test.sh)

ft_log() { echo "flashtune setup: $*" >&2; }

ft_install_packages() {
  local missing=() p
  for p in "${FT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  ft_log "installing missing Debian packages: ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
      ft_log "not root and no sudo: install these packages, then run again: ${missing[*]}"
      return 1
    fi
  fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

ft_check_cuda() {
  local f
  for f in include/cuda.h include/nvrtc.h; do
    if [ ! -e "$FT_CUDA/$f" ]; then
      ft_log "the CUDA 13 toolkit (with NVRTC) is missing: $FT_CUDA/$f not found." \
             "Install the CUDA toolkit at $FT_CUDA (https://developer.nvidia.com/cuda-downloads), then run again."
      return 1
    fi
  done
  if ! ls "$FT_CUDA"/lib64/libnvrtc.so* >/dev/null 2>&1 && ! ls "$FT_CUDA"/lib/libnvrtc.so* >/dev/null 2>&1; then
    ft_log "the CUDA toolkit at $FT_CUDA has no libnvrtc; install its NVRTC component, then run again."
    return 1
  fi
}

ft_build() {
  if [ ! -f "$FT_BUILD/build.ninja" ]; then
    cmake -S "$FT_ROOT" -B "$FT_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
  fi
  cmake --build "$FT_BUILD" -j "${FLASHTUNE_JOBS:-$(nproc)}" >&2
}

ft_setup() {
  ft_install_packages && ft_check_cuda && ft_build
}
