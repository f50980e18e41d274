#!/usr/bin/env bash
# Configures (once) and builds kiln into build/. The CUDA executor is built where nvcc
# is found (/usr/local/cuda/bin); no GPU is needed to build it.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/cuda/bin"
[[ -f build/build.ninja ]] || meson setup build >/dev/null
ninja -C build -j "$(nproc)" >/dev/null
