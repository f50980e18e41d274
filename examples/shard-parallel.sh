#!/usr/bin/env bash
# Shard a corpus's census and replay four ways with GNU parallel on this machine, then
# merge the shards into the corpus's census.jsonl and replay-report.json: the same as
# one unsharded run (kiln-census(1), kiln-replay(1): SHARDS). Every shard writes its
# own file (CORPUS/census.shard-K-of-N.jsonl, CORPUS/replay-report.shard-K-of-N.json),
# so shards into one corpus never overwrite each other.
# Usage: examples/shard-parallel.sh [CORPUS] [N]   (tools from $KILN_BIN, else PATH;
# the default corpus is the one examples/capture-crate.sh writes; N defaults to 4)
#
# Across machines: give parallel the hosts and let it copy the corpus out and the
# shards' files back (the corpus path must be the same on every host, and the kiln
# tools on each host's PATH):
#   tar -C "$(dirname "$corpus")" -cf corpus.tar "$(basename "$corpus")"
#   parallel --sshlogin host1,host2 --transferfile corpus.tar --cleanup \
#     --return "$corpus/census.shard-{}-of-4.jsonl" --return "$corpus/replay-report.shard-{}-of-4.json" \
#     "tar -C $(dirname "$corpus") -xf corpus.tar && kiln-census $corpus --shard {}/4 >/dev/null &&
#      kiln-replay $corpus --backend stamp,llvm --shard {}/4 >/dev/null; [ \$? -le 1 ]" ::: 1 2 3 4
#   kiln-census merge "$corpus" && kiln-replay merge "$corpus"
# (kiln-emit CORPUS --out DIR --shard {}/4 works the same way: return DIR's ID.o files
# and receipts.jsonl; copying the objects together and concatenating the receipts is
# its merge.)
set -euo pipefail

bin=${KILN_BIN:+$KILN_BIN/}
for tool in kiln-census kiln-replay parallel; do
  if ! command -v "${tool/#kiln/${bin}kiln}" >/dev/null 2>&1; then
    echo "shard-parallel.sh: $tool not found (set KILN_BIN to the built tools; scripts/install-deps.sh installs parallel)" >&2
    exit 6
  fi
done
corpus=${1:-${TMPDIR:-/tmp}/kiln-example-corpus}
n=${2:-4}
if [[ ! -s $corpus/modules.jsonl ]]; then
  echo "shard-parallel.sh: $corpus holds no modules; run examples/capture-crate.sh first" >&2
  exit 3
fi
shards=$(seq 1 "$n")

# One job per shard, as many at once as there are cores. kiln-replay exits 1 for an
# unstable or failed module: its report is written all the same, and the merge says so.
echo "== census, $n shards"
parallel --halt now,fail=1 "${bin}kiln-census" "$corpus" --shard {}/"$n" -j 1 '>' /dev/null ::: $shards
echo "== replay, $n shards"
parallel "${bin}kiln-replay" "$corpus" --backend stamp,llvm --rounds 2 --shard {}/"$n" '>' /dev/null ::: $shards || true

echo "== merged census ($corpus/census.jsonl)"
"${bin}kiln-census" merge "$corpus" "$corpus"/census.shard-*-of-"$n".jsonl
echo "== merged replay ($corpus/replay-report.json)"
"${bin}kiln-replay" merge "$corpus" "$corpus"/replay-report.shard-*-of-"$n".json
