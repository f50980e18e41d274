#!/usr/bin/env bash
# Acceptance on a real crate: regex 1.7.1 from Debian's librust-regex-dev, with its
# dependencies (aho-corasick, memchr, regex-syntax).
#   1. kiln-capture -- cargo build        captures every codegen unit
#   2. kiln-capture --backend llvm -- cargo test
#                                          builds regex's own test suite from
#                                          kiln-emitted objects; the same tests must
#                                          pass as under a plain cargo test (stamp:
#                                          with the direct reader; then kiln-emit
#                                          --check-reader compares it with LLVM's
#                                          parser on every module of that corpus)
#                                          and gdb on its default test binary shows
#                                          the same as on plain cargo's (regex_gdb_check)
#   3. kiln-emit --check-contract, kiln-census, kiln-replay --rounds 3, kiln-measure build
#      on that corpus; census and replay in 4 shards (--shard K/4, GNU parallel) merged
#      and compared with one run
# Usage: tests/acceptance/regex.sh [WORKDIR]   (tools from $KILN_BIN or PATH)
# Set DEBUGINFO=0 or 2 to force the dev profile's debug info (default: cargo's own),
# BACKENDS="llvm stamp" (the default) names the back ends that rebuild the test suite
# (stamp-plugin: stamp inside rustc, kiln-capture --route plugin),
# REPLAY_ROUNDS (default 3) the rounds of kiln-replay, RUNS (3) and WARMUP (1) those of
# kiln-measure build (MEASURE=0 leaves that step out, as CI does: the measure
# integration test covers the tool, scripts/measure-gate.sh the figures),
# PLAIN_CARGO=0 takes plain cargo test's results from their record instead of running it,
# ONLY_TESTS=1 stops after the tests.
# DEVICE=cuda or cpu runs stamp's stages in one service for the build (kiln-capture
# --device; KILN_GPU_STANDIN=cpu for the CPU stand-in where there is no GPU, as in CI),
# each of its outputs checked against the CPU executor's (KILN_SERVICE_CHECK=1); the
# check that batches drew on several crates wants KILN_SERVICE_BATCHING=fixed on a
# machine of few cores (CI sets it), where crates seldom emit at the same moment.
set -euo pipefail
[[ -n ${KILN_BIN:-} ]] && export PATH="$KILN_BIN:$PATH"
W=${1:-${TMPDIR:-/tmp}/kiln-regex}
# regex's tests also need quickcheck, lazy_static and rand: librust-{quickcheck,lazy-static,rand}-dev.
recorded="$(cd "$(dirname "$0")" && pwd)/regex-1.7.1.tests.xz"
source "$(dirname "$0")/regex-workdir.sh"
if [[ -n ${DEBUGINFO:-} ]]; then export CARGO_PROFILE_DEV_DEBUG=$DEBUGINFO CARGO_PROFILE_TEST_DEBUG=$DEBUGINFO; fi

# The build's stamp service (DEVICE=...): every module with stamp functions went through
# it and its output equals the CPU executor's; batches drew on several crates; nothing
# of it is left running.
service_check() {
  local c=$1
  echo "   service: $(tail -1 "$c/service.jsonl")"
  # (A module without functions but with globals for stamp's object goes through it too.)
  jq -se '[.[] | select(.backend == "stamp" and .functions.stamp > 0)] as $stamp | ($stamp | length) > 0 and
    all($stamp[]; .service.check == "equal") and all(.[]; .service.lost == null and .service.check != "differs")' \
    "$c/receipts.jsonl" > /dev/null ||
    { echo "FAIL: not every stamp module went through the service with an output equal to the CPU executor's"; exit 1; }
  tail -1 "$c/service.jsonl" | jq -e '.summary and .failed == 0 and .batches_from_several_clients > 0' > /dev/null ||
    { echo "FAIL: the service's summary: no batch from several crates, or failures"; exit 1; }
  if pgrep -f -- "--stamp-servic[e] " > /dev/null; then echo "FAIL: a stamp service is still running"; exit 1; fi
  echo "   every output from the service equals the CPU executor's; batches from several crates; no service left"
}

summarize() { grep -E '^test result|^test .* \.\.\. (ok|FAILED|ignored)' | sed 's/; finished in .*//' | sort; }

# gdb on regex's own test binary (tests/test_default.rs) as built through stamp, against
# the same binary built by plain cargo: breakpoints by file:line in regex's sources, each
# stop's backtrace, arguments, locals and values, the same in both. The default dev
# profile only: at debuginfo 0 there is nothing to compare.
regex_gdb_check() {
  local stamp_bin native_bin
  stamp_bin=$(find target/debug/deps -maxdepth 1 -type f -executable -name 'default-*' | head -1)
  echo "== gdb on regex's default test binary: stamp's build against plain cargo's [at ${SECONDS} s]"
  CARGO_TARGET_DIR="$W/native-target" cargo test --no-run -q --test default 2>/dev/null
  native_bin=$(find "$W/native-target/debug/deps" -maxdepth 1 -type f -executable -name 'default-*' | head -1)
  # regex's api tests, one thread: Regex::captures and the executor's captures_read_at
  # (two monomorphic copies), stopped at 13 times in a fixed order.
  local args=(-ex "set pagination off" -ex "set print address off" -ex "set width 0")
  args+=(-ex "break re_unicode.rs:312" -ex "break exec.rs:417" -ex "run api:: --test-threads=1 -q > /dev/null")
  for _ in $(seq 12); do args+=(-ex "bt 8" -ex "info args" -ex "info locals" -ex "print *self" -ex "print text" -ex continue); done
  args+=(-ex kill)
  for b in native stamp; do
    local bin=$native_bin; [[ $b == stamp ]] && bin=$stamp_bin
    { timeout 300 gdb -q -batch "${args[@]}" "$bin" 2>&1 || true; } |
      grep -Ev '^(\[Inferior|\[New Thread|\[Thread|\[Switching to|Using host|Reading symbols|warning: |of file |Use .info auto-load|Kill the program)' |
      sed -E 's/^(Breakpoint [0-9]+ at )0x[0-9a-f]+: /\1/' > "$W/regex-$b.gdb"
  done
  if [[ $(grep -c " hit Breakpoint " "$W/regex-native.gdb") -eq 13 ]] && cmp -s "$W/regex-native.gdb" "$W/regex-stamp.gdb"; then
    echo "   the same 13 stops, $(grep -c '^#' "$W/regex-stamp.gdb") frames and $(grep -c ' = ' "$W/regex-stamp.gdb") values as plain cargo's build"
  else
    echo "   DIFFERENT under gdb:"; diff "$W/regex-native.gdb" "$W/regex-stamp.gdb" | head -20 || true; exit 1
  fi
  # A panicking test's RUST_BACKTRACE=1 frames: the same places (file:line:column).
  # Their names are not compared: kiln's link step gives some symbols v0 mangling
  # ({closure#0} where cargo's build shows {{closure}}), as capture_rust.sh notes.
  for b in native stamp; do
    local bin=$native_bin; [[ $b == stamp ]] && bin=$stamp_bin
    { RUST_BACKTRACE=1 "$bin" api::capture_index_panic_name --exact --nocapture --test-threads=1 2>&1 || true; } |
      grep -E '^ +at |panicked at' | sed -E 's/^thread .* panicked at/panicked at/' > "$W/regex-$b.backtrace"
  done
  if [[ $(grep -c ' at ' "$W/regex-stamp.backtrace") -ge 5 ]] && cmp -s "$W/regex-native.backtrace" "$W/regex-stamp.backtrace"; then
    echo "   a panicking test's backtrace: the same $(grep -c '^ *at ' "$W/regex-stamp.backtrace") places as plain cargo's build"
  else
    echo "   DIFFERENT backtrace:"; diff "$W/regex-native.backtrace" "$W/regex-stamp.backtrace" | head -20 || true; exit 1
  fi
}

# stamp inside rustc (BACKENDS=stamp-plugin: kiln-capture --backend stamp --route plugin)
# keeps no bitcode to emit again: its rlibs' units are compared with a plain cargo
# build's, unit by unit (kiln-emit --compare-contract), for every library crate both
# builds have (regex and its dependencies).
plugin_contract_check() {
  jq -rs '"   codegen units stamp took whole inside rustc: \(map(select(.stamp)) | length) of \(length)"' \
    "$W/test-corpus-stamp-plugin/plugin.jsonl"
  rm -rf "$W/plugin-rlibs" && mkdir -p "$W/plugin-rlibs" && cp target/debug/deps/*.rlib "$W/plugin-rlibs/"
  cargo clean -q && cargo build -q
  local compared=0 rlib
  for rlib in "$W"/plugin-rlibs/*.rlib; do
    [[ -e target/debug/deps/$(basename "$rlib") ]] || continue
    kiln-emit "target/debug/deps/$(basename "$rlib")" --compare-contract "$rlib" > "$W/contract.txt" ||
      { tail -20 "$W/contract.txt"; echo "FAIL: $(basename "$rlib") does not keep the plain build's object contract"; exit 1; }
    compared=$((compared + 1))
  done
  [[ $compared -ge 4 ]] || { echo "FAIL: only $compared rlibs compared with a plain build's"; exit 1; }
  echo "   the object contract of a plain cargo build in all $compared library crates (kiln-emit --compare-contract)"
}

# What plain cargo test gives, recorded once from Debian's regex 1.7.1
# (regex-1.7.1.tests.xz): PLAIN_CARGO=0 (CI) compares with that record and saves the
# two minutes of a plain build; otherwise plain cargo runs too, and a difference from
# the record is said (a new regex package: record it again from $W/plain.tests).
if [[ ${PLAIN_CARGO:-1} == 0 ]]; then
  echo "== plain cargo test: its results as recorded in tests/acceptance/regex-1.7.1.tests.xz [at ${SECONDS} s]"
  xz -dc "$recorded" > "$W/plain.tests"
else
  echo "== plain cargo test [at ${SECONDS} s]"
  cargo test --no-fail-fast 2>&1 | summarize > "$W/plain.tests" || true
  cargo clean -q
  cmp -s "$W/plain.tests" <(xz -dc "$recorded") ||
    echo "   note: plain cargo test's results differ from tests/acceptance/regex-1.7.1.tests.xz"
fi

echo "== capture: kiln-capture -o corpus -- cargo build [at ${SECONDS} s]"
kiln-capture -o "$W/corpus" -- cargo build -q
echo "   $(jq -r .id "$W/corpus/modules.jsonl" | sort -u | wc -l) distinct modules from crates: $(jq -r .crate "$W/corpus/modules.jsonl" | sort -u | tr '\n' ' ')"

# Each back end in BACKENDS rebuilds the whole test suite from its own objects.
for BACKEND in ${BACKENDS:-llvm stamp}; do
  echo "== kiln-capture --backend $BACKEND -- cargo test [at ${SECONDS} s]"
  cargo clean -q
  route=(--backend "$BACKEND")
  [[ $BACKEND == stamp && -n ${DEVICE:-} ]] && route+=(--device "$DEVICE")
  [[ $BACKEND == stamp-plugin ]] && route=(--backend stamp --route plugin)
  KILN_SERVICE_CHECK=1 kiln-capture -o "$W/test-corpus-$BACKEND" "${route[@]}" -- cargo test --no-fail-fast 2>&1 | summarize > "$W/$BACKEND.tests" || true
  if cmp -s "$W/plain.tests" "$W/$BACKEND.tests"; then
    echo "   same test results: $(grep -c ' ok$' "$W/$BACKEND.tests") tests ok, $(grep -c 'FAILED$' "$W/$BACKEND.tests" || true) failed, in both builds"
  else
    echo "   DIFFERENT test results:"; diff "$W/plain.tests" "$W/$BACKEND.tests" | head -20 || true; exit 1
  fi
  if [[ $BACKEND == stamp-plugin ]]; then plugin_contract_check; continue; fi
  echo "   receipts from kiln-capture: $(grep -c '"origin":"kiln-capture"' "$W/test-corpus-$BACKEND/receipts.jsonl")"
  jq -rs '"   functions emitted: stamp \(map(.functions.stamp) | add), llvm \(map(.functions.llvm) | add); instructions: stamp \(map(.instructions.stamp) | add), llvm \(map(.instructions.llvm) | add)"' "$W/test-corpus-$BACKEND/receipts.jsonl"
  if [[ $BACKEND == stamp ]]; then
    jq -rs '"   reader routes: \(map(.reader.route // "none") | group_by(.) | map("\(.[0]) \(length)") | join(", "))"' "$W/test-corpus-$BACKEND/receipts.jsonl"
    if [[ -n ${DEVICE:-} ]]; then service_check "$W/test-corpus-$BACKEND"; fi
    # The oracle: every module of the test corpus read by the direct reader and by
    # LLVM's parser and exporter must come out byte-identical, or be declined.
    echo "== kiln-emit --check-reader on the stamp test corpus [at ${SECONDS} s]"
    kiln-emit --check-reader "$W/test-corpus-$BACKEND"
    if [[ ${DEBUGINFO:-2} != 0 ]] && command -v gdb >/dev/null; then regex_gdb_check; fi
  fi
done
[[ ${ONLY_TESTS:-} == 1 ]] && exit 0

echo "== kiln-emit --check-contract (stamp's objects against llvm's, every module) [at ${SECONDS} s]"
kiln-emit "$W/corpus" --check-contract --no-verify | tail -n 20
echo "== kiln-census [at ${SECONDS} s]"
kiln-census "$W/corpus" | sed -n 1,40p  # sed reads it all: no SIGPIPE under pipefail
echo "== kiln-replay --backend stamp,llvm --rounds ${REPLAY_ROUNDS:-3} -j 1 [at ${SECONDS} s]"
# Instability is reported, not fatal here: it is a finding about the back end (LLVM's
# DWARF emission differs when code generators run concurrently in one process).
kiln-replay "$W/corpus" --backend stamp,llvm --rounds "${REPLAY_ROUNDS:-3}" -j 1 || echo "   kiln-replay exit status $?: see $W/corpus/replay-report.json"
echo "== --shard: census and stamp's replay in 4 shards under GNU parallel, merged, against one run [at ${SECONDS} s]"
# What the shards merge into must be what one run gives (tests/integration/shard.sh
# on the example crate; here on regex's corpus): the census line for line, and the
# replay's figures and per-module verdicts, timings aside.
if ! command -v parallel >/dev/null; then
  echo "FAIL: GNU parallel is not installed; it is a dependency (scripts/install-deps.sh)"
  exit 1
fi
S=$W/shard-check
rm -rf "$S" && mkdir -p "$S"
parallel --halt now,fail=1 kiln-census "$W/corpus" --shard {}/4 -j 1 '>' /dev/null ::: 1 2 3 4
kiln-census merge "$W/corpus" "$W"/corpus/census.shard-{1,2,3,4}-of-4.jsonl -o "$S/census.jsonl" > /dev/null
cmp "$W/corpus/census.jsonl" "$S/census.jsonl" || { echo "FAIL: the shards' merged census differs from one census"; exit 1; }
rounds=${REPLAY_ROUNDS:-3}
kiln-replay "$W/corpus" --backend stamp --rounds "$rounds" -j 1 --report "$S/whole.json" > /dev/null || true
parallel kiln-replay "$W/corpus" --backend stamp --rounds "$rounds" -j 1 --shard {}/4 --report "$S/shard-{}.json" \
  '>' /dev/null ::: 1 2 3 4 || true
kiln-replay merge "$W/corpus" "$S"/shard-{1,2,3,4}.json -o "$S/merged.json" > /dev/null || true
untimed='del(.time) | .services[].rounds[] |= {round, instructions, modules_ok, modules_failed, functions,
  functions_stamp, instructions_stamp, text_bytes, kernel_launches}'
diff <(jq -S "$untimed" "$S/whole.json") <(jq -S "$untimed" "$S/merged.json") > "$S/diff.txt" ||
  { head -40 "$S/diff.txt"; echo "FAIL: the shards' merged replay report differs from one run's"; exit 1; }
echo "   the same census and replay verdicts as one run ($(jq '.module_verdicts | length' "$S/merged.json") modules)"
[[ ${MEASURE:-1} == 0 ]] && exit 0
echo "== kiln-measure build (cargo build with and without kiln --backend llvm) [at ${SECONDS} s]"
cargo build -q
kiln-measure build --runs "${RUNS:-3}" --warmup "${WARMUP:-1}" --json "$W/measure.json" --svg "$W/measure.svg" \
  --prepare 'rm -rf "$CARGO_TARGET_DIR"' --baseline 'cargo build -q' \
  --candidate 'kiln-capture -o "$KILN_MEASURE_TARGET_DIR/corpus" --backend llvm -- cargo build -q'
