#!/usr/bin/env bash
# Issue 11's gate, measured as a new user would: regex 1.7.1 (Debian's librust-regex-dev)
# with its dependencies, plain cargo against cargo through `kiln-capture --backend stamp`,
# each with `kiln-measure build` (interleaved runs, medians, 95% intervals) and judged by
# `kiln-measure gate` (at least 10% faster, peak memory at most 1.5x):
#   build        a clean `cargo build`
#   test         a clean `cargo test --no-run`
#   incremental  a rebuild after a one-line change in regex's src/ (each run's prepare
#                builds the crate the variant's way, then changes a message in
#                src/error.rs, so that one codegen unit changes); gated
#                at "no slower" (--min-speedup 0%)
# Usage: scripts/measure-gate.sh [WORKDIR]
#   ROUTE (plugin: stamp inside rustc, kiln-capture --route plugin; bitcode: rustc writes
#   bitcode, which the corpus keeps and stamp emits), DEBUGINFO (0; 2 is cargo's dev default: stamp's objects then carry line tables,
#   subprograms, inlined calls, blocks, variables and types, not yet global variables or
#   #dbg_value variables), RUNS (3), WARMUP (1), STEPS ("build test incremental"),
#   INCREMENTAL_RUNS (15: a rebuild takes a third of a second, and the gate's question,
#   no slower, is about a few milliseconds, which 3 runs on this machine cannot settle).
# About 15 minutes on 2 cores at the defaults. The tools come from $KILN_BIN, else build/.
# Prints each table and gate verdict; the reports stay in WORKDIR. Exit 0 when every gate
# passes, 1 when one fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH="${KILN_BIN:-$root/build/tools}:$PATH"
W=${1:-${TMPDIR:-/tmp}/kiln-gate}
debuginfo=${DEBUGINFO:-0}
export CARGO_PROFILE_DEV_DEBUG=$debuginfo CARGO_PROFILE_TEST_DEBUG=$debuginfo
source "$root/tests/acceptance/regex-workdir.sh"
cp src/error.rs "$W/error.rs.orig"
cargo build -q 2>/dev/null  # lock the dependencies once
route=${ROUTE:-plugin}
kiln="kiln-capture -o \"\$KILN_MEASURE_TARGET_DIR/corpus\" --backend stamp --route $route --"
status=0
if [[ $debuginfo != 0 ]]; then
  echo "note: at debuginfo $debuginfo, stamp's DWARF for its functions lacks global variables and variables"
  echo "      that live in no memory (#dbg_value); the rest is as LLVM's (kiln-emit --check-lines)."
fi

# measure NAME MIN_SPEEDUP PREPARE COMMAND [RUNS]: plain COMMAND against COMMAND through kiln.
measure() {
  local name=$1 min=$2 prepare=$3 command=$4 runs=${5:-${RUNS:-3}}
  echo "== $name, debuginfo $debuginfo: plain \`$command\` against it through kiln-capture --backend stamp --route $route"
  kiln-measure build --runs "$runs" --warmup "${WARMUP:-1}" --workdir "$W/$name" \
    --json "$W/$name.json" --svg "$W/$name.svg" --prepare "$prepare" \
    --baseline "$command" --candidate "$kiln $command"
  kiln-measure phases "$W/$name/candidate/corpus" --json "$W/$name-phases.json" > "$W/$name-phases.md" || true
  kiln-measure gate "$W/$name.json" --min-speedup "$min" || status=1
}

for step in ${STEPS:-build test incremental}; do
  case $step in
    build) measure build 10% 'rm -rf "$CARGO_TARGET_DIR"' 'cargo build -q' ;;
    test) measure test 10% 'rm -rf "$CARGO_TARGET_DIR"' 'cargo test -q --no-run' ;;
    incremental)
      # The prepare brings the variant's target dir up to date from the original
      # source (its own way: plain, or through kiln), then changes one line.
      prepare="cp '$W/error.rs.orig' src/error.rs && if [ \"\$KILN_MEASURE_VARIANT\" = candidate ];
        then $kiln cargo build -q; else cargo build -q; fi &&
        sed -i 's/compiled program too big\"/compiled program too big (edited)\"/' src/error.rs"
      measure incremental 0% "$prepare" 'cargo build -q' "${INCREMENTAL_RUNS:-15}"
      cp "$W/error.rs.orig" src/error.rs ;;
    *) echo "measure-gate.sh: unknown step '$step' (build, test, incremental)" >&2; exit 2 ;;
  esac
done
exit "$status"
