#!/usr/bin/env bash
# stamp inside rustc: build the example crate (examples/rust-crate) through
# `kiln-capture --backend stamp --route plugin`, run the program, then show what the
# plugin took (CORPUS/plugin.jsonl), where the build's time went (kiln-measure phases)
# and that each rlib keeps a plain cargo build's object contract (kiln-emit
# --compare-contract).
# Usage: examples/stamp-in-rustc.sh [OUTDIR]   (tools from $KILN_BIN, else PATH)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${KILN_BIN:+$KILN_BIN/}
if ! command -v "${bin}kiln-capture" >/dev/null 2>&1; then
  echo "stamp-in-rustc.sh: kiln-capture not found; set KILN_BIN to the built tools directory" >&2
  exit 6
fi
out=${1:-$(mktemp -d "${TMPDIR:-/tmp}/kiln-stamp-in-rustc.XXXXXX")}
mkdir -p "$out"
# From the crate's directory, so that cargo reads its .cargo/config.toml (Debian's
# offline crate sources).
cd "$root/examples/rust-crate"

echo "== cargo build through stamp inside rustc (no bitcode is written or kept)"
"${bin}kiln-capture" -o "$out/corpus" --backend stamp --route plugin -- \
  cargo build -q --target-dir "$out/plugin-target"
"$out/plugin-target/debug/kiln-example"

echo "== codegen units stamp took whole inside rustc (plugin.jsonl)"
jq -rs '"\(map(select(.stamp)) | length) of \(length) units, \(map(.functions) | add) functions, \(map(.seconds) | add * 1000 | floor) ms in the plugin"' \
  "$out/corpus/plugin.jsonl"

echo "== where the build's time went"
"${bin}kiln-measure" phases "$out/corpus" | sed -n '1,10p'

echo "== each rlib against a plain cargo build's"
cargo build -q --target-dir "$out/plain-target"
for rlib in "$out"/plugin-target/debug/deps/*.rlib; do
  "${bin}kiln-emit" "$out/plain-target/debug/deps/$(basename "$rlib")" --compare-contract "$rlib" | tail -1
done
