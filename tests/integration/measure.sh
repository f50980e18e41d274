#!/usr/bin/env bash
# kiln-measure compares two real builds of the example crate, interleaved, and the
# sizes of two real programs; the gate turns the reports into an exit status.
source "$(dirname "$0")/lib.sh"

example_crate "$T/crate"
cd "$T/crate"
cargo build -q 2>/dev/null  # fetch and lock once
kiln-measure build --runs 2 --warmup 0 --workdir "$T/work" --json "$T/build.json" --svg "$T/build.svg" \
  --prepare 'rm -rf "$CARGO_TARGET_DIR"' \
  --baseline 'cargo build -q' \
  --candidate "$KILN_BIN/kiln-capture -o \"\$KILN_MEASURE_TARGET_DIR/corpus\" --backend llvm -- cargo build -q" > "$T/build.md"
check "build comparison ran and printed a table" grep -q 'candidate' "$T/build.md"
check "its report has both variants, interleaved runs and a ratio with a 95% interval" \
  jq -e '(.runs | length) == 4 and .wall_ratio.low <= .wall_ratio.value and .wall_ratio.value <= .wall_ratio.high' "$T/build.json"
check "the chart is SVG" grep -q '<svg' "$T/build.svg"
kiln-measure gate "$T/build.json" --min-speedup=-99% --max-memory-ratio off >/dev/null
check "gate passes a lenient threshold" test $? -eq 0
jq '.variants.candidate.peak_rss_kib.median = 2 * .variants.baseline.peak_rss_kib.median' "$T/build.json" > "$T/grown.json"
kiln-measure gate "$T/grown.json" --min-speedup=-99% > "$T/gate-memory.txt"
check "gate fails a build whose peak memory grew past --max-memory-ratio (1.5x), on its own line" \
  bash -c "test $? -eq 1 && grep -q '^PASS  speedup' '$T/gate-memory.txt' && grep -q '^FAIL  peak memory 2.000x' '$T/gate-memory.txt'" 
kiln-measure gate "$T/build.json" --min-speedup 1000% >/dev/null
check "gate fails an impossible threshold with exit 1" test $? -eq 1

# The gate: impossible wall times are bad input, and the interval it prints is
# recomputed from the runs, so an edited 'speedup' field cannot contradict the speedup.
jq '.variants.baseline.wall_seconds.median = -1' "$T/build.json" > "$T/negative.json"
expect_error 3 'negative.json: .*must be positive' kiln-measure gate "$T/negative.json"
jq '.speedup = {value: 100, low: 99, high: 101}' "$T/build.json" > "$T/edited.json"
line=$(kiln-measure gate "$T/edited.json" --min-speedup=-99%)
check "the gate's interval contains the speedup it prints: $line" \
  bash -c '[[ $1 =~ speedup\ ([0-9.]+)x.*CI\ ([0-9.]+)x-([0-9.]+)x ]] &&
           awk -v v="${BASH_REMATCH[1]}" -v l="${BASH_REMATCH[2]}" -v h="${BASH_REMATCH[3]}" "BEGIN { exit !(l <= v && v <= h && h < 99) }"' _ "$line"

# A run past --timeout is killed with its whole process group.
expect_error 1 'baseline .* timed out after 0.5 s' kiln-measure build --runs 1 --warmup 0 --timeout 0.5 \
  --workdir "$T/timeout" --baseline 'sleep 30' --candidate true
# SIGTERM to kiln-measure reaches the running build's process group; kiln-measure
# waits for it and exits 128 + 15.
kiln-measure build --runs 1 --warmup 0 --workdir "$T/sig" --candidate true \
  --baseline "sleep 60 & echo \$! > '$T/sleep.pid'; wait" > /dev/null 2> "$T/sig.err" &
measure_pid=$!
for _ in $(seq 200); do [[ -s $T/sleep.pid ]] && break; sleep 0.05; done
kill -TERM "$measure_pid"
wait "$measure_pid"
rc=$?
check "SIGTERM: kiln-measure exits 143 once its build has stopped (exit $rc)" test "$rc" -eq 143
check "the error names the signal, on one line: $(cat "$T/sig.err")" \
  bash -c "grep -q 'interrupted by SIGTERM' '$T/sig.err' && [[ \$(grep -c . '$T/sig.err') -eq 1 ]]"
sleeper=$(cat "$T/sleep.pid")
sleep 0.2
check "the build's own child (pid $sleeper) got the signal too" \
  bash -c "! kill -0 $sleeper 2>/dev/null || grep -q '^State:.*Z' /proc/$sleeper/status"

# A cmd: back end must write a complete object in time.
printf 'int inc(int x) { return x + 1; }\n' > "$T/inc.c"
"$LLVM_BINDIR/clang" -c -emit-llvm -O1 "$T/inc.c" -o "$T/inc.bc"
llc="$LLVM_BINDIR/llc -filetype=obj -relocation-model=pic {in} -o"
kiln-emit "$T/inc.bc" -o "$T/inc.o" --backend "cmd:$llc {out}"
check "a cmd: back end writing a real object is ok (exit $?)" test -s "$T/inc.o"
expect_error 1 'broken object: .*section header' \
  kiln-emit "$T/inc.bc" -o "$T/header.o" --backend "cmd:$llc {out}.full && head -c 64 {out}.full > {out}"
KILN_CMD_TIMEOUT=0.5 expect_error 1 'timed out after 0.5 s \(KILN_CMD_TIMEOUT\)' \
  kiln-emit "$T/inc.bc" -o "$T/slow.o" --backend 'cmd:sleep 30; : {in} {out}'
# Nested: a build timing out whose kiln-emit runs a cmd: back end in a group of its
# own. The build's group gets SIGTERM first, so kiln-emit stops its back end too.
mkdir "$T/nested-tmp"
TMPDIR="$T/nested-tmp" expect_error 1 'timed out' kiln-measure build --runs 1 --warmup 0 --timeout 1 --workdir "$T/nested" --candidate true \
  --baseline "kiln-emit '$T/inc.bc' -o '$T/nested.o' --backend 'cmd:sleep 60 & echo \$! > $T/nested.pid; wait; : {in} {out}'"
sleep 0.3
nested=$(cat "$T/nested.pid")
check "the back end of a kiln-emit inside a timed-out build is stopped too (pid $nested)" \
  bash -c "[[ -n '$nested' ]] && { ! kill -0 $nested 2>/dev/null || grep -q '^State:.*Z' /proc/$nested/status; }"
# ... and that kiln-emit, given the grace to finish, removed its scratch directory.
check "the kiln-emit inside a timed-out build removed its kiln-cmd-* directory" \
  bash -c "! ls -d '$T/nested-tmp'/kiln-cmd-* 2>/dev/null"
KILN_CMD_TIMEOUT=soon expect_error 2 'KILN_CMD_TIMEOUT' kiln-emit "$T/inc.bc" -o "$T/x.o" --backend "cmd:$llc {out}"
# SIGTERM at any moment of a cmd: emission, also before the command has started (when
# there is no group to pass it to), leaves no kiln-cmd-* directory behind: 30 tries at
# random moments (before the fix, about one in seven left one).
mkdir "$T/term-tmp"
for _ in $(seq 30); do
  TMPDIR="$T/term-tmp" kiln-emit "$T/inc.bc" -o "$T/term.o" --backend "cmd:sleep 0.01; $llc {out}" >/dev/null 2>&1 &
  emitter=$!
  sleep "0.0$((RANDOM % 60))"
  kill -TERM "$emitter" 2>/dev/null
  wait "$emitter" 2>/dev/null
done
check "kiln-emit told to stop at random moments of a cmd: emission left no kiln-cmd-* directory" \
  bash -c "! ls -d '$T/term-tmp'/kiln-cmd-* 2>/dev/null"

cargo build -q
cp target/debug/kiln-example "$T/native"
cargo clean -q
kiln-capture -o "$T/C" --backend llvm --profile release -- cargo build -q
cp target/debug/kiln-example "$T/kiln"
kiln-measure size --baseline "$T/native" --candidate "$T/kiln" --json "$T/size.json" > "$T/size.md"
check "size compares stripped sections" jq -e '[.rows[] | select(.section == ".text")] | length == 1' "$T/size.json"
finish
