#!/usr/bin/env bash
# The example crate's test suite built through stamp with one stamp service for the
# whole build (kiln-capture --device), then what the service did: its batches, the
# crates whose modules shared a batch, and each module's batch in its receipt.
# On a machine without a GPU this runs the CUDA executor's CPU stand-in
# (KILN_GPU_STANDIN=cpu; said in every receipt); set DEVICE=cpu for stamp's CPU executor.
# Usage: examples/capture-service.sh [CORPUS]   (tools from $KILN_BIN, else PATH)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
capture=${KILN_BIN:+$KILN_BIN/}kiln-capture
if ! command -v "$capture" >/dev/null 2>&1; then
  echo "capture-service.sh: kiln-capture not found; set KILN_BIN to the built tools directory" >&2
  exit 6
fi
corpus=${1:-${TMPDIR:-/tmp}/kiln-service-corpus}
device=${DEVICE:-cuda}
if [[ $device == cuda ]] && ! nvidia-smi -L > /dev/null 2>&1; then
  echo "== no GPU here: the CUDA executor's CPU stand-in runs the batches"
  export KILN_GPU_STANDIN=cpu
fi
target=$(mktemp -d "${TMPDIR:-/tmp}/kiln-example-target.XXXXXX")
trap 'rm -rf "$target"' EXIT

echo "== cargo test through stamp, its stages in one service on $device"
# From the crate's directory: its .cargo/config.toml points cargo at Debian's offline sources.
(cd "$root/examples/rust-crate" && KILN_SERVICE_CHECK=1 "$capture" -o "$corpus" --backend stamp --device "$device" -- \
  cargo test --target-dir "$target")

echo "== the service's summary"
tail -1 "$corpus/service.jsonl" | jq .
echo "== batches that held modules of several crates (first five)"
jq -c 'select(.clients and (.clients | length) > 1) | {batch, modules, instructions, clients}' \
  "$corpus/service.jsonl" | sed -n 1,5p  # not head: jq killed by SIGPIPE would fail the pipeline
echo "== receipts: where stamp's stages ran, and the check against the CPU executor"
jq -r 'select(.service) | "\(.service.device // "lost: \(.service.lost)")  check: \(.service.check // "-")"' \
  "$corpus/receipts.jsonl" | sort | uniq -c
