#!/usr/bin/env bash
# kiln-selection(5) and the test-only KILN_TEST_FAULT through kiln-capture on the example
# crate, as kiln-bisect uses them: an empty selection leaves every function to llvm; a
# deliberately miscompiled function fails `cargo test` when stamp takes it and not when
# the selection leaves it to llvm; and modules whose lines did not change keep hitting
# the object cache between two such builds.
source "$(dirname "$0")/lib.sh"

example_crate "$T/crate"
cd "$T/crate"
receipts_since() { tail -n +$(($2 + 1)) "$1/receipts.jsonl"; }

# Bad selections stop before the build starts.
printf 'module 1234\n' > "$T/bad.txt"
expect_error 3 "bad.txt:1: the first line must be '# kiln-selection 1'" \
  kiln-capture -o "$T/X" --backend stamp --candidate-functions "$T/bad.txt" -- cargo build -q
printf '# kiln-selection 1\nmodule 1234\n' > "$T/bad.txt"
expect_error 3 "bad.txt:2: '1234' is not a module id" \
  kiln-capture -o "$T/X" --backend stamp --candidate-functions "$T/bad.txt" -- cargo build -q
expect_error 5 "none.txt" kiln-capture -o "$T/X" --backend stamp --candidate-functions "$T/none.txt" -- cargo build -q
expect_error 2 "selection by function name needs stamp" \
  kiln-capture -o "$T/X" --backend 'cmd:cp {in} {out}' --candidate-hash 01 -- cargo build -q
check "no build ran for a bad selection" test ! -e target

# An empty selection: every function is llvm's, and the tests pass.
printf '# kiln-selection 1\n' > "$T/empty.txt"
timeout 600 kiln-capture -o "$T/E" --backend stamp --candidate-functions "$T/empty.txt" -- cargo test -q > "$T/empty.out" 2>&1
check "an empty selection: cargo test passes" test $? -eq 0
check "an empty selection: no function is stamp's, every receipt names the selection" \
  jq -se 'length > 3 and all(.functions.stamp == 0 and .functions.llvm > 0 and (.selection | length) == 16)' \
  "$T/E/receipts.jsonl"

# The culprit: eval_rpn, whose first conditional branch decides whether its loop over
# the tokens runs (the `rpn` unit test, and every module that defines it: the library
# and the library built as its own unit tests have different symbol hashes).
: > "$T/defs"
for id in $(jq -r .id "$T/E/modules.jsonl" | sort -u); do
  "$LLVM_BINDIR/llvm-nm" --defined-only --format=just-symbols "$T/E/blobs/${id:0:2}/$id.bc" 2>/dev/null |
    grep -E '^_.*12kiln_example8eval_rpn(17h[0-9a-f]{16}E)?$' | sed "s/^/$id /" >> "$T/defs"
done
echo "# fault function: $(cut -d' ' -f2 "$T/defs" | sort -u | tr '\n' ' ')in $(wc -l < "$T/defs") modules"
check "eval_rpn is defined in the library and its unit-test build" test "$(wc -l < "$T/defs")" -ge 2
faults=$(cut -d' ' -f2 "$T/defs" | sort -u | paste -sd,)
{ echo '# kiln-selection 1'; sed 's/^/function /' "$T/defs"; } > "$T/culprit.txt"
{ echo '# kiln-selection 1'; sed 's/ .*/ not_eval_rpn/; s/^/function /' "$T/defs"; } > "$T/innocent.txt"

one=$(cut -d' ' -f1 "$T/defs" | head -1)
KILN_SELECTION="$T/culprit.txt" kiln-census "$T/E" --explain "$one" > "$T/explain.txt"
check "kiln-census --explain names the selection and what it left to llvm" \
  bash -c "grep -q '  selection: $T/culprit.txt (digest [0-9a-f]*): 1 of ' '$T/explain.txt' &&
    grep -q '\[not selected\]' '$T/explain.txt'"

# The other tools' flags: kiln-census, kiln-emit (also --export-flat) and kiln-replay
# with --candidate-functions take exactly the selected function as stamp's.
kiln-census "$T/E" --explain "$one" --candidate-functions "$T/culprit.txt" > "$T/explain2.txt"
check "kiln-census --candidate-functions: the same explanation as KILN_SELECTION" cmp "$T/explain.txt" "$T/explain2.txt"
blob="$T/E/blobs/${one:0:2}/$one.bc"
kiln-emit "$blob" -o "$T/one.o" --backend stamp --no-verify --candidate-functions "$T/culprit.txt" > "$T/one.receipt"
check "kiln-emit --candidate-functions: one function by stamp, the rest by llvm" \
  jq -e '.functions.stamp == 1 and .functions.llvm > 0 and (.selection | length) == 16' "$T/one.receipt"
kiln-emit "$blob" --export-flat "$T/one.flat" --candidate-functions "$T/culprit.txt" > "$T/flat.out"
check "kiln-emit --export-flat --candidate-functions: one function in the flat file ($(cat "$T/flat.out"))" \
  grep -q '^1 of [0-9]* functions exported' "$T/flat.out"
kiln-replay "$T/E" --backend stamp --rounds 2 --candidate-functions "$T/culprit.txt" --json > "$T/replay.json"
check "kiln-replay --candidate-functions: stamp takes as many functions as the selection names" \
  jq -e --argjson n "$(wc -l < "$T/defs")" '[.services[] | select(.backend == "stamp") | .rounds[0].functions_stamp] == [$n]' "$T/replay.json"
expect_error 3 "bad.txt:2" kiln-replay "$T/E" --backend stamp --candidate-functions "$T/bad.txt"

# The fault on, stamp taking eval_rpn: the tests fail.
cargo clean -q
before=$(wc -l < "$T/E/receipts.jsonl")
KILN_TEST_FAULT=$faults timeout 600 kiln-capture -o "$T/E" --backend stamp --candidate-functions "$T/culprit.txt" \
  -- cargo test > "$T/culprit.out" 2>&1
rc=$?
check "the fault on eval_rpn, selected: cargo test fails (exit $rc), in the rpn test" \
  bash -c "[[ $rc -ne 0 ]] && grep -q 'tests::rpn' '$T/culprit.out' && grep -q 'FAILED' '$T/culprit.out'"
grep -E 'tests::rpn|panicked' "$T/culprit.out" | head -3 | sed 's/^/# /'
receipts_since "$T/E" "$before" > "$T/culprit.receipts"
check "the receipts record the fault where stamp applied it, and one function by stamp there" \
  jq -se "map(select(.test_fault)) | length >= 2 and all(.test_fault == [.test_fault[0]] and .functions.stamp == 1)" \
  "$T/culprit.receipts"

# The same fault, the selection leaving eval_rpn to llvm: the tests pass, and every
# module whose lines did not change comes from the object cache.
cargo clean -q
before=$(wc -l < "$T/E/receipts.jsonl")
KILN_TEST_FAULT=$faults timeout 600 kiln-capture -o "$T/E" --backend stamp --candidate-functions "$T/innocent.txt" \
  -- cargo test -q > "$T/innocent.out" 2>&1
check "the fault on eval_rpn, not selected: cargo test passes" test $? -eq 0
receipts_since "$T/E" "$before" > "$T/innocent.receipts"
changed=$(cut -d' ' -f1 "$T/defs" | jq -R . | jq -sc .)
check "modules whose selection lines changed are emitted again ($(jq -s "map(select(.id as \$i | $changed | index(\$i))) | length" "$T/innocent.receipts"))" \
  jq -se "map(select(.id as \$i | $changed | index(\$i))) | length >= 2 and all(.cache == \"miss\" and (.test_fault | not))" \
  "$T/innocent.receipts"
check "every other module hits the object cache ($(jq -s 'map(select(.cache == "hit")) | length' "$T/innocent.receipts") hits)" \
  jq -se "map(select(.id as \$i | $changed | index(\$i) | not)) | length > 3 and all(.cache == \"hit\")" \
  "$T/innocent.receipts"
finish
