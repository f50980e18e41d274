#!/usr/bin/env bash
# Replay a corpus through the llvm service, three rounds on two workers, and show
# whether every module's object came out byte for byte the same each time.
# Usage: examples/replay.sh [CORPUS]   (tools from $KILN_BIN, else PATH;
# the default corpus is the one examples/capture-crate.sh writes)
set -euo pipefail

replay=${KILN_BIN:+$KILN_BIN/}kiln-replay
if ! command -v "$replay" >/dev/null 2>&1; then
  echo "replay.sh: kiln-replay not found; set KILN_BIN to the built tools directory" >&2
  exit 6
fi
corpus=${1:-${TMPDIR:-/tmp}/kiln-example-corpus}

# Exit status 1 means unstable or failed modules; the report is written anyway.
status=0
"$replay" "$corpus" --backend llvm --rounds 3 -j 2 || status=$?
if [[ $status -gt 1 ]]; then exit "$status"; fi

# ("module" is a jq keyword, so that field is spelled out.)
echo "== stability fields of $corpus/replay-report.json"
jq '{modules, rounds, jobs, unstable_modules, failed_modules,
     instability: [.instability[] | {module: .module, backend, kind, error, reproduce}]}' \
  "$corpus/replay-report.json"
exit "$status"
