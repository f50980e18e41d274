#!/usr/bin/env bash
# Acceptance on a floating-point-heavy real crate: num-traits 0.2.15 from Debian's
# librust-num-traits-dev (float traits, float <-> integer casts at their edges, float
# formatting in its tests).
#   1. plain cargo test --lib --tests    the results to match
#   2. kiln-capture --backend stamp -- cargo test --lib --tests
#                                        the same tests must pass on stamp's objects
#   3. kiln-census on that corpus        how much of it stamp took, and why not the rest
#   4. kiln-emit --check-reader          the direct reader equals LLVM's parser there
# Doctests are left out: rustdoc compiles each on its own (2 minutes), and two of them
# no longer parse with rustc 1.95 under plain cargo either. num-traits' tests/cast.rs
# has constant overflows that rustc 1.95 denies; both builds allow them
# (RUSTFLAGS=-A arithmetic_overflow).
# Usage: tests/acceptance/float-crate.sh [WORKDIR]   (tools from $KILN_BIN or PATH)
set -euo pipefail
[[ -n ${KILN_BIN:-} ]] && export PATH="$KILN_BIN:$PATH"
W=${1:-${TMPDIR:-/tmp}/kiln-float-crate}
source "$(dirname "$0")/debian-crate.sh"
debian_crate_workdir "$W" crate num-traits-0.2.15 autocfg-1.1.0
export RUSTFLAGS="-A arithmetic_overflow"
summarize() { grep -E '^test result|^test .* \.\.\. (ok|FAILED|ignored)' | sed 's/; finished in .*//' | sort; }

echo "== plain cargo test --lib --tests [at ${SECONDS} s]"
cargo test --lib --tests --no-fail-fast 2>&1 | summarize > "$W/plain.tests" || true
cargo clean -q
passed=$(grep -c ' ok$' "$W/plain.tests" || true)
[[ $passed -ge 50 ]] || { echo "FAIL: plain cargo test passed only $passed tests"; cat "$W/plain.tests"; exit 1; }

echo "== kiln-capture --backend stamp -- cargo test --lib --tests [at ${SECONDS} s]"
kiln-capture -o "$W/corpus" --backend stamp -- cargo test --lib --tests --no-fail-fast 2>&1 | summarize > "$W/stamp.tests" || true
if cmp -s "$W/plain.tests" "$W/stamp.tests"; then
  echo "   same test results: $passed tests ok, $(grep -c 'FAILED$' "$W/stamp.tests" || true) failed, in both builds"
else
  echo "   DIFFERENT test results:"; diff "$W/plain.tests" "$W/stamp.tests" | head -20 || true; exit 1
fi
jq -rs '"   functions emitted: stamp \(map(.functions.stamp) | add), llvm \(map(.functions.llvm) | add); instructions: stamp \(map(.instructions.stamp) | add), llvm \(map(.instructions.llvm) | add)"' "$W/corpus/receipts.jsonl"

echo "== kiln-census [at ${SECONDS} s]"
kiln-census "$W/corpus"
echo "   why functions fall back (functions per reason):"
jq -r '.stamp_fallback_functions[]?.reasons[]' "$W/corpus/census.jsonl" | sort | uniq -c | sort -rn | sed 's/^/   /'

echo "== kiln-emit --check-reader on the corpus [at ${SECONDS} s]"
kiln-emit --check-reader "$W/corpus" | tail -n 3
echo "== float crate: done [at ${SECONDS} s]"
