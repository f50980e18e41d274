#!/usr/bin/env bash
# kiln-bisect on the example crate, with a planted culprit: kiln's test-only fault
# switch (KILN_TEST_FAULT) makes stamp miscompile eval_rpn (its first conditional
# branch goes the wrong way), so `cargo test` fails on stamp's objects, and kiln-bisect
# names that function among all that stamp compiles, then runs its reproducer.
# Usage: examples/bisect.sh [WORKDIR]   (tools from $KILN_BIN, else PATH; a few minutes)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[[ -n ${KILN_BIN:-} ]] && export PATH="$KILN_BIN:$PATH"
command -v kiln-bisect >/dev/null || { echo "bisect.sh: kiln-bisect not found; set KILN_BIN" >&2; exit 6; }
W=${1:-$(mktemp -d "${TMPDIR:-/tmp}/kiln-bisect.XXXXXX")}
mkdir -p "$W/crate"
cp -r "$root/examples/rust-crate/." "$W/crate/"
rm -rf "$W/crate/target"
cd "$W/crate"

# The symbol to break, as builds through kiln-capture name it (rustc there mangles with
# v0), read from the bitcode of one such build.
kiln-capture -o "$W/names" --backend llvm -- cargo test --no-run -q 2>/dev/null
name=$(for id in $(jq -r .id "$W/names/modules.jsonl" | sort -u); do
         llvm-nm-22 --defined-only --format=just-symbols "$W/names/blobs/${id:0:2}/$id.bc" 2>/dev/null
       done | grep -E '12kiln_example8eval_rpn$' | sort -u | paste -sd,)
cargo clean -q
echo "== planting a fault in $name (test-only: KILN_TEST_FAULT)"
export KILN_TEST_FAULT=$name

echo "== kiln-bisect --build 'cargo test --no-run' --test 'cargo test'"
status=0
kiln-bisect --build 'cargo test --no-run -q' --test 'cargo test -q' --state "$W/state" --timeout 60 -v || status=$?
echo "== kiln-bisect exit status $status; the suspect's IR begins:"
head -n 6 "$W/state/repro/suspect-1.ll" 2>/dev/null || true
echo "== the reproducer"
"$W/state/repro/reproduce.sh"
