#!/usr/bin/env bash
# kiln-bisect on the example crate, with culprits planted through stamp's test-only
# fault switch (KILN_TEST_FAULT: the named function's first conditional branch goes
# the wrong way):
#   1. eval_rpn broken: kiln-bisect names exactly it, within 2*log2(items)+10 test runs,
#      and its reproducer shows the failure and the pass;
#   2. eval_rpn and the unit test counts_words broken: with eval_rpn excluded, a second
#      run names counts_words, in another module; that run is stopped with SIGINT after a few
#      probes and started again: it resumes from its state and reaches the same answer;
#   3. no fault: nothing to bisect (exit 1); bad usage: one line, exit 2.
# The probes build and test the library's own tests (cargo test --lib) and clean only
# the crate, to keep CI short.
source "$(dirname "$0")/lib.sh"

example_crate "$T/crate"
cd "$T/crate"
# The symbols to break, as builds through kiln-capture name them (rustc there mangles
# with v0 where it emits the objects), read from the bitcode of such a build.
kiln-capture -o "$T/names" --backend llvm -- cargo test --lib --no-run -q 2>/dev/null
symbol() {  # the defined symbols whose name matches $1, comma-separated
  for id in $(jq -r .id "$T/names/modules.jsonl" | sort -u); do
    "$LLVM_BINDIR/llvm-nm" --defined-only --format=just-symbols "$T/names/blobs/${id:0:2}/$id.bc" 2>/dev/null
  done | grep -E "$1" | sort -u | paste -sd,
}
rpn=$(symbol '12kiln_example8eval_rpn(17h[0-9a-f]{16}E)?$')
counts=$(symbol '12kiln_example5tests(s_)?12counts_words(17h[0-9a-f]{16}E)?$')
check "the planted culprits' symbols are found ($rpn, $counts)" test -n "$rpn" -a -n "$counts"
cargo clean -q

# Each probe cleans only the crate itself: memchr stays as the first build made it.
bisect=(kiln-bisect --build 'cargo test --lib --no-run -q' --test 'cargo test --lib -q' --timeout 60
        --clean 'cargo clean -q -p kiln-example')

# 1. One culprit.
KILN_TEST_FAULT=$rpn "${bisect[@]}" --state "$T/one" --json > "$T/one.json" 2> "$T/one.err"
rc=$?
check "one fault: exit 0 (culprit found)" test $rc -eq 0
check "it names exactly eval_rpn" jq -e --arg f "$rpn" '(.culprits | length) == 1 and (.culprits[0].function as $c | $f | split(",") | index($c))' "$T/one.json"
jq -r '"   \(.items) items, \(.probes) probes, \(.test_runs) test runs, bound \(.bound)"' "$T/one.json"
check "within 2*log2(items)+10 test runs" jq -e '.test_runs <= .bound and .items > 100' "$T/one.json"
check "the culprit alone was tested in a run of its own, not taken from the narrowing's record" \
  jq -e '[.probes[] | select(.what == "the culprits alone")] | length == 1' "$T/one/bisect.json"
module=$(jq -r '.culprits[0].module' "$T/one.json")
R=$T/one/repro
check "the reproducer holds the module's bitcode, census, objects and flat IR" \
  test -s "$R/$module.bc" -a -s "$R/$module.census.json" -a -s "$R/$module.candidate.o" -a -s "$R/$module.trusted.o" -a -s "$R/$module.flat"
check "and the suspect's IR as text" grep -q "define .*$(jq -r '.culprits[0].function' "$T/one.json")" "$R/suspect-1.ll"
KILN_TEST_FAULT= "$R/reproduce.sh" > "$T/repro.out" 2>&1
rc=$?
sed 's/^/   /' "$T/repro.out"
check "the reproducer shows the failure and the pass (exit 0)" test $rc -eq 0
check "its failing run failed in the test, not the build" grep -q 'should FAIL' "$T/repro.out"

# 2. Two culprits: the second found with the first excluded; stopped and resumed.
excludes=()
for f in ${rpn//,/ }; do excludes+=(--exclude "$f"); done
two=("${bisect[@]}" --state "$T/two" "${excludes[@]}" --json)
# Job control on: a script's background job would otherwise start with SIGINT ignored.
set -m
KILN_TEST_FAULT=$rpn,$counts "${two[@]}" > "$T/two-stopped.json" 2> "$T/two-stopped.err" &
pid=$!
set +m
for _ in $(seq 1 600); do
  n=$(jq '.probes | length' "$T/two/bisect.json" 2>/dev/null || echo 0)
  [[ $n -ge 4 ]] && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.5
done
kill -INT $pid 2>/dev/null
wait $pid
rc=$?
stopped_at=$(jq '.probes | length' "$T/two/bisect.json")
check "SIGINT stops the bisect with exit 130 after $stopped_at probes" test $rc -eq 130
check "and says how to resume" grep -q 'the same command resumes' "$T/two-stopped.err"
KILN_TEST_FAULT=$rpn,$counts "${two[@]}" > "$T/two.json" 2> "$T/two.err"
rc=$?
check "started again: exit 0" test $rc -eq 0
check "it resumed: the $stopped_at recorded probes were not run again" \
  jq -e --argjson n "$stopped_at" '.resumed_probes >= $n' "$T/two.json"
check "it names exactly tests::counts_words" jq -e --arg f "$counts" '(.culprits | length) == 1 and (.culprits[0].function as $c | $f | split(",") | index($c))' "$T/two.json"
check "within 2*log2(items)+10 test runs, the interrupted probe included" jq -e '.test_runs <= .bound' "$T/two.json"
second=$(jq -r '.culprits[0].module' "$T/two.json")
check "the second culprit is in another module ($second, the first in $module)" test "$second" != "$module"

# 3. No fault, and usage errors.
KILN_TEST_FAULT= "${bisect[@]}" --state "$T/none" > "$T/none.out" 2>&1
rc=$?
check "no fault: exit 1, nothing to bisect" bash -c "[[ $rc -eq 1 ]] && grep -q 'nothing to bisect' '$T/none.out'"
expect_error 2 'only llvm' kiln-bisect --build true --test true --trusted stamp --state "$T/u1"
mkdir -p "$T/plain" "$T/foreign" && touch "$T/foreign/precious"
expect_error 2 'not a Cargo project' kiln-bisect -C "$T/plain" --build true --test true
expect_error 2 'holds no kiln-bisect state' kiln-bisect --build true --test true --state "$T/foreign"
check "a foreign state directory is left as it was" test -f "$T/foreign/precious"
expect_error 2 'other settings' kiln-bisect --build 'cargo build' --test 'cargo test --lib -q' --state "$T/one"
expect_error 2 '--exclude keeps a function on llvm, which only --candidate stamp selects by' \
  kiln-bisect -C "$T/plain" --build true --test true --clean true --candidate 'cmd:cp {in} {out}' --exclude f --state "$T/u2"
# A clean that fails is not "nothing to bisect" (exit 1): exit 10, the state kept.
expect_error 10 'build.log: the clean command failed \(exit 1\)' \
  kiln-bisect -C "$T/plain" --build true --test true --clean false --state "$T/u3"
check "the state is kept for the same command to resume" test -f "$T/u3/bisect.json"
finish
