#!/usr/bin/env bash
# stamp's debug information: the example crate built through stamp at cargo's default
# dev profile (full debug information), its DWARF checked against llvm -O0's with
# kiln-emit --check-lines, then a breakpoint by file:line in gdb with the frame's
# arguments, locals and an enum's value, and a panic's backtrace, as a user of the
# build would see them.
# Usage: examples/debug-info.sh   (tools from $KILN_BIN, else PATH; needs cargo, gdb)
set -euo pipefail

bin=${KILN_BIN:+$KILN_BIN/}
for tool in "${bin}kiln-capture" "${bin}kiln-emit" cargo gdb; do
  command -v "$tool" >/dev/null 2>&1 || { echo "debug-info.sh: $tool not found (set KILN_BIN for kiln's tools)" >&2; exit 6; }
done
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-debug-info.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -r "$here/rust-crate" "$work/crate"
cd "$work/crate"

echo "== kiln-capture --backend stamp -- cargo build (the dev profile: debuginfo 2)"
"${bin}kiln-capture" -o "$work/corpus" --backend stamp -- cargo build -q

echo "== kiln-emit --check-lines: stamp's line tables against llvm -O0's"
"${bin}kiln-emit" "$work/corpus" --check-lines

echo "== gdb: break src/lib.rs:98 (in eval_rpn), then bt, info args, info locals, print token"
gdb -q -batch -ex 'set pagination off' -ex 'set print address off' -ex 'tbreak lib.rs:98' -ex 'run > /dev/null' \
  -ex 'bt 3' -ex 'info args' -ex 'info locals' -ex 'print token' ./target/debug/kiln-example 2>&1 |
  grep -E '^(#|Temporary breakpoint [0-9.]+,|[a-z_]+ = |\$[0-9]+ = )' | cut -c1-160

echo "== RUST_BACKTRACE=1 kiln-example --panic"
RUST_BACKTRACE=1 ./target/debug/kiln-example --panic 2>&1 >/dev/null | head -n 12 || true
