#!/usr/bin/env bash
# The one-shot GPU check, for a machine with an NVIDIA GPU (an H200 here), no network
# and no LLVM, in one run of a few minutes:
#   1. builds kiln-replay-flat (stamp's CPU and CUDA executors, ELF writer; no LLVM)
#      with nvcc for sm_90 and the host C++ compiler, straight from the sources;
#   2. the CUDA test: replays the regex corpus carried in tests/device/corpus (203
#      flat IR files exported on a CPU machine) on the GPU and on the CPU, round after
#      round, and requires every object to be byte-identical to the CPU executor's;
#   3. prints a short table: per-stage GPU times, modules/s, IR instructions/s, and the
#      ratios to the CPU executor and to llvm -O0 (baseline.json, measured on the CPU
#      machine on the same modules).
# On a machine without a usable GPU it says so and checks what it can (the CPU
# executor against itself over the same corpus). Results: $OUT (default a temp dir).
# Usage: tests/device/check.sh [ROUNDS]   (default 5; nvcc from PATH or /usr/local/cuda/bin)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-5}
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/kiln-device.XXXXXX")}
mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
arch=${KILN_GPU_ARCH:-90}
log() { printf '== %s\n' "$*"; }

log "machine: $(uname -m), $(nproc) cores; $(date -u +%Y-%m-%dT%H:%M:%SZ)"
gpu="none"
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  gpu=$(nvidia-smi --query-gpu=name,memory.total,pci.bus_id,driver_version --format=csv,noheader | head -1)
fi
log "GPU: $gpu"

log "build: nvcc (sm_$arch) and $(c++ --version | head -1)"
b="$out/build"
mkdir -p "$b"
cat > "$b/kiln_config.h" <<H
#pragma once
#define KILN_VERSION "$(sed -n "s/^  version: '\(.*\)',/\1/p" "$root/meson.build")"
#define KILN_LLVM_BINDIR ""
#define KILN_HAVE_CUDA 1
H
inc=(-I"$b" -I"$root/lib" -I"$root/kernels")
start=$SECONDS
objs=()
for cu in stamp_gpu gpu_probe; do
  nvcc -std=c++17 -O2 -gencode "arch=compute_$arch,code=sm_$arch" "${inc[@]}" -c "$root/kernels/$cu.cu" -o "$b/$cu.o" &
  objs+=("$b/$cu.o")
done
for src in lib/error.cpp lib/timeutil.cpp lib/elf_writer.cpp lib/stamp_cpu.cpp lib/flat_file.cpp tools/kiln-replay-flat.cpp; do
  o="$b/$(basename "$src" .cpp).o"
  c++ -std=c++20 -O2 "${inc[@]}" -c "$root/$src" -o "$o" &
  objs+=("$o")
done
wait
cuda_lib=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")/lib64
[[ -e $cuda_lib/libcudart_static.a ]] || cuda_lib=/usr/local/cuda/lib64
c++ -o "$b/kiln-replay-flat" "${objs[@]}" -L"$cuda_lib" -lcudart_static -ldl -lrt -pthread
log "built in $((SECONDS - start)) s"

log "corpus: tests/device/corpus/regex-d0.tar.xz"
if command -v xz >/dev/null; then
  tar -C "$out" -xJf "$root/tests/device/corpus/regex-d0.tar.xz"
else  # a machine without xz-utils: Python's lzma reads it too
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2])' \
    "$root/tests/device/corpus/regex-d0.tar.xz" "$out"
fi
device=cuda,cpu
if ! "$b/kiln-replay-flat" "$out/regex-d0" --device cuda --rounds 2 > "$out/probe.txt" 2>&1; then
  if grep -q "device cuda" "$out/probe.txt"; then
    log "no usable GPU: $(cat "$out/probe.txt")"
    log "checking the CPU executor alone"
    device=cpu
  fi
fi
log "replay: --device $device --rounds $rounds"
"$b/kiln-replay-flat" "$out/regex-d0" --device "$device" --rounds "$rounds" \
  --baseline "$root/tests/device/corpus/baseline.json" --json "$out/result.json" | tee "$out/result.txt"
log "result: $out/result.txt, $out/result.json"
