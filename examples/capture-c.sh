#!/usr/bin/env bash
# Capture the example C program (examples/c-program), built by make with kiln's
# compiler wrapper as $(CC) and every object emitted by the llvm back end, then
# run the program.
# Usage: examples/capture-c.sh [CORPUS]   (tools from $KILN_BIN, else PATH)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
capture=${KILN_BIN:+$KILN_BIN/}kiln-capture
if ! command -v "$capture" >/dev/null 2>&1; then
  echo "capture-c.sh: kiln-capture not found; set KILN_BIN to the built tools directory" >&2
  exit 6
fi
corpus=${1:-${TMPDIR:-/tmp}/kiln-example-c-corpus}

# Build in a copy, from clean, so that make compiles every file and the source
# tree stays untouched.
build=$(mktemp -d "${TMPDIR:-/tmp}/kiln-example-c.XXXXXX")
trap 'rm -rf "$build"' EXIT
cp -R "$root/examples/c-program/." "$build/"
make -s -C "$build" clean

# kiln-capture sets CC to its kiln-cc wrapper (a link to kiln-capture-llvm, the half
# of kiln-capture that links LLVM); each "cc -c x.c -o x.o" is captured, the link
# step passes through to clang. kiln-capture-llvm --help says what it is.
echo "== capturing examples/c-program into $corpus"
"$capture" -o "$corpus" --backend llvm -- make -C "$build"

"${capture}-llvm" --version

echo "== running the program built on kiln's objects"
"$build/kiln-c-example"

echo "== modules, and what each invocation did"
jq -r '[.crate, .cgu, .bytes] | @tsv' "$corpus/modules.jsonl"
jq -r '[.action, .reason] | @tsv' "$corpus/invocations.jsonl" | sort | uniq -c
echo "corpus: $corpus"
