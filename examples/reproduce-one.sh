#!/usr/bin/env bash
# Reproduce one module offline: copy its blob out of the corpus, emit it with the
# llvm back end and with llc-22 as a cmd: back end, and take its census alone.
# The copied .bc file is all that is needed to rerun any of these commands.
# Usage: examples/reproduce-one.sh [CORPUS [ID [OUTDIR]]]
#        (tools from $KILN_BIN, else PATH; ID defaults to the corpus's first module)
set -euo pipefail

bin=${KILN_BIN:+$KILN_BIN/}
for tool in kiln-emit kiln-census; do
  if ! command -v "$bin$tool" >/dev/null 2>&1; then
    echo "reproduce-one.sh: $tool not found; set KILN_BIN to the built tools directory" >&2
    exit 6
  fi
done
if ! command -v llc-22 >/dev/null 2>&1; then
  echo "reproduce-one.sh: llc-22 not found (Debian package llvm-22)" >&2
  exit 6
fi
corpus=${1:-${TMPDIR:-/tmp}/kiln-example-corpus}
if [[ -n ${2:-} ]]; then
  id=$2
elif [[ -s $corpus/modules.jsonl ]]; then
  id=$(jq -rn 'input.id' "$corpus/modules.jsonl")
else
  echo "reproduce-one.sh: $corpus holds no modules; run examples/capture-crate.sh first" >&2
  exit 3
fi
if [[ ! $id =~ ^[0-9a-f]{32}$ ]]; then
  echo "reproduce-one.sh: '$id' is not a full 32-digit module id" >&2
  exit 2
fi
out=${3:-$(mktemp -d "${TMPDIR:-/tmp}/kiln-reproduce.XXXXXX")}
mkdir -p "$out"

# Blobs are content-addressed: blobs/<first two digits>/<id>.bc.
cp "$corpus/blobs/${id:0:2}/$id.bc" "$out/$id.bc"
echo "== module $id copied to $out/$id.bc"

# kiln's in-process back end at the fast profile (code generation at -O0).
"${bin}kiln-emit" "$out/$id.bc" -o "$out/llvm.o" --backend llvm --profile fast \
  --receipt "$out/llvm.receipt.json" >/dev/null

# The same module through llc-22, set up like the llvm back end: -O0, PIC, one
# section per function and datum.
llc='cmd:llc-22 -O0 -filetype=obj -relocation-model=pic -function-sections -data-sections {in} -o {out}'
"${bin}kiln-emit" "$out/$id.bc" -o "$out/llc.o" --backend "$llc" --profile fast \
  --receipt "$out/llc.receipt.json" >/dev/null

echo "== the two objects"
jq -s -r '.[] | [.backend, .object_bytes, .object_xxh3, "codegen \(.stages.codegen) s"] | @tsv' \
  "$out/llvm.receipt.json" "$out/llc.receipt.json"

# The census of the file alone: no corpus needed.
echo "== census of the file alone"
"${bin}kiln-census" "$out/$id.bc"
echo "files: $out"
