#!/usr/bin/env bash
# Export every module of a corpus as a flat IR file (what a machine without LLVM
# reads), then replay them through stamp's executors with kiln-replay-flat: on the
# GPU and the CPU where a GPU is usable, else on the CPU alone.
# Usage: examples/replay-flat.sh CORPUS   (tools from $KILN_BIN, else PATH)
set -euo pipefail
corpus=${1:?usage: replay-flat.sh CORPUS (e.g. from examples/capture-crate.sh)}
bin=${KILN_BIN:+$KILN_BIN/}
if ! command -v "${bin}kiln-replay-flat" >/dev/null 2>&1; then
  echo "replay-flat.sh: kiln-replay-flat not found; set KILN_BIN to the built tools directory" >&2
  exit 6
fi
flat=$(mktemp -d "${TMPDIR:-/tmp}/kiln-flat.XXXXXX")
trap 'rm -rf "$flat"' EXIT
jq -r '.id' "$corpus/modules.jsonl" | sort -u | while read -r id; do
  "${bin}kiln-emit" "$corpus/blobs/${id:0:2}/$id.bc" --export-flat "$flat/$id.flat" > /dev/null
done
device=cuda,cpu
"${bin}kiln-replay-flat" "$flat" --device cuda --rounds 2 > /dev/null 2>&1 || device=cpu
"${bin}kiln-replay-flat" "$flat" --device "$device" --rounds 3
