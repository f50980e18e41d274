#!/usr/bin/env bash
# --shard K/N: four shards of kiln-census, kiln-replay and kiln-emit, run side by side
# with GNU parallel into one corpus, then merged, must give what one unsharded run
# gives: the same census.jsonl and summary, the same replay figures and per-module
# verdicts (timings aside), byte-identical objects. A shard with no modules gives an
# empty report that merges all the same; bad --shard values are usage errors.
source "$(dirname "$0")/lib.sh"

# GNU parallel is a declared dependency (scripts/install-deps.sh): fail, never skip.
if ! command -v parallel >/dev/null 2>&1; then
  echo "FAIL - GNU parallel is not installed; it is a dependency of kiln's tests (scripts/install-deps.sh installs it)"
  exit 1
fi

example_crate "$T/crate"
(cd "$T/crate" && kiln-capture -o "$T/C" -- cargo build -q)
C=$T/C
modules=$(jq -rs 'map(.id) | unique | length' "$C/modules.jsonl")
echo "corpus: $modules modules"

# The unsharded runs.
kiln-census "$C" --json -j 2 > "$T/census-whole.json"
cp "$C/census.jsonl" "$T/census-whole.jsonl"
kiln-replay "$C" --backend stamp,llvm --rounds 2 -j 1 --report "$T/replay-whole.json" > /dev/null
kiln-emit "$C" --out "$T/emit-whole" -j 2 > /dev/null

# Four shards of each, two at a time (this machine's cores), into the same corpus.
check "4 census shards under parallel" \
  parallel -j 2 --halt now,fail=1 kiln-census "$C" --shard {}/4 -j 1 '>' /dev/null ::: 1 2 3 4
check "4 replay shards under parallel" \
  parallel -j 2 --halt now,fail=1 kiln-replay "$C" --backend stamp,llvm --rounds 2 -j 1 --shard {}/4 '>' /dev/null ::: 1 2 3 4
check "4 emit shards under parallel, each into its own directory" \
  parallel -j 2 --halt now,fail=1 kiln-emit "$C" --out "$T/emit-{}" -j 1 --shard {}/4 '>' /dev/null ::: 1 2 3 4
check "the shards left the unsharded census.jsonl alone" cmp "$C/census.jsonl" "$T/census-whole.jsonl"
check "each shard wrote its own census and report" bash -c \
  "ls '$C'/census.shard-{1,2,3,4}-of-4.jsonl '$C'/replay-report.shard-{1,2,3,4}-of-4.json >/dev/null"
check "the shards' census files hold every module once" bash -c \
  "[[ \$(cat '$C'/census.shard-*-of-4.jsonl | jq -r .id | sort | uniq | wc -l) -eq $modules && \$(cat '$C'/census.shard-*-of-4.jsonl | wc -l) -eq $modules ]]"
check "the shards split the modules: more than one shard holds some" bash -c \
  "[[ \$(for f in '$C'/census.shard-*-of-4.jsonl; do [[ -s \$f ]] && echo; done | wc -l) -gt 1 ]]"

# Census: the merge writes census.jsonl line for line as the unsharded run did.
rm "$C/census.jsonl"
check "kiln-census merge" bash -c "kiln-census merge '$C' --json > '$T/census-merged.json'"
check "merged census.jsonl equals the unsharded one (same lines, same order)" cmp "$C/census.jsonl" "$T/census-whole.jsonl"
check "merged census summary equals the unsharded one" diff <(jq -S . "$T/census-whole.json") <(jq -S . "$T/census-merged.json")
expect_error 3 "no census record" kiln-census merge "$C" "$C"/census.shard-{1,2,3}-of-4.jsonl -o "$T/x.jsonl"
expect_error 3 "has a record in" kiln-census merge "$C" "$C"/census.shard-{1,2,3,4,4}-of-4.jsonl -o "$T/x.jsonl"

# Replay: everything but timings equals the unsharded run's.
check "kiln-replay merge" bash -c "kiln-replay merge '$C' -o '$T/replay-merged.json' > '$T/replay-merged.txt'"
# The figures that are not timings (kiln-replay(1), MERGING): counts, instructions,
# shares, verdicts; times, rates and speedups removed.
untimed='del(.time) | .services[].rounds[] |= {round, instructions, modules_ok, modules_failed, functions,
  functions_stamp, instructions_stamp, text_bytes, object_bytes, kernel_launches}
  | .stamp_vs_llvm |= {stamp_share_of_instructions, stamp_share_of_functions, text_ratio, object_ratio,
                       reader: (.reader | {modules, modules_read_directly, modules_direct})}'
check "merged replay report equals the unsharded one, timings aside" \
  diff <(jq -S "$untimed" "$T/replay-whole.json") <(jq -S "$untimed" "$T/replay-merged.json")
check "the report has a verdict per module and back end, all stable, with the object's hash" jq -e \
  "(.module_verdicts | length) == 2 * $modules and all(.module_verdicts[]; .verdict == \"stable\" and (.object_xxh3 | length) == 32) and .unstable_modules == 0" \
  "$T/replay-merged.json"
check "instruction counts are summed over the shards" jq -e \
  "[.services[].rounds[].instructions] | all(. > 0)" "$T/replay-merged.json"
# With a GPU service too (the stand-in: the CPU executor behind the GPU's interface, as
# CI has no GPU), the merge keeps one run's order of the verdicts: llvm's, then stamp's
# (the GPU service comes first among the services but is checked with the CPU's).
KILN_GPU_STANDIN=cpu kiln-replay "$C" --backend llvm,stamp --device cuda,cpu --rounds 2 -j 1 \
  --report "$T/gpu-whole.json" > /dev/null
check "2 replay shards with the GPU stand-in" parallel -j 2 --halt now,fail=1 env KILN_GPU_STANDIN=cpu kiln-replay "$C" \
  --backend llvm,stamp --device cuda,cpu --rounds 2 -j 1 --shard {}/2 --report "$T/gpu-{}.json" '>' /dev/null ::: 1 2
check "kiln-replay merge of them" kiln-replay merge "$C" "$T/gpu-1.json" "$T/gpu-2.json" -o "$T/gpu-merged.json"
check "the merged verdicts are in one run's order" \
  diff <(jq -c '.module_verdicts[] | [.backend, .module]' "$T/gpu-whole.json") \
       <(jq -c '.module_verdicts[] | [.backend, .module]' "$T/gpu-merged.json")
expect_error 3 "shard 4/4 missing" kiln-replay merge "$C" "$C"/replay-report.shard-{1,2,3}-of-4.json -o "$T/x.json"
expect_error 3 "given twice" kiln-replay merge "$C" "$C"/replay-report.shard-{1,2,2,4}-of-4.json -o "$T/x.json"

# Emit: the shards' objects, copied together, are byte for byte the unsharded run's;
# their receipts, concatenated, are its receipts (times aside).
mkdir "$T/emit-merged"
cp "$T"/emit-{1,2,3,4}/*.o "$T/emit-merged/"
cat "$T"/emit-{1,2,3,4}/receipts.jsonl > "$T/emit-merged/receipts.jsonl"
check "the same object files" diff <(cd "$T/emit-whole" && ls) <(cd "$T/emit-merged" && ls)
same_objects() { for o in "$T"/emit-whole/*.o; do cmp "$o" "$T/emit-merged/${o##*/}" || return 1; done; }
check "every object byte-identical" same_objects
receipts='[.[] | del(.time, .stages)] | sort_by(.id)'
check "concatenated receipts equal the unsharded run's, times aside" \
  diff <(jq -S -s "$receipts" "$T/emit-whole/receipts.jsonl") <(jq -S -s "$receipts" "$T/emit-merged/receipts.jsonl")

# A shard with no modules: a one-module corpus in two shards, one of them empty.
jq -rn 'input.id' "$C/modules.jsonl" > "$T/one.ids"
kiln-capture filter -o "$T/one" "$C" --ids "$T/one.ids" > /dev/null
kiln-census "$T/one" --json > "$T/one-census.json"
cp "$T/one/census.jsonl" "$T/one-census.jsonl"
kiln-replay "$T/one" --backend stamp,llvm --rounds 2 --report "$T/one-replay.json" > /dev/null
check "census and replay of both halves (one empty)" parallel -j 2 --halt now,fail=1 \
  "kiln-census '$T/one' --shard {}/2 > /dev/null && kiln-replay '$T/one' --backend stamp,llvm --rounds 2 --shard {}/2 > /dev/null" ::: 1 2
check "one half's census is empty" bash -c "[[ \$(cat '$T'/one/census.shard-{1,2}-of-2.jsonl | wc -l) -eq 1 ]] && { [[ ! -s '$T/one/census.shard-1-of-2.jsonl' ]] || [[ ! -s '$T/one/census.shard-2-of-2.jsonl' ]]; }"
check "the empty half's report is valid and says 0 modules" bash -c \
  "jq -s -e 'map(.modules) | sort == [0, 1]' '$T'/one/replay-report.shard-{1,2}-of-2.json > /dev/null"
kiln-census merge "$T/one" --json > "$T/one-census-merged.json"
check "merge with an empty shard: the same census" cmp "$T/one/census.jsonl" "$T/one-census.jsonl"
check "merge with an empty shard: the same summary" diff <(jq -S . "$T/one-census.json") <(jq -S . "$T/one-census-merged.json")
kiln-replay merge "$T/one" -o "$T/one-replay-merged.json" > /dev/null
check "merge with an empty shard: the same replay figures" \
  diff <(jq -S "$untimed" "$T/one-replay.json") <(jq -S "$untimed" "$T/one-replay-merged.json")

# The example script runs the same flow (on the one-module corpus, to stay cheap).
check "examples/shard-parallel.sh" bash -c "KILN_BIN='$KILN_BIN' '$KILN_SOURCE/examples/shard-parallel.sh' '$T/one' > '$T/example.txt' 2>&1 || { cat '$T/example.txt'; false; }"

# Bad values: one line, exit 2, from every tool.
for bad in 0/4 5/4 1/0 x 2/4/1; do
  expect_error 2 "--shard $bad" kiln-census "$C" --shard "$bad"
  expect_error 2 "--shard $bad" kiln-replay "$C" --shard "$bad"
  expect_error 2 "--shard $bad" kiln-emit "$C" --out "$T/bad" --shard "$bad"
done
expect_error 2 "as is --shard" kiln-emit "$(ls "$C"/blobs/*/*.bc | head -1)" -o "$T/x.o" --shard 1/2
finish
