#!/usr/bin/env bash
# Take the census of a corpus, then explain its first module in full.
# Usage: examples/census.sh [CORPUS]   (tools from $KILN_BIN, else PATH;
# the default corpus is the one examples/capture-crate.sh writes)
set -euo pipefail

census=${KILN_BIN:+$KILN_BIN/}kiln-census
if ! command -v "$census" >/dev/null 2>&1; then
  echo "census.sh: kiln-census not found; set KILN_BIN to the built tools directory" >&2
  exit 6
fi
corpus=${1:-${TMPDIR:-/tmp}/kiln-example-corpus}
if [[ ! -s $corpus/modules.jsonl ]]; then
  echo "census.sh: $corpus holds no modules; run examples/capture-crate.sh first" >&2
  exit 3
fi

# Facts and verdicts of every module; this rewrites $corpus/census.jsonl.
echo "== census of $corpus"
"$census" "$corpus"

# The first module recorded (jq -n with input reads only the first line).
id=$(jq -rn 'input.id' "$corpus/modules.jsonl")
echo "== every fact and reason of module $id"
"$census" "$corpus" --explain "$id"
