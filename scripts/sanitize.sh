#!/usr/bin/env bash
# The sanitizer run (part of scripts/test.sh): kiln built with clang-22 under
# AddressSanitizer and UndefinedBehaviorSanitizer in build-fuzz/, its unit tests and
# the integration tests of hostile input run there (tests/meson.build: those outside
# the suite no-sanitizer), then every fuzz target for FUZZ_RUNS executions.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fuzz.sh --build-only
# LLVM keeps some allocations until exit on purpose; leaks are not what this run checks.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
meson test -C build-fuzz --print-errorlogs --num-processes 1 --suite unit --suite integration --no-suite no-sanitizer --timeout-multiplier 3
RUNS=${FUZZ_RUNS:-10000} scripts/fuzz.sh  # CI bound; 20,000 ran the same targets in about 100 s
