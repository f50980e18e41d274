#!/usr/bin/env bash
# The one-shot GPU check, for a machine with an NVIDIA GPU (an H200 here), no network
# and no LLVM, in one run of a few minutes:
#   1. builds the LLVM-free core (meson -Dllvm=disabled: lib/base, lib/stamp with its
#      CUDA executor, kiln-replay-flat, gpu_unit) with nvcc for sm_90 and the host C++
#      compiler, checks that nothing in it came from LLVM, and runs the core's tests;
#   2. the CUDA tests: gpu_unit (batch edge cases: empty, without functions, growing
#      and shrinking buffers, instruction orders) and then replays the regex corpus
#      carried in tests/device/corpus (203 modules as flat IR files exported on a CPU
#      machine, regex-d0.tar.xz) on the GPU and on the CPU, round after round, and
#      requires every object to be byte-identical to the CPU executor's, in several
#      set-ups: batches of 32k instructions on 4 streams (the default), one module per
#      batch, the whole corpus as one batch, instructions in file order, and a single
#      stream;
#   3. replays the same 203 modules from their bitcode (regex-d0-bc.tar.xz), read by
#      kiln's direct bitcode reader (no LLVM), in the default set-up: every module must
#      be read (none declined by the reader) and every object must be byte-identical
#      to the CPU executor's;
#   4. prints a table per replay (per-stage GPU times, modules/s, IR instructions/s,
#      ratios to the CPU executor and to llvm -O0 from baseline.json, measured on the
#      CPU machine on the same modules) and a summary of all of them, by input (flat
#      files, bitcode) with the direct reader's read time and what it declined.
# On a machine without a usable GPU it says so and checks what it can (the CPU
# executor against itself over the same corpus, and the default set-up on the GPU
# stand-in, from flat files and from bitcode). Results: $OUT (default a temp dir).
# Usage: tests/device/check.sh [ROUNDS]   (default 5; nvcc from PATH or /usr/local/cuda/bin)
# KILN_CORE_CUDA=disabled builds the core without its CUDA executor (what CI's run of
# this check does: CI's main build has compiled the kernels with nvcc already, it has
# no GPU, and the stand-in needs no CUDA code); the GPU machine keeps the default.
# KILN_CHECK_PREBUILT=BUILD_DIR (CI) reuses a main build's kiln-replay-flat and
# gpu_unit instead of building the core: it checks that the core's objects there
# included no LLVM header and that meson configures -Dllvm=disabled, and leaves the
# core's tests to that build's own suite.
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

core_cuda=${KILN_CORE_CUDA:-enabled}
case $core_cuda in enabled|disabled) ;; *) echo "check.sh: KILN_CORE_CUDA='$core_cuda': expected enabled or disabled" >&2; exit 2 ;; esac
if [[ $core_cuda == enabled ]]; then
  log "build: meson -Dllvm=disabled (the LLVM-free core), nvcc (sm_$arch) and $(c++ --version | head -1)"
else
  log "build: meson -Dllvm=disabled -Dcuda=disabled (the LLVM-free core without its CUDA executor) and $(c++ --version | head -1)"
fi
# meson and ninja: the system's, or the Python packages' (the GPU machine has those).
meson=(meson)
if ! command -v meson >/dev/null; then
  python3 -c 'import mesonbuild' 2>/dev/null || { echo "check.sh: meson is not installed (apt install meson, or pip install meson ninja)" >&2; exit 6; }
  meson=(python3 -m mesonbuild.mesonmain)
fi
if ! command -v ninja >/dev/null; then
  ninja_dir=$(python3 -c 'import ninja; print(ninja.BIN_DIR)' 2>/dev/null) && export PATH="$PATH:$ninja_dir"
fi
b="$out/build"
start=$SECONDS
# What the LLVM-free core compiled (the objects whose path matches $2): no header
# under an llvm/ directory; and kiln-replay-flat links no libLLVM.
check_llvm_free() {  # BUILD_DIR OBJECT_PATH_REGEX
  if ninja -C "$1" -t deps | awk -v re="$2" '/^[^ ]/ { keep = ($0 ~ re) } keep' |
     grep -E '(^|/)llvm[-/]' | head -3 | grep . ; then
    echo "check.sh: the LLVM-free core included LLVM headers (above)" >&2; exit 1
  fi
  if command -v readelf >/dev/null && readelf -d "$1/tools/kiln-replay-flat" | grep -i 'llvm'; then
    echo "check.sh: kiln-replay-flat links LLVM" >&2; exit 1
  fi
}
if [[ -n ${KILN_CHECK_PREBUILT:-} ]]; then
  # CI: the main build (LLVM on) has compiled the core, kiln-replay-flat and gpu_unit
  # already and runs the core's tests itself; compiling them a second time only to
  # leave LLVM out took CI about 100 s. What is left to check: that meson configures
  # the core with LLVM disabled, and that the core's objects in the main build
  # included no LLVM header and kiln-replay-flat links no LLVM.
  b=$KILN_CHECK_PREBUILT
  rm -rf "$out/configure-only"  # this check's own scratch, from an earlier run in the same $OUT
  "${meson[@]}" setup "$out/configure-only" "$root" -Dllvm=disabled -Dcuda="$core_cuda" > "$out/meson-setup.txt" 2>&1 ||
    { tail -n 30 "$out/meson-setup.txt"; exit 1; }
  core_re='^(lib/base|lib/stamp|tools/kiln-replay-flat[.]p|tests/gpu_unit[.]p)/'
  core_objects=$(ninja -C "$b" -t deps | grep -cE "${core_re}[^ ]*[.]o:" || true)
  [[ $core_objects -gt 0 ]] || { echo "check.sh: KILN_CHECK_PREBUILT=$b: no core objects in its build log" >&2; exit 1; }
  check_llvm_free "$b" "$core_re"
  log "build: reused $b ($core_objects core objects, no LLVM header); meson configures -Dllvm=disabled; core tests: the main suite's core-unit"
else
  again=(); [[ -f $b/build.ninja ]] && again=(--reconfigure)  # an earlier run in the same $OUT
  "${meson[@]}" setup "${again[@]}" "$b" "$root" -Dllvm=disabled -Dcuda="$core_cuda" -Dgpu_arch="$arch" > "$out/meson-setup.txt" 2>&1 ||
    { tail -n 30 "$out/meson-setup.txt"; exit 1; }
  "${meson[@]}" compile -C "$b" > "$out/build.txt" 2>&1 || { grep -v '^\[' "$out/build.txt" | tail -n 40; exit 1; }
  check_llvm_free "$b" .
  "${meson[@]}" test -C "$b" --print-errorlogs > "$out/core-tests.txt" 2>&1 || { tail -n 40 "$out/core-tests.txt"; exit 1; }
  log "core tests: $(grep -E '^(Ok|Fail|Skipped):' "$out/core-tests.txt" | tr -s ' ' | tr '\n' ' ')"
  log "built in $((SECONDS - start)) s"
fi
replay_flat="$b/tools/kiln-replay-flat"
gpu_unit="$b/tests/gpu_unit"

# The corpus twice: flat files (regex-d0/) and the same modules' bitcode (regex-d0-bc/).
unpack() {
  if command -v xz >/dev/null; then
    tar -C "$out" -xJf "$root/tests/device/corpus/$1"
  else  # a machine without xz-utils: Python's lzma reads it too
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2])' \
      "$root/tests/device/corpus/$1" "$out"
  fi
}
log "corpus: tests/device/corpus/regex-d0.tar.xz (flat files), tests/device/corpus/regex-d0-bc.tar.xz (bitcode)"
unpack regex-d0.tar.xz
unpack regex-d0-bc.tar.xz
device=cuda,cpu
standin=0
if ! "$replay_flat" "$out/regex-d0" --device cuda --rounds 2 > "$out/probe.txt" 2>&1; then
  if grep -q "device cuda" "$out/probe.txt"; then
    log "no usable GPU: $(cat "$out/probe.txt")"
    log "checking the CPU executor, and the GPU's batches, streams and wide stages on the CPU stand-in"
    export KILN_GPU_STANDIN=cpu
    standin=1
  fi
fi
status=0
log "CUDA unit tests: batch edge cases against the CPU executor$([[ $standin == 1 ]] && echo " (on the stand-in)")"
"$gpu_unit" "$out/regex-d0" | tee "$out/gpu_unit.txt" || status=1

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
  "$replay_flat" "$out/regex-d0" --device "$device" --rounds "$rounds" $opts \
    --baseline "$root/tests/device/corpus/baseline.json" --json "$out/$name.json" | tee "$out/$name.txt" || status=1
done
# The same modules from bitcode, read by kiln's direct reader (no LLVM) instead of from
# the flat files, in the default set-up (on the GPU, or on the stand-in): every module
# must be read, none declined, and every object must equal the CPU executor's.
read -r _ opts <<< "${setups[0]}"
log "replay default-bc (from bitcode, kiln's direct reader): --device $device --rounds $rounds $opts"
# shellcheck disable=SC2086
"$replay_flat" "$out/regex-d0-bc" --device "$device" --rounds "$rounds" $opts \
  --baseline "$root/tests/device/corpus/baseline.json" --json "$out/default-bc.json" | tee "$out/default-bc.txt" || status=1
bc_files=$(find "$out/regex-d0-bc" -name '*.bc' | wc -l)
bc_read=$(grep -o '"bitcode_modules":[0-9]*' "$out/default-bc.json" 2>/dev/null | cut -d: -f2 || true)
bc_declined=$(grep -o '"bitcode_declined":[0-9]*' "$out/default-bc.json" 2>/dev/null | cut -d: -f2 || true)
if [[ $bc_read != "$bc_files" || $bc_declined != 0 ]]; then
  echo "check.sh: bitcode: the direct reader was given ${bc_read:-no result for} of $bc_files files and declined ${bc_declined:-?}; expected all, none declined" >&2
  status=1
fi
if command -v python3 >/dev/null; then
  log "summary (medians of warm rounds; GPU wall: host prepare to cut; span: first upload to last download)$([[ $standin == 1 ]] && echo "; NO GPU: the CPU stand-in")"
  python3 - "$out" "${setups[@]}" default-bc <<'PY'
import json, os, sys
out, setups = sys.argv[1], sys.argv[2:]
print(f"{'set-up':<13} {'input':<7} {'batches':>7} {'launches':>8} {'GPU wall s':>10} {'M instr/s':>9} {'x llvm':>7} "
      f"{'x cpu1':>6} {'span s':>8} {'M instr/s':>9} {'x llvm':>7} {'differ':>6}")
inputs = []
for setup in setups:
    name = setup.split()[0]
    if not os.path.exists(f"{out}/{name}.json"):
        print(f"{name:<13} no result (above)")
        continue
    r = json.load(open(f"{out}/{name}.json"))
    kind = "bitcode" if r.get("bitcode_modules") else "flat"
    inputs.append((kind, r))
    label = name[:-3] if kind == "bitcode" and name.endswith("-bc") else name
    g, c = r.get("gpu"), r.get("cpu", {})
    if g:
        ratio_cpu = c.get("stages_seconds", 0) / max(g["wall_seconds"], 1e-12)
        print(f"{label:<13} {kind:<7} {g['batches']:>7} {g['launches_per_round']:>8} {g['wall_seconds']:>10.5f} "
              f"{g['instructions_per_second']/1e6:>9.2f} {g.get('speedup_vs_llvm', 0):>7.1f} {ratio_cpu:>6.1f} "
              f"{g['span_seconds']:>8.5f} {g['span_instructions_per_second']/1e6:>9.2f} "
              f"{g.get('span_speedup_vs_llvm', 0):>7.1f} {r['mismatches']:>6}")
    else:
        print(f"{label:<13} {kind:<7} {'-':>7} {'-':>8} {'-':>10} {c['instructions_per_second']/1e6:>9.2f} {'-':>7} "
              f"{'(cpu)':>6} {'-':>8} {'-':>9} {'-':>7} {r['mismatches']:>6}")
# Each input once (its first replay): what was replayed, and for bitcode what reading it took.
for kind in ("flat", "bitcode"):
    r = next((r for k, r in inputs if k == kind), None)
    if r is None:
        continue
    line = (f"{'from flat files:' if kind == 'flat' else 'from bitcode:':<17}{r['modules']} modules, "
            f"{r['instructions']} IR instructions, {r['mismatches']} objects differ")
    if kind == "bitcode":
        line += (f"; the direct reader (no LLVM) read {r['bitcode_modules'] - r['bitcode_declined']} of "
                 f"{r['bitcode_modules']} in {r['bitcode_read_seconds']:.3f} s, declined {r['bitcode_declined']}")
    print(line)
if not os.path.exists(f"{out}/{setups[0].split()[0]}.json"):
    sys.exit(0)
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
