#!/usr/bin/env bash
# Makes what the GPU check carries (run on a CPU machine with LLVM, after a build):
#   tests/device/corpus/regex-d0.tar.xz   every module of a captured corpus as a flat
#                                         IR file (kiln-flat(5)): no LLVM needed to read
#   tests/device/corpus/regex-d0-bc.tar.xz the same modules as the corpus's bitcode
#                                         blobs (regex-d0-bc/ID.bc), for kiln's direct
#                                         bitcode reader (no LLVM either)
#   tests/device/corpus/baseline.json     kiln-replay's report on the same modules:
#                                         llvm -O0 and stamp's CPU executor, one core each
# Usage: tests/device/make-corpus.sh CORPUS   (a kiln corpus, e.g. regex captured with
#        debuginfo 0 by tests/acceptance/regex.sh; tools from build/tools)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
corpus=${1:?usage: make-corpus.sh CORPUS}
export PATH="$root/build/tools:$PATH"
work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-flat-corpus.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/regex-d0"
jq -r '.id' "$corpus/modules.jsonl" | sort -u | while read -r id; do
  kiln-emit "$corpus/blobs/${id:0:2}/$id.bc" --export-flat "$work/regex-d0/$id.flat" > /dev/null
done
echo "$(ls "$work/regex-d0" | wc -l) flat files" >&2
tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - regex-d0 | xz -9 > "$work/regex-d0.tar.xz"
mv "$work/regex-d0.tar.xz" "$root/tests/device/corpus/regex-d0.tar.xz"
mkdir "$work/regex-d0-bc"
jq -r '.id' "$corpus/modules.jsonl" | sort -u | while read -r id; do
  cp "$corpus/blobs/${id:0:2}/$id.bc" "$work/regex-d0-bc/$id.bc"
done
echo "$(ls "$work/regex-d0-bc" | wc -l) bitcode files" >&2
tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - regex-d0-bc | xz -9 > "$work/regex-d0-bc.tar.xz"
mv "$work/regex-d0-bc.tar.xz" "$root/tests/device/corpus/regex-d0-bc.tar.xz"
kiln-replay "$corpus" --backend stamp,llvm --rounds 5 -j 1 --report "$work/baseline.json" >&2
mv "$work/baseline.json" "$root/tests/device/corpus/baseline.json"
