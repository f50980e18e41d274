#!/usr/bin/env bash
# Capture the example crate (examples/rust-crate) into a corpus, with every object
# emitted by kiln's llvm back end, then run the program that build produced.
# Usage: examples/capture-crate.sh [CORPUS]   (tools from $KILN_BIN, else PATH)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
capture=${KILN_BIN:+$KILN_BIN/}kiln-capture
if ! command -v "$capture" >/dev/null 2>&1; then
  echo "capture-crate.sh: kiln-capture not found; set KILN_BIN to the built tools directory" >&2
  exit 6
fi
corpus=${1:-${TMPDIR:-/tmp}/kiln-example-corpus}

# A fresh target directory: cargo only runs rustc for what it must rebuild, and
# kiln captures only what rustc really compiles.
target=$(mktemp -d "${TMPDIR:-/tmp}/kiln-example-target.XXXXXX")
trap 'rm -rf "$target"' EXIT

# An existing corpus is added to (its modules' multiplicities grow); give a new
# directory for a fresh one. fast: opt-level 1 for cargo, -O0 code generation.
echo "== capturing examples/rust-crate into $corpus"
"$capture" -o "$corpus" --backend llvm --profile fast -- \
  cargo build --manifest-path "$root/examples/rust-crate/Cargo.toml" --target-dir "$target"

# The executable was linked from objects that kiln emitted.
echo "== running the program built on kiln's objects"
"$target/debug/kiln-example"

echo "== modules per crate"
jq -r .crate "$corpus/modules.jsonl" | sort | uniq -c | sort -rn
echo "== invocations by action"
jq -r .action "$corpus/invocations.jsonl" | sort | uniq -c
echo "corpus: $corpus"
