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
stamp_runs_crate_tests "$W" 50 --lib --tests
echo "== float crate: done [at ${SECONDS} s]"
