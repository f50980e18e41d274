#!/usr/bin/env bash
# kiln-bisect on regex's own test suite, on demand (not in CI: some thirty probes, each
# a rebuild of regex and a test run, 20-40 minutes on 2 cores). A culprit is planted
# with kiln's test-only fault switch: stamp miscompiles regex::utf8::decode_utf8
# (FUNCTION: another symbol pattern), and kiln-bisect must name exactly that function
# within 2*log2(functions)+10 test runs; then its reproducer runs.
# The probes clean only regex (`cargo clean -p regex`): its dependencies stay as the
# first build made them, so the search runs over regex's functions and its tests'.
# Usage: scripts/bisect-regex.sh [WORKDIR]   (tools from $KILN_BIN, else build/tools)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PATH="${KILN_BIN:-$root/build/tools}:$PATH"
W=$(realpath -m "${1:-${TMPDIR:-/tmp}/kiln-bisect-regex}")
FUNCTION=${FUNCTION:-'^_RNvNtC[A-Za-z0-9_]+_5regex4utf811decode_utf8'}
source "$root/tests/acceptance/regex-workdir.sh"   # a fresh copy in $W/regex, and cd there
# The symbol, as builds through kiln-capture name it (rustc there mangles with v0).
kiln-capture -o "$W/names" --backend llvm -- cargo test --test default --no-run -q 2>/dev/null
binary=$(find target/debug/deps -maxdepth 1 -type f -executable -name 'default-*' -print -quit)
name=$(nm --defined-only "$binary" | awk -v p="$FUNCTION" '$3 ~ p { print $3 }' | sort -u | paste -sd,)
[[ -n $name ]] || { echo "bisect-regex.sh: no symbol matching $FUNCTION in $binary" >&2; exit 1; }
echo "== planting a fault in $name (test-only: KILN_TEST_FAULT)"
export KILN_TEST_FAULT=$name
status=0
kiln-bisect --build 'cargo test --test default --no-run -q' --test 'cargo test --test default -q' \
  --clean 'cargo clean -q -p regex' --timeout 300 --state "$W/state" -v --json > "$W/result.json" || status=$?
jq -r '"== kiln-bisect exit \(.exit_code): \(.message)\n   \(.items) items, \(.probes) probes, \(.test_runs) test runs (bound \(.bound))"' "$W/result.json"
jq -r '.culprits[] | "   \(.function)\n   \(.demangled) (crate \(.crate), module \(.module))"' "$W/result.json"
if ! jq -e --arg f "$name" '(.culprits | length) == 1 and (.culprits[0].function as $c | $f | split(",") | index($c)) and .test_runs <= .bound' "$W/result.json" >/dev/null; then
  echo "bisect-regex.sh: FAIL: expected exactly $name within the bound" >&2
  exit 1
fi
echo "== the reproducer"
"$W/state/repro/reproduce.sh"
