#!/usr/bin/env bash
# Issue 11's gate, measured as a new user would: regex 1.7.1 (Debian's librust-regex-dev)
# with its dependencies, plain cargo against cargo through `kiln-capture --backend stamp`,
# each with `kiln-measure build` (interleaved runs, medians, 95% intervals) and judged by
# `kiln-measure gate` (at least 10% faster, peak memory at most 1.5x):
#   build        a clean `cargo build`
#   test         a clean `cargo test --no-run`
#   incremental  a rebuild after a one-line change in regex's src/ (each run's prepare
#                builds the crate the variant's way, then makes the change); gated at
#                "no slower" (--min-speedup 0%), for each of two changes, which ask
#                different amounts of the back end:
#                  incremental       a message in src/error.rs: rustc compiles again
#                                    one unit of 3 functions, the least code an edit
#                                    can leave to a back end
#                  incremental-code  a line of code in src/exec.rs (a vector's
#                                    capacity in ExecBuilder::parse): rustc compiles
#                                    again the units of the functions it changes
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
cp src/exec.rs "$W/exec.rs.orig"
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

# edit NAME FILE SED: the incremental rebuild after SED changes one line of src/FILE.
# The prepare brings the variant's target dir up to date from the original source (its
# own way: plain, or through kiln), then changes the line.
edit() {
  local name=$1 file=$2 sed=$3
  local prepare="cp '$W/$file.orig' src/$file && if [ \"\$KILN_MEASURE_VARIANT\" = candidate ];
        then $kiln cargo build -q; else cargo build -q; fi && sed -i '$sed' src/$file &&
        ! cmp -s '$W/$file.orig' src/$file"  # an edit sed did not make would time a no-op
  measure "$name" 0% "$prepare" 'cargo build -q' "${INCREMENTAL_RUNS:-15}"
  cp "$W/$file.orig" "src/$file"
}

for step in ${STEPS:-build test incremental}; do
  case $step in
    build) measure build 10% 'rm -rf "$CARGO_TARGET_DIR"' 'cargo build -q' ;;
    test) measure test 10% 'rm -rf "$CARGO_TARGET_DIR"' 'cargo test -q --no-run' ;;
    incremental)
      edit incremental error.rs 's/compiled program too big"/compiled program too big (edited)"/'
      edit incremental-code exec.rs 's/Vec::with_capacity(self.options.pats.len());/Vec::with_capacity(self.options.pats.len() + 1);/' ;;
    *) echo "measure-gate.sh: unknown step '$step' (build, test, incremental)" >&2; exit 2 ;;
  esac
done
exit "$status"
