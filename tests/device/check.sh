#!/usr/bin/env bash
# The one-shot GPU check, for a machine with an NVIDIA GPU (an H200 here), no network
# and no LLVM, in one run of a few minutes:
#   1. builds kiln-replay-flat (stamp's CPU and CUDA executors, ELF writer; no LLVM)
#      with nvcc for sm_90 and the host C++ compiler, straight from the sources;
#   2. the CUDA tests: gpu_unit (batch edge cases: empty, without functions, growing
#      and shrinking buffers, instruction orders) and then replays the regex corpus carried in tests/device/corpus (203
#      flat IR files exported on a CPU machine) on the GPU and on the CPU, round after
#      round, and requires every object to be byte-identical to the CPU executor's,
#      in several set-ups: batches of 32k instructions on 4 streams (the default),
#      one module per batch, the whole corpus as one batch, instructions in file order,
#      and a single stream;
#   3. prints a table per set-up (per-stage GPU times, modules/s, IR instructions/s,
#      ratios to the CPU executor and to llvm -O0 from baseline.json, measured on the
#      CPU machine on the same modules) and a summary of all of them.
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
for src in lib/error.cpp lib/fs.cpp lib/timeutil.cpp lib/elf_writer.cpp lib/stamp_cpu.cpp lib/stamp_batch.cpp lib/stamp_gpu_standin.cpp lib/flat_file.cpp; do
  o="$b/$(basename "$src" .cpp).o"
  c++ -std=c++20 -O2 "${inc[@]}" -c "$root/$src" -o "$o" &
  objs+=("$o")
done
for main in tools/kiln-replay-flat.cpp tests/device/gpu_unit.cpp; do
  c++ -std=c++20 -O2 "${inc[@]}" -c "$root/$main" -o "$b/$(basename "$main" .cpp).main.o" &
done
wait
cuda_lib=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")/lib64
[[ -e $cuda_lib/libcudart_static.a ]] || cuda_lib=/usr/local/cuda/lib64
for tool in kiln-replay-flat gpu_unit; do
  c++ -o "$b/$tool" "$b/$tool.main.o" "${objs[@]}" -L"$cuda_lib" -lcudart_static -ldl -lrt -pthread
done
log "built in $((SECONDS - start)) s"

log "corpus: tests/device/corpus/regex-d0.tar.xz"
if command -v xz >/dev/null; then
  tar -C "$out" -xJf "$root/tests/device/corpus/regex-d0.tar.xz"
else  # a machine without xz-utils: Python's lzma reads it too
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2])' \
    "$root/tests/device/corpus/regex-d0.tar.xz" "$out"
fi
device=cuda,cpu
standin=0
if ! "$b/kiln-replay-flat" "$out/regex-d0" --device cuda --rounds 2 > "$out/probe.txt" 2>&1; then
  if grep -q "device cuda" "$out/probe.txt"; then
    log "no usable GPU: $(cat "$out/probe.txt")"
    log "checking the CPU executor, and the GPU's batches, streams and wide stages on the CPU stand-in"
    export KILN_GPU_STANDIN=cpu
    standin=1
  fi
fi
status=0
log "CUDA unit tests: batch edge cases against the CPU executor$([[ $standin == 1 ]] && echo " (on the stand-in)")"
"$b/gpu_unit" "$out/regex-d0" | tee "$out/gpu_unit.txt" || status=1

# Set-ups: name, then kiln-replay-flat's options. Without a GPU only the first runs,
# on the stand-in (KILN_GPU_STANDIN=cpu: the CUDA executor's form of the stages, run
# by the CPU behind the same interface), so the batching and the wide stages are
# still checked against the CPU executor over the whole corpus.
setups=(
  "default        --batch 32768 --streams 4 --order opcode --cpu-threads $(nproc)"
  "module-each    --batch 1 --streams 4 --order opcode"
  "one-batch      --batch 100000000 --streams 1 --order opcode"
  "file-order     --batch 32768 --streams 4 --order none"
  "one-stream     --batch 32768 --streams 1 --order opcode"
)
[[ $standin == 1 ]] && setups=("${setups[0]}")
for setup in "${setups[@]}"; do
  read -r name opts <<< "$setup"
  log "replay $name: --device $device --rounds $rounds $opts"
  # shellcheck disable=SC2086
  "$b/kiln-replay-flat" "$out/regex-d0" --device "$device" --rounds "$rounds" $opts \
    --baseline "$root/tests/device/corpus/baseline.json" --json "$out/$name.json" | tee "$out/$name.txt" || status=1
done
if command -v python3 >/dev/null; then
  log "summary (medians of warm rounds; GPU wall: host prepare to cut; span: first upload to last download)$([[ $standin == 1 ]] && echo "; NO GPU: the CPU stand-in")"
  python3 - "$out" "${setups[@]}" <<'PY'
import json, sys
out, setups = sys.argv[1], sys.argv[2:]
print(f"{'set-up':<13} {'batches':>7} {'launches':>8} {'GPU wall s':>10} {'M instr/s':>9} {'x llvm':>7} {'x cpu1':>6} "
      f"{'span s':>8} {'M instr/s':>9} {'x llvm':>7} {'differ':>6}")
for setup in setups:
    name = setup.split()[0]
    r = json.load(open(f"{out}/{name}.json"))
    g, c = r.get("gpu"), r.get("cpu", {})
    if g:
        ratio_cpu = c.get("stages_seconds", 0) / max(g["wall_seconds"], 1e-12)
        print(f"{name:<13} {g['batches']:>7} {g['launches_per_round']:>8} {g['wall_seconds']:>10.5f} "
              f"{g['instructions_per_second']/1e6:>9.2f} {g.get('speedup_vs_llvm', 0):>7.1f} {ratio_cpu:>6.1f} "
              f"{g['span_seconds']:>8.5f} {g['span_instructions_per_second']/1e6:>9.2f} "
              f"{g.get('span_speedup_vs_llvm', 0):>7.1f} {r['mismatches']:>6}")
    else:
        print(f"{name:<13} {'-':>7} {'-':>8} {'-':>10} {c['instructions_per_second']/1e6:>9.2f} {'-':>7} {'(cpu)':>6} "
              f"{'-':>8} {'-':>9} {'-':>7} {r['mismatches']:>6}")
r = json.load(open(f"{out}/{setups[0].split()[0]}.json"))
c, g = r.get("cpu", {}), r.get("gpu")
if c.get("parallel_stages_seconds") and g:
    print(f"default set-up: the CPU executor on {c['threads']} threads (modules in parallel) "
          f"{r['instructions'] / c['parallel_stages_seconds'] / 1e6:.2f} M instr/s; the GPU's span is "
          f"{c['parallel_stages_seconds'] / max(g['span_seconds'], 1e-12):.1f}x that")
PY
fi
log "results: $out/*.txt, $out/*.json"
exit $status
