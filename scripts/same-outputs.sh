#!/usr/bin/env bash
# Are two builds of kiln's tools byte-identical in what they write? For refactors that
# promise "no change in behaviour": captures regex 1.7.1 (Debian's librust-regex-dev,
# with its dependencies) once, then runs both sets of tools on copies of that corpus:
#   kiln-emit --backend stamp, --backend llvm        every object, byte for byte (llvm: one
#                                                   module per process, and the new tools'
#                                                   corpus mode must equal that)
#   kiln-emit --export-flat                         every module's flat IR file
#   kiln-emit FLAT -o                               objects from those files, no LLVM
#   kiln-census                                     census.jsonl and the --json summary
#   kiln-replay --backend stamp,llvm -j 1          the report, timings masked
#   kiln-replay-flat --json                         the report, timings masked
# Timings differ run to run: in reports, numbers under keys that name a time, a rate or
# a ratio are masked before comparing; everything else must be identical. kiln-replay
# runs one worker: with two, its llvm service's objects for a few debug-info modules
# differ between workers (it says UNSTABLE), and which ones varies run to run.
# Usage: scripts/same-outputs.sh OLD_BIN_DIR [NEW_BIN_DIR] [WORKDIR]
#   (NEW_BIN_DIR defaults to build/tools; TESTS=1 captures `cargo test --no-run` too,
#   DEBUGINFO=0|1|2 sets the dev profile's debug info, REUSE=1 keeps WORKDIR's corpus)
# Exit 0: identical; 1: something differs (the first differences are printed).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
old=$(cd "${1:?usage: same-outputs.sh OLD_BIN_DIR [NEW_BIN_DIR] [WORKDIR]}" && pwd)
new=$(cd "${2:-$root/build/tools}" && pwd)
W=${3:-${TMPDIR:-/tmp}/kiln-same-outputs}
SRC=/usr/share/cargo/registry/regex-1.7.1
[[ -d $SRC ]] || { echo "same-outputs.sh: $SRC: missing (apt install librust-regex-dev)" >&2; exit 6; }
if [[ -n ${REUSE:-} && -d $W/corpus ]]; then  # REUSE=1: the corpus of the last run
  rm -rf "$W/old" "$W/new" "$W/run"
else
  rm -rf "$W" && mkdir -p "$W"
  cp -r "$SRC" "$W/regex"
  mkdir -p "$W/regex/.cargo"
  printf '%s\n' '[source.crates-io]' 'replace-with = "debian"' '[source.debian]' \
    'directory = "/usr/share/cargo/registry"' '[net]' 'offline = true' > "$W/regex/.cargo/config.toml"
  if [[ -n ${DEBUGINFO:-} ]]; then export CARGO_PROFILE_DEV_DEBUG=$DEBUGINFO CARGO_PROFILE_TEST_DEBUG=$DEBUGINFO; fi
  echo "== capture (old kiln-capture): cargo build$([[ ${TESTS:-} == 1 ]] && echo ' and cargo test --no-run')"
  (cd "$W/regex" && "$old/kiln-capture" -o "$W/corpus" -- cargo build -q)
  if [[ ${TESTS:-} == 1 ]]; then (cd "$W/regex" && "$old/kiln-capture" -o "$W/corpus" -- cargo test --no-run -q); fi
fi
ids=$(find "$W/corpus/blobs" -name '*.bc' | sort)
echo "   $(echo "$ids" | wc -l) modules"

# Masks timings in a JSON document: numbers under keys that name a time, rate or ratio.
mask_json() {
  python3 - "$1" <<'PY'
import json, re, sys
timing = re.compile(r"(second|_s$|time|wall|cpu|speed|per_s|ratio|rss|memory|_ms$|throughput|x_llvm|vs_|stages)", re.I)
def walk(v, key="", under_timing=False):
    t = under_timing or bool(timing.search(key))
    if isinstance(v, dict): return {k: walk(x, k, t) for k, x in v.items()}
    if isinstance(v, list): return [walk(x, key, t) for x in v]
    if isinstance(v, (int, float)) and not isinstance(v, bool) and t: return "T"
    if isinstance(v, str) and key in ("time", "created", "updated"): return "T"  # when it ran
    return v
print(json.dumps(walk(json.load(open(sys.argv[1]))), indent=1, sort_keys=True))
PY
}

run_tools() {  # BIN_DIR OUT
  local bin=$1 out=$2
  mkdir -p "$out/flat" "$out/from-flat" "$out/llvm"
  cp -a "$W/corpus" "$out/corpus"
  "$bin/kiln-emit" "$out/corpus" --out "$out/stamp" --backend stamp -j 2 > /dev/null
  # llvm: one process per module, so that every module is read into a fresh LLVM
  # context (before one context per module, a worker's objects depended on the modules
  # it had read before: see the README); then the corpus at once, checked against them.
  "$bin/kiln-emit" "$out/corpus" --out "$out/llvm-corpus" --backend llvm -j 2 > /dev/null
  for bc in $ids; do
    id=$(basename "$bc" .bc)
    "$bin/kiln-emit" "$bc" --backend llvm -o "$out/llvm/$id.o" > /dev/null
    "$bin/kiln-emit" "$bc" --export-flat "$out/flat/$id.flat" > /dev/null
    "$bin/kiln-emit" "$out/flat/$id.flat" -o "$out/from-flat/$id.o" > /dev/null
  done
  # The reports' tools may answer "no" (exit 1: an unstable module): the exit status
  # is compared too, not required to be 0.
  local rc=0
  "$bin/kiln-census" "$out/corpus" -j 2 > "$out/census.txt" || rc=$?
  echo "kiln-census $rc" > "$out/exit-codes.txt"; rc=0
  "$bin/kiln-census" "$out/corpus" --json > "$out/census-summary.json" || rc=$?
  echo "kiln-census --json $rc" >> "$out/exit-codes.txt"; rc=0
  "$bin/kiln-replay" "$out/corpus" --backend stamp,llvm --rounds 2 -j 1 --report "$out/replay.json" > "$out/replay.txt" || rc=$?
  echo "kiln-replay $rc" >> "$out/exit-codes.txt"; rc=0
  "$bin/kiln-replay-flat" "$out/flat" --device cpu --rounds 2 --json "$out/replay-flat.json" > "$out/replay-flat.txt" || rc=$?
  echo "kiln-replay-flat $rc" >> "$out/exit-codes.txt"
  for j in replay replay-flat census-summary; do mask_json "$out/$j.json" > "$out/$j.masked"; done
}

# Both run in the same directory, since reports name the corpus's path.
echo "== old tools: $old"
run_tools "$old" "$W/run" && mv "$W/run" "$W/old"
echo "== new tools: $new"
run_tools "$new" "$W/run" && mv "$W/run" "$W/new"

status=0
compare() {  # WHAT, then the paths under old/ and new/
  local what=$1; shift
  local differ=0 n=0
  for p in "$@"; do
    n=$((n + 1))
    if ! cmp -s "$W/old/$p" "$W/new/$p"; then
      differ=$((differ + 1))
      [[ $differ -le 3 ]] && { echo "   differs: $p"; diff <(head -c 100000 "$W/old/$p" | cat -v) <(head -c 100000 "$W/new/$p" | cat -v) | head -8 || true; }
    fi
  done
  printf '%-44s %5d files, %s\n' "$what" "$n" "$([[ $differ == 0 ]] && echo identical || echo "$differ DIFFER")"
  [[ $differ == 0 ]] || status=1
}
rel() { (cd "$W/old" && find "$1" -type f -name "$2" | sort); }
echo "== comparison"
compare "kiln-emit --backend stamp objects" $(rel stamp '*.o')
compare "kiln-emit --backend llvm objects" $(rel llvm '*.o')
compare "kiln-emit --export-flat flat files" $(rel flat '*.flat')
same_in_new=0
for o in $(cd "$W/new/llvm" && ls); do cmp -s "$W/new/llvm/$o" "$W/new/llvm-corpus/$o" || same_in_new=$((same_in_new + 1)); done
printf '%-44s %5d files, %s\n' "new: llvm corpus mode (-j 2) = one per process" "$(ls "$W/new/llvm" | wc -l)" \
  "$([[ $same_in_new == 0 ]] && echo identical || echo "$same_in_new DIFFER")"
[[ $same_in_new == 0 ]] || status=1
compare "kiln-emit FLAT -o objects" $(rel from-flat '*.o')
compare "exit statuses of census and replays" exit-codes.txt
compare "kiln-census: census.jsonl" corpus/census.jsonl
compare "kiln-census --json summary" census-summary.json
compare "kiln-replay report (timings masked)" replay.masked
compare "kiln-replay-flat report (timings masked)" replay-flat.masked
exit $status
