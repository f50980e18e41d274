#!/usr/bin/env bash
# Runs kiln's libFuzzer targets (tests/fuzz) for a bounded number of executions each,
# built with clang-22, AddressSanitizer and UndefinedBehaviorSanitizer in build-fuzz/.
#   scripts/fuzz.sh                 # RUNS=20000 executions per target (CI runs 10000:
#                                   # scripts/sanitize.sh, FUZZ_RUNS);
#                                   # fuzz_bitcode forks a worker per input: BITCODE_RUNS,
#                                   # default RUNS/4
#   RUNS=500000 scripts/fuzz.sh     # a longer campaign, on demand
#   TARGETS="fuzz_flat_file" scripts/fuzz.sh
#   scripts/fuzz.sh --build-only    # configure and build build-fuzz/ (scripts/sanitize.sh)
# Seeds are made from a real module with the tools just built; crashes land in
# build-fuzz/crashes/ and fail the script. Prints one line per target with its count.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-20000}
BITCODE_RUNS=${BITCODE_RUNS:-$((RUNS / 4))}
B=build-fuzz
export PATH="$PATH:/usr/local/cuda/bin"
if [[ ! -f $B/build.ninja ]]; then
  # Line tables only: the sanitizers' reports keep file:line, and the build (6.8 min
  # of CI's 2 cores with full -g) is about 15% faster.
  CC=clang-22 CXX=clang++-22 meson setup "$B" -Dfuzz=true -Dcuda=disabled -Db_sanitize=address,undefined \
    -Db_lundef=false -Dbuildtype=debugoptimized -Dc_args=-gline-tables-only -Dcpp_args=-gline-tables-only >/dev/null
fi
log=$(mktemp "${TMPDIR:-/tmp}/kiln-fuzz-build.XXXXXX")
if ! ninja -C "$B" -j "$(nproc)" >"$log" 2>&1; then
  grep -v '^\[[0-9]*/[0-9]*\] ' "$log" | tail -n 60 >&2
  rm -f "$log"
  echo "fuzz: the sanitizer build failed" >&2
  exit 1
fi
rm -f "$log"
[[ ${1:-} == --build-only ]] && exit 0
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# Seeds: a real module's corpus records and manifest, and its flat file.
S=$B/fuzz-seeds
rm -rf "$S" && mkdir -p "$S/records" "$S/flat" "$S/bitcode" "$S/bitstream" "$S/combine" "$B/crashes"
cat > "$S/m.ll" <<'IR'
target triple = "x86_64-unknown-linux-gnu"
@g = global i64 5
declare i32 @printf(ptr, ...)
define i64 @f(i64 %a, ptr %p) {
entry:
  %x = load i64, ptr @g
  %c = icmp sgt i64 %a, %x
  br i1 %c, label %big, label %small
big:
  store i64 %a, ptr %p
  ret i64 %a
small:
  %s = add i64 %a, 7
  ret i64 %s
}
IR
/usr/lib/llvm-22/bin/llvm-as "$S/m.ll" -o "$S/m.bc"
cp "$S/m.bc" "$S/bitcode/"
cp "$S/m.bc" tests/data/bitstream/*.bc "$S/bitstream/"  # rustc's modules too, for the container alone
cp tests/data/fuzz/*.bc "$S/bitstream/"  # inputs that once broke a target, kept as seeds
"$B/tools/kiln-capture" add -o "$S/c" "$S/m.bc" >/dev/null
cp "$S/c/modules.jsonl" "$S/records/modules.jsonl"
cp "$S/c/kiln-corpus.json" "$S/records/manifest.json"
"$B/tools/kiln-emit" "$S/m.bc" -o "$S/m.o" --backend stamp --export-flat "$S/flat/m.flat" >/dev/null
# A rustc module with debug information: the flat file's debug section, and the DWARF.
"$B/tools/kiln-emit" tests/data/bitstream/regex-4k.bc --export-flat "$S/flat/regex-4k.flat" >/dev/null
# Inputs that once broke a target, and shapes the generated seeds lack (phis that their
# predecessors write directly: tests/unit/test_stamp_phi.cpp's module), kept as seeds.
cp tests/data/fuzz/*.flat "$S/flat/"
# fuzz_elf_combine's seeds: stamp's object of m and LLVM's of a module that uses it (a
# comdat, exception handling), each pair as the target reads it: the first object's
# length in 4 bytes (little-endian), then both objects.
cat > "$S/u.ll" <<'IR'
target triple = "x86_64-unknown-linux-gnu"
$k = comdat any
@g = external global i64
@t = internal thread_local global i64 1
declare i64 @f(i64, ptr)
declare i32 @__gxx_personality_v0(...)
define linkonce_odr i64 @k() comdat {
  ret i64 3
}
define i32 @main() personality ptr @__gxx_personality_v0 {
entry:
  %s = alloca i64
  %r = invoke i64 @f(i64 1, ptr %s) to label %ok unwind label %lp
ok:
  %k = call i64 @k()
  %v = load i64, ptr @t
  %x = load i64, ptr @g
  ret i32 0
lp:
  %l = landingpad { ptr, i32 } cleanup
  resume { ptr, i32 } %l
}
IR
/usr/lib/llvm-22/bin/llvm-as "$S/u.ll" -o "$S/u.bc"
"$B/tools/kiln-emit" "$S/u.bc" -o "$S/u.o" --backend llvm >/dev/null
# --export-flat above wrote the flat file instead of an object: stamp's object of m here.
"$B/tools/kiln-emit" "$S/m.bc" -o "$S/m.o" --backend stamp >/dev/null
pair_seed() {
  local n
  n=$(stat -c %s "$1")
  printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $((n & 255)) $((n >> 8 & 255)) $((n >> 16 & 255)) $((n >> 24 & 255)))"
  cat "$1" "$2"
}
pair_seed "$S/m.o" "$S/u.o" > "$S/combine/m-u"
pair_seed "$S/u.o" "$S/m.o" > "$S/combine/u-m"

total=0
# fuzz_stamp_output's seed: an output with no functions (KSO2, ten empty arrays, five
# stage times and the launch count, all zero), as the stamp service sends it.
mkdir -p "$S/output"
{ printf 'KSO2'; head -c 128 /dev/zero; } > "$S/output/empty"

for t in ${TARGETS:-fuzz_records fuzz_flat_file fuzz_bitcode fuzz_bitstream fuzz_direct_reader fuzz_elf_combine fuzz_stamp_output}; do
  seeds=$S/records
  [[ $t == fuzz_flat_file ]] && seeds=$S/flat
  [[ $t == fuzz_bitcode ]] && seeds=$S/bitcode
  [[ $t == fuzz_bitstream || $t == fuzz_direct_reader ]] && seeds=$S/bitstream
  [[ $t == fuzz_elf_combine ]] && seeds=$S/combine
  [[ $t == fuzz_stamp_output ]] && seeds=$S/output
  # The reader must not allocate more than its input justifies: a 64 KiB input gets
  # far less than 256 MiB.
  limit=
  [[ $t == fuzz_direct_reader ]] && limit=-malloc_limit_mb=256
  log=$B/$t.log
  mkdir -p "$S/$t-work"
  runs=$RUNS
  [[ $t == fuzz_bitcode ]] && runs=$BITCODE_RUNS
  if ! "$B/tests/$t" -runs="$runs" -max_len=65536 $limit -artifact_prefix="$B/crashes/$t-" "$S/$t-work" "$seeds" \
       >"$log" 2>&1 </dev/null; then
    tail -n 40 "$log" >&2
    echo "fuzz: $t crashed; the input is in $B/crashes/" >&2
    exit 1
  fi
  n=$(grep -o 'Done [0-9]* runs' "$log" | grep -o '[0-9]*' || echo 0)
  total=$((total + n))
  echo "fuzz: $t: $n executions, no crash"
done
echo "fuzz: $total executions in all, no crash"
