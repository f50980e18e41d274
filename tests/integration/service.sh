#!/usr/bin/env bash
# kiln-capture --device: one stamp service for a whole real build (cargo test of the
# example crate). With the GPU stand-in (KILN_GPU_STANDIN=cpu: the CUDA executor's
# form of the stages run on the CPU; this machine has no GPU) the suite passes as with
# plain cargo, every module's output from the service equals the CPU executor's (each
# checked in the build, KILN_SERVICE_CHECK=1) and so does every object (against a
# build without the service), batches hold modules of several crates, and nothing of
# the service is left. A service killed mid-build (KILN_TEST_SERVICE_DIE_AFTER) still
# gives a correct build, the rest on the CPU, said in receipts and on stderr. ^C stops
# build and service. Two builds at once get a service each. No GPU: exit 7.
source "$(dirname "$0")/lib.sh"

mkdir -p "$T/tmp"
export TMPDIR=$T/tmp  # the captures' sockets, so that the service's processes can be found by path
example_crate "$T/crate"
# No process of a service of this test's captures ("servic[e]": not this check's own command line).
none_left() { ! pgrep -f -- "--stamp-servic[e] $T/" > /dev/null; }
tests_of() { grep -E '^test .* (ok|FAILED|ignored)$' "$1" | sort; }

(cd "$T/crate" && cargo test 2>/dev/null > "$T/plain.out") || fail "plain cargo test failed"
check "plain cargo test ran the crate's tests" test "$(tests_of "$T/plain.out" | wc -l)" -ge 3
(cd "$T/crate" && cargo clean -q)

# ---- refusals: no GPU, a back end that has no stages -----------------------------
expect_error 7 "--device cuda: " env -u KILN_GPU_STANDIN kiln-capture -o "$T/nogpu" --backend stamp --device cuda -- true
check "no corpus was made for a device that cannot be opened" test ! -e "$T/nogpu"
expect_error 2 "needs --backend stamp" kiln-capture -o "$T/llvm" --backend llvm --device cpu -- true
expect_error 2 "KILN_SERVICE_STREAMS: 'abc': expected a number from 1 to 64" \
  env KILN_SERVICE_STREAMS=abc kiln-capture -o "$T/bad" --backend stamp --device cpu -- true
expect_error 2 "KILN_SERVICE_BATCHING: 'x': expected adaptive or fixed" \
  env KILN_SERVICE_BATCHING=x kiln-capture -o "$T/bad" --backend stamp --device cpu -- true
check "no corpus was made for a bad service setting" test ! -e "$T/bad"

# ---- the stand-in for a GPU, each output checked against the CPU executor's ---------
export KILN_GPU_STANDIN=cpu
# Every batch waits 30 ms for more (KILN_SERVICE_BATCHING=fixed; by default a batch waits
# only while another crate is sending, which two cores seldom see), so that crates
# compiled side by side surely share some.
(cd "$T/crate" && KILN_SERVICE_CHECK=1 KILN_SERVICE_BATCHING=fixed KILN_SERVICE_WAIT_MS=30 kiln-capture -o "$T/S" --backend stamp --device cuda -- cargo test \
  > "$T/service.out" 2> "$T/service.err")
check "cargo test through the service passed" test $? -eq 0
check "the same tests passed as with plain cargo" diff <(tests_of "$T/plain.out") <(tests_of "$T/service.out")
summary=$(tail -1 "$T/S/service.jsonl")
echo "service: $summary"
# Every module with a function for stamp went through the service (one with none goes to
# llvm whole, without stages, unless it has globals for stamp's object), and every output
# equals the CPU executor's.
served=$(jq -s '[.[] | select(.service.device != null)] | length' "$T/S/receipts.jsonl")
check "every stamp module went through the service ($served), each output equal to the CPU executor's" quiet jq -se '
  [.[] | select(.backend == "stamp" and .functions.stamp > 0)] as $stamp | ($stamp | length) > 0 and
  all($stamp[]; .service.check == "equal") and all(.[]; .service.lost == null and .service.check != "differs")' \
  "$T/S/receipts.jsonl"
check "the service counted as many requests, none failed" \
  quiet jq -e --argjson n "$served" '.summary and .requests == $n and .failed == 0' <<< "$summary"
check "some batches hold modules of several crates" quiet jq -e '.batches_from_several_clients > 0' <<< "$summary"
check "its receipts name the stand-in, never a GPU" quiet jq -e '.device | test("stand-in")' <<< "$summary"
check "nothing of the service is left after the build" none_left

# Every object equals the one the same build writes without the service.
(cd "$T/crate" && cargo clean -q && kiln-capture -o "$T/N" --backend stamp -- cargo test > /dev/null 2>&1)
check "the same objects (the object cache's, by bitcode) without the service" \
  diff -r "$T/S/objects" "$T/N/objects"

# ---- the service dies mid-build: the rest is emitted on the CPU ----------------------
(cd "$T/crate" && cargo clean -q && KILN_TEST_SERVICE_DIE_AFTER=15 kiln-capture -o "$T/D" --backend stamp \
  --device cuda -- cargo test > "$T/died.out" 2> "$T/died.err")
check "cargo test passed with the service killed mid-build" test $? -eq 0
check "the same tests passed as with plain cargo" diff <(tests_of "$T/plain.out") <(tests_of "$T/died.out")
check "kiln-capture said the service died" grep -q "the stamp service on .* died during the build" "$T/died.err"
check "the wrappers said they went on without it" grep -q "the stamp service is lost" "$T/died.err"
check "receipts: 15 modules from the service, the rest on the CPU with the reason" quiet jq -se '
  ([.[] | select(.service.device != null)] | length) == 15 and
  ([.[] | select(.service.lost != null)] | length) > 0' "$T/D/receipts.jsonl"
check "the same objects as without the service" diff -r "$T/D/objects" "$T/N/objects"
check "nothing of the service is left" none_left

# ---- ^C mid-build stops the build and the service ----------------------------------
(cd "$T/crate" && cargo clean -q)
(cd "$T/crate" && exec kiln-capture -o "$T/I" --backend stamp --device cuda -- cargo test --no-run > /dev/null 2>&1) &
capture=$!
for _ in $(seq 300); do [[ -s $T/I/receipts.jsonl ]] && break; sleep 0.05; done
kill -INT $capture
wait $capture
rc=$?
check "interrupted: exit 130 (got $rc)" test $rc -eq 130
check "nothing of the service is left after ^C" none_left
check "the capture's temporary directory is gone" bash -c "[[ -z \$(ls '$T/tmp') ]]"

# ---- two builds at once: a service each --------------------------------------------
example_crate "$T/crate2"
(cd "$T/crate" && cargo clean -q)
(cd "$T/crate" && kiln-capture -o "$T/P1" --backend stamp --device cpu -- cargo build -q > /dev/null 2>&1) &
one=$!
(cd "$T/crate2" && kiln-capture -o "$T/P2" --backend stamp --device cpu -- cargo build -q > /dev/null 2>&1) &
two=$!
wait $one; rc1=$?
wait $two; rc2=$?
check "two builds at once both passed ($rc1, $rc2)" test $rc1 -eq 0 -a $rc2 -eq 0
check "each had its own service, which took its modules" bash -c "
  for c in P1 P2; do
    jq -se --argjson n \$(jq -s '[.[] | select(.service.device != null)] | length' '$T'/\$c/receipts.jsonl) \
      '.[-1].summary and .[-1].requests == \$n and \$n > 0' '$T'/\$c/service.jsonl > /dev/null || exit 1
  done"
check "nothing of either service is left" none_left

# A capture without --device uses no service, not even one named in its environment
# (a build inside another's --device build, a variable left in the shell).
(cd "$T/crate" && cargo clean -q)
(cd "$T/crate" && KILN_STAMP_SERVICE="$T/P1-gone.sock" kiln-capture -o "$T/NS" --backend stamp -- cargo build -q \
  > /dev/null 2>&1)
check "without --device no module went to a service" \
  quiet jq -se 'length > 0 and all(.[]; .service == null)' "$T/NS/receipts.jsonl"

# ---- the example script --------------------------------------------------------------
check "examples/capture-service.sh" bash -c "KILN_BIN='$KILN_BIN' '$KILN_SOURCE/examples/capture-service.sh' '$T/ex' \
  > '$T/example.txt' 2>&1 || { cat '$T/example.txt'; false; }"
check "its receipts: every module checked equal on the stand-in" \
  grep -q "CPU stand-in for a GPU .* check: equal" "$T/example.txt"
check "nothing of its service is left" none_left

finish
