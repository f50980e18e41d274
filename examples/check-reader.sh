#!/usr/bin/env bash
# The direct bitcode reader against LLVM's parser: every module of a corpus read
# both ways must give byte-identical flat arrays, verdicts and global data (or be
# declined, with a reason); then one module emitted by stamp through the direct
# reader (no LLVM at all when the module is whole) and through LLVM's parser, and
# the two objects compared.
# Usage: examples/check-reader.sh [CORPUS]   (tools from $KILN_BIN, else PATH;
# the default corpus is the one examples/capture-crate.sh writes)
set -euo pipefail

emit=${KILN_BIN:+$KILN_BIN/}kiln-emit
if ! command -v "$emit" >/dev/null 2>&1; then
  echo "check-reader.sh: kiln-emit not found; set KILN_BIN to the built tools directory" >&2
  exit 6
fi
corpus=${1:-${TMPDIR:-/tmp}/kiln-example-corpus}
if [[ ! -s $corpus/modules.jsonl ]]; then
  echo "check-reader.sh: $corpus holds no modules; run examples/capture-crate.sh first" >&2
  exit 3
fi

echo "== kiln-emit --check-reader $corpus"
"$emit" "$corpus" --check-reader

# One module, both routes: the receipts say which route each took.
id=$(head -n 1 "$corpus/modules.jsonl" | sed 's/.*"id":"\([0-9a-f]*\)".*/\1/')
blob=$corpus/blobs/${id:0:2}/$id.bc
out=$(mktemp -d "${TMPDIR:-/tmp}/kiln-check-reader.XXXXXX")
trap 'rm -rf "$out"' EXIT
echo "== module $id with --backend stamp, each reader"
"$emit" "$blob" -o "$out/direct.o" --backend stamp --reader direct --receipt "$out/direct.json" >/dev/null
"$emit" "$blob" -o "$out/llvm.o" --backend stamp --reader llvm --receipt "$out/llvm.json" >/dev/null
for r in direct llvm; do
  echo "   --reader $r: $(grep -o '"reader":{[^}]*}' "$out/$r.json")"
done
if cmp -s "$out/direct.o" "$out/llvm.o"; then
  echo "   objects identical"
else
  echo "   objects differ (a module not whole takes LLVM's route either way; one that is must not differ)"
fi
