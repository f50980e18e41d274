#!/usr/bin/env bash
# Configures (once) and builds kiln into build/. The CUDA kernels are built where nvcc
# is found (on PATH or in /usr/local/cuda/bin); no GPU is needed to build them.
# Quiet when all goes well; on a failure, the end of the build's own log.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/cuda/bin"
log=$(mktemp "${TMPDIR:-/tmp}/kiln-build.XXXXXX")
trap 'rm -f "$log"' EXIT
# CI treats warnings as errors (meson's werror); a developer's build only shows them.
# CI has no GPU: its CUDA objects carry PTX only, which skips ptxas (90 s of one core);
# the front end and code generation to PTX still run. Nor does CI debug kiln itself:
# no -g, a quarter less compile time (the sanitizer build keeps line tables).
ci_options=()
[[ -n ${CI:-} ]] && ci_options=(-Dwerror=true -Ddebug=false -Dgpu_code=ptx)
if [[ ! -f build/build.ninja ]] && ! meson setup build "${ci_options[@]}" >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "build: meson setup failed (full log: build/meson-logs/meson-log.txt)" >&2
  exit 1
fi
if ! ninja -C build -j "$(nproc)" >"$log" 2>&1; then
  grep -v '^\[[0-9]*/[0-9]*\] ' "$log" | tail -n 60 >&2
  echo "build: ninja failed" >&2
  exit 1
fi
