#!/usr/bin/env bash
# Acceptance on a real crate that uses SSE2 and AVX2 intrinsics: memchr 2.5.0 from
# Debian's librust-memchr-dev (its x86 searchers call core::arch's _mm_cmpeq_epi8,
# _mm_movemask_epi8, _mm256_* and friends, chosen at run time by CPU feature; its tests
# run them against the naive searchers with quickcheck from librust-quickcheck-dev).
#   1. plain cargo test --lib --tests    the results to match
#   2. kiln-capture --backend stamp -- cargo test --lib --tests
#                                        the same tests must pass on stamp's objects
#   3. kiln-census on that corpus        how much of it stamp took, and why not the rest
#   4. kiln-emit --check-reader          the direct reader equals LLVM's parser there
# Doctests are left out, as in float-crate.sh: rustdoc compiles each on its own.
# Usage: tests/acceptance/simd-crate.sh [WORKDIR]   (tools from $KILN_BIN or PATH)
set -euo pipefail
[[ -n ${KILN_BIN:-} ]] && export PATH="$KILN_BIN:$PATH"
W=${1:-${TMPDIR:-/tmp}/kiln-simd-crate}
source "$(dirname "$0")/debian-crate.sh"
debian_crate_workdir "$W" crate memchr-2.5.0 quickcheck-1.0.3 rand-0.8.5 rand_core-0.6.3
stamp_runs_crate_tests "$W" 50 --lib --tests
# The searchers' vector code is stamp's: every core::arch function memchr calls, and
# since vector arguments (the SSE2 and AVX2 searchers pass __m128i and __m256i by
# value between their helpers) every function of the build.
left=$(jq -r '.stamp_fallback_functions[]? | "\(.name): \(.reasons | join(", "))"' "$W/corpus/census.jsonl" | sort -u)
if [[ -n $left ]]; then echo "FAIL: functions still fall back:"; echo "$left" | head; exit 1; fi
echo "== simd crate: done [at ${SECONDS} s]"
