#!/usr/bin/env bash
# A capture that fails, is refused or is killed never leaves a broken build or kiln's
# temporary directories behind, and a bad command line creates nothing.
source "$(dirname "$0")/lib.sh"

cp -r "$KILN_SOURCE/examples/c-program" "$T/c"
cd "$T/c"
make -s clean
make -s CC="$LLVM_BINDIR/clang" && ./kiln-c-example > "$T/native.out"
check "plain clang build ran" test -s "$T/native.out"
# No .o file here may hold bitcode (its first bytes 'BC').
no_bitcode_objects() {
  local f
  for f in *.o; do
    [[ -e $f ]] || continue
    [[ $(head -c 2 "$f") == BC ]] && return 1
  done
  return 0
}

# A bad subcommand or a missing build program creates no corpus.
cd "$T"
expect_error 2 "bogus" kiln-capture bogus -o x
check "a bad subcommand created nothing" test ! -e x
expect_error 6 "no-such-build-tool: program not found" kiln-capture -o y -- no-such-build-tool
KILN_OBJECT_CACHE_MB=lots expect_error 2 "KILN_OBJECT_CACHE_MB: 'lots': expected a whole number of MiB" \
  kiln-capture -o y2 -- true
check "a bad KILN_OBJECT_CACHE_MB creates no corpus" test ! -e y2
check "a build program that is not found created nothing" test ! -e y
# A build that succeeds without one compiler call through kiln captured nothing: said on
# standard error, even where it is not a terminal.
kiln-capture -o "$T/none" -- true 2> "$T/none.err"
check "a build with no compiler call through kiln: a warning that nothing was captured" \
  grep -q "^kiln-capture: warning: no compiler call went through kiln in this build" "$T/none.err"
# What fails after the build (here the build removes the corpus) leaves a failed build's
# status as it was; after a build that succeeded it is kiln's error.
mkdir -p "$T/gone"
kiln-capture -o "$T/gone/corpus" -- sh -c "rm -rf '$T/gone'; exit 3" 2> "$T/gone.err"; rc=$?
check "a corpus the failing build removed: the build's status 3 (got $rc), with a warning" \
  bash -c "[[ $rc -eq 3 ]] && grep -q \"warning: .*no such corpus directory; the build's status 3\" '$T/gone.err'"
mkdir -p "$T/gone"
kiln-capture -o "$T/gone/corpus" -- sh -c "rm -rf '$T/gone'" 2> /dev/null; rc=$?
check "after a build that succeeded, kiln's error status 5 (got $rc)" test "$rc" -eq 5
CC=gcc kiln-capture -o "$T/none" -- true 2> "$T/cc.err"
check "a CC set to another compiler is warned of: it is not run" grep -q "warning: CC=gcc is not run" "$T/cc.err"
CARGO_BUILD_RUSTC_WRAPPER=sccache kiln-capture -o "$T/none" -- true 2> "$T/wrapper.err"
check "a rustc wrapper set by CARGO_BUILD_RUSTC_WRAPPER is replaced with a warning" \
  grep -q "replacing CARGO_BUILD_RUSTC_WRAPPER=sccache" "$T/wrapper.err"
echo 'not bitcode' > junk.bc
expect_error 3 "junk.bc: not LLVM bitcode" kiln-capture add -o z junk.bc
check "an import of a file that is not bitcode created nothing" test ! -e z

# A full disk while the wrapper stores the bitcode: the module fails with status 1,
# no bitcode is left at the .o path, and a plain make afterwards links.
cd "$T/c"
mkdir "$T/full"
if mount -t tmpfs -o size=16k tmpfs "$T/full" 2>/dev/null; then
  kiln-capture -o "$T/full/C" -- true
  head -c 1M /dev/zero > "$T/full/filler" 2>/dev/null
  make -s clean
  kiln-capture -o "$T/full/C" -- sh -c '$CC -O1 -g -c main.c -o main.o; echo $? > wrapper.rc' 2> "$T/full.err"
  check "the wrapper exits 1 when the corpus is full (got $(cat wrapper.rc 2>/dev/null))" \
    bash -c "[[ \$(cat wrapper.rc) == 1 ]]"
  check "it says which source failed and why" \
    grep -qi "^kiln-capture: error: main.c: .*no space left on device" "$T/full.err"
  check "no bitcode is left at the object path" no_bitcode_objects
  kiln-capture -o "$T/full/C" -- make -s 2>/dev/null
  check "a make under capture on the full disk leaves no bitcode object either" no_bitcode_objects
  make -s CC="$LLVM_BINDIR/clang" 2>"$T/relink.err" && ./kiln-c-example > "$T/after-full.out"
  check "a following plain make builds a working program" cmp "$T/native.out" "$T/after-full.out"
  umount "$T/full"
else
  echo "skip - full-disk capture: this machine does not allow mounting a tmpfs"
fi

# A compile whose output is a device passes through: the wrapper cannot read bitcode
# back from it and must never remove it (a private copy of /dev/null, made as root).
if mknod "$T/null" c 1 3 2>/dev/null; then
  kiln-capture -o "$T/D" --backend llvm -- sh -c '$CC -c main.c -o "$1"' _ "$T/null"
  check "a device named by -o is left in place" test -c "$T/null"
  check "... and the compile passed through, saying why" \
    grep -q '"reason":"output is not a regular file' "$T/D/invocations.jsonl"
else
  echo "skip - device output: this machine does not allow mknod"
fi

# TMPDIR and the corpus path with spaces and shell metacharacters.
odd="$T/tmp dir's \$HOME & (x)"
mkdir -p "$odd"
make -s clean
TMPDIR=$odd kiln-capture -o "$T/corpus with space" --backend llvm -- make -s
./kiln-c-example > "$T/odd.out" 2>/dev/null
check "a C capture with spaces and metacharacters in TMPDIR and the corpus path builds the program" \
  cmp "$T/native.out" "$T/odd.out"
check "... and captured its three translation units" \
  bash -c "[[ \$(wc -l < '$T/corpus with space/modules.jsonl') -eq 3 ]]"
check "... and removed its temporary directory" bash -c "[[ -z \$(ls -A \"\$1\") ]]" _ "$odd"

# A corpus this user cannot write is refused before the build runs.
kiln-capture -o "$T/RO" -- true
mkdir -m 777 "$T/work"
as_user=()
capture=$KILN_BIN/kiln-capture
if [[ $(id -u) -eq 0 ]]; then
  # The build tree may sit where that user cannot reach (under /root): use a copy.
  chmod 755 "$T"
  cp "$KILN_BIN/kiln-capture" "$KILN_BIN/kiln-capture-llvm" "$T/" && chmod 755 "$T/kiln-capture" "$T/kiln-capture-llvm"
  capture=$T/kiln-capture
  as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
else
  chmod -R a-w "$T/RO"
fi
cd "$T/work"
mkdir -m 777 "$T/tmp-ro"
expect_error 5 "RO: cannot write to the corpus: (Permission denied|Read-only file system)" \
  env TMPDIR="$T/tmp-ro" "${as_user[@]}" "$capture" -o "$T/RO" -- sh -c 'touch marker'
check "the build did not run" test ! -e marker
check "no temporary directory is left behind" bash -c "[[ -z \$(ls -A '$T/tmp-ro') ]]"
chmod -R u+w "$T/RO"
# A writable corpus directory with one read-only JSON Lines file.
kiln-capture -o "$T/RO2" -- sh -c '$CC -c "$1" -o x.o' _ "$T/c/main.c"
[[ ${#as_user[@]} -gt 0 ]] && chown -R nobody "$T/RO2"
chmod a-w "$T/RO2/modules.jsonl"
expect_error 5 "RO2/modules.jsonl: cannot write to the corpus: Permission denied" \
  env TMPDIR="$T/tmp-ro" "${as_user[@]}" "$capture" -o "$T/RO2" -- sh -c 'touch marker'
check "the build did not run" test ! -e marker
cd "$T/c"

# SIGTERM to kiln-capture stops the build, removes its temporary directory and exits 143.
mkdir "$T/sig" "$T/tmp-sig"
cat > "$T/sig/Makefile" <<'EOF'
all:
	touch started; sleep 4; touch marker
EOF
cd "$T/sig"
TMPDIR="$T/tmp-sig" kiln-capture -o "$T/S" -- make -s &
pid=$!
for _ in $(seq 300); do [[ -e started ]] && break; sleep 0.1; done
check "the slow build started" test -e started
kill -TERM "$pid"
wait "$pid"
rc=$?
check "kiln-capture exits 143 after SIGTERM (got $rc)" test "$rc" -eq 143
sleep 5
check "the build was stopped (its marker never appeared)" test ! -e marker
check "no temporary directory is left in TMPDIR" bash -c "[[ -z \$(ls -A '$T/tmp-sig') ]]"

# kiln-capture exits only once the whole stopped build has: here a process of the build
# takes a second to clean up after SIGTERM (as a wrapper does while its back end stops)
# after the build's first process has ended. One that does not end within 5 seconds
# gets SIGKILL.
mkdir "$T/drain"
cd "$T/drain"
cat > build.sh <<'EOF'
( trap "sleep ${CLEANUP_SECONDS:-1}; touch cleaned; exit 0" TERM; touch ready; while :; do sleep 0.1; done ) &
wait
EOF
kiln-capture -o "$T/D" -- sh build.sh &
pid=$!
for _ in $(seq 300); do [[ -e ready ]] && break; sleep 0.1; done
sleep 0.2
kill -TERM "$pid"
wait "$pid"
rc=$?
check "a stopped build's process that cleans up for a second: done before kiln-capture exits (status $rc)" \
  bash -c "[[ $rc -eq 143 && -e cleaned ]]"
rm -f ready cleaned
CLEANUP_SECONDS=30 kiln-capture -o "$T/D" -- sh build.sh &
pid=$!
for _ in $(seq 300); do [[ -e ready ]] && break; sleep 0.1; done
sleep 0.2
start=$SECONDS
kill -TERM "$pid"
wait "$pid"
rc=$?
took=$((SECONDS - start))
sleep 0.5
check "one that takes 30 seconds: kiln-capture exits after about 5 (took $took, status $rc), the process killed" \
  bash -c "[[ $rc -eq 143 && $took -ge 4 && $took -le 15 && ! -e cleaned ]] && ! pgrep -f 'slee[p] 30' > /dev/null"

# SIGTERM while a back end emits: the wrapper removes the bitcode at the object path
# (no make here to delete the target), and the back end's scratch directory goes too.
cd "$T/c"
make -s clean
rm -f "$T/emitting"
TMPDIR="$T/tmp-sig" kiln-capture -o "$T/S" \
  --backend "cmd:touch $T/emitting; sleep 4; $LLVM_BINDIR/llc -O0 -filetype=obj -relocation-model=pic {in} -o {out}" \
  -- sh -c '$CC -O1 -c main.c -o main.o' &
pid=$!
for _ in $(seq 300); do [[ -e $T/emitting ]] && break; sleep 0.1; done
check "the back end started" test -e "$T/emitting"
kill -TERM "$pid"
wait "$pid"
rc=$?
check "kiln-capture exits 143 after SIGTERM during an emission (got $rc)" test "$rc" -eq 143
check "no bitcode is left at the object path" no_bitcode_objects
check "no temporary directory is left in TMPDIR (back end's included)" bash -c "[[ -z \$(ls -A '$T/tmp-sig') ]]"

# SIGTERM to the C wrapper alone (make signals its own children only): the back end's
# command, in a process group of its own, is stopped too; it ran on after the wrapper
# and its worker died.
make -s clean
rm -f "$T/emitting" "$T/emitted"
kiln-capture -o "$T/S3" --backend "cmd:touch $T/emitting; sleep 4; touch $T/emitted; false {in} {out}" \
  -- sh -c '$CC -O1 -c main.c -o main.o & echo $! > wrapper.pid; wait' &
pid=$!
for _ in $(seq 300); do [[ -e $T/emitting ]] && break; sleep 0.1; done
check "the back end started under the wrapper" test -e "$T/emitting"
kill -TERM "$(cat wrapper.pid)"
wait "$pid"
sleep 5
check "SIGTERM to the wrapper alone stops the back end's command (it never finished)" test ! -e "$T/emitted"
check "and no bitcode is left at the object path" no_bitcode_objects
cd "$T/sig"

# A back end that crashes the process emitting (here a cmd: back end that sends SIGSEGV
# to its parent): with --fallback the module is clang's own, otherwise it fails with
# status 1; either way no bitcode is left at the object path.
cd "$T/c"
make -s clean
# Only a parent that is not kiln-capture: a process emits several units at once, and a
# command whose emitter died before the shell read its parent (a sibling's SIGSEGV) is
# kiln-capture's child by then (kiln is the build's subreaper); in the project's CI
# (stop 50) such a shell sent SIGSEGV to kiln-capture.
crashing='cmd:[ "$(cat /proc/$PPID/comm)" = kiln-capture ] || kill -SEGV $PPID; sleep 2; : {in} {out}'
kiln-capture -o "$T/SEGV" --backend "$crashing" --fallback -- sh -c '$CC -O1 -c main.c -o main.o; echo $? > wrapper.rc' \
  2> "$T/segv.err"
check "with --fallback, a crashing back end's module is compiled by clang (status $(cat wrapper.rc))" \
  bash -c "[[ \$(cat wrapper.rc) == 0 && \$(head -c 4 main.o | tail -c 3) == ELF ]]"
check "it warns of the crash" grep -q "^kiln-capture: warning: main.c: the back end: crashed (SIGSEGV); falling back" "$T/segv.err"
check "the invocation is recorded as a fallback with its reason" \
  grep -q '"action":"fallback","reason":"the back end: crashed (SIGSEGV)"' "$T/SEGV/invocations.jsonl"
rm -f main.o
kiln-capture -o "$T/SEGV" --backend "$crashing" -- sh -c '$CC -O1 -c main.c -o main.o; echo $? > wrapper.rc' 2> "$T/segv.err"
check "without --fallback it fails the module with status 1 (got $(cat wrapper.rc))" bash -c "[[ \$(cat wrapper.rc) == 1 ]]"
check "and says so" grep -q "^kiln-capture: error: main.c ([0-9a-f]*): the back end: crashed (SIGSEGV)$" "$T/segv.err"
check "no bitcode is left at the object path after the crash" test ! -e main.o

# SIGTERM to the wrapper alone (make passes a signal to its own children only) while
# its clang writes the bitcode: the wrapper stops that clang before removing the output,
# which clang would otherwise write after the removal.
make -s clean
printf '#!/bin/sh\ntouch "%s"; sleep 2; exec "%s" "$@"\n' "$T/clang-started" "$LLVM_BINDIR/clang" > "$T/slow-clang"
chmod +x "$T/slow-clang"
rm -f "$T/clang-started"
kiln-capture -o "$T/S2" --backend llvm -- \
  sh -c 'KILN_CAPTURE_REAL_CC="$1" $CC -O1 -c main.c -o main.o & echo $! > wrapper.pid; wait' _ "$T/slow-clang" &
pid=$!
for _ in $(seq 300); do [[ -e $T/clang-started ]] && break; sleep 0.1; done
check "the slow clang started" test -e "$T/clang-started"
kill -TERM "$(cat wrapper.pid)"
wait "$pid"
sleep 3
check "no object appeared after the wrapper was stopped" test ! -e main.o
cd "$T/sig"

# kill -9 cannot be caught: the next capture removes the directory it left, and only
# kiln's stale ones (not one whose owner still holds its lock, not anybody else's).
rm -f started marker
mkdir "$T/tmp-kill"
TMPDIR="$T/tmp-kill" kiln-capture -o "$T/K" -- sh -c 'echo $$ > build.pid; touch started; exec sleep 30' &
pid=$!
for _ in $(seq 300); do [[ -e started ]] && break; sleep 0.1; done
kill -KILL "$pid"
wait "$pid" 2>/dev/null
build=$(cat build.pid)
for _ in $(seq 50); do grep -q '^State:.*zombie' "/proc/$build/status" 2>/dev/null || [[ ! -e /proc/$build ]] && break; sleep 0.1; done
# Gone, or a zombie where nothing reaps orphans (a container's init).
check "the build's first process got SIGTERM when kiln-capture died" \
  bash -c "[[ ! -e /proc/$build ]] || grep -q '^State:.*zombie' /proc/$build/status"
kill -KILL -- "-$build" 2>/dev/null || kill -KILL "$build" 2>/dev/null
sleep 0.2
left=$(ls "$T/tmp-kill")
check "kill -9 left a kiln-capture directory behind (got '$left')" bash -c "[[ '$left' == kiln-capture-?????? ]]"
mkdir "$T/tmp-kill/kiln-capture-nolock" "$T/tmp-kill/kiln-capture-live11" "$T/tmp-kill/other"
touch "$T/tmp-kill/kiln-capture-live11/kiln.lock"
# Killed while making or removing its directory: no lock in it. Empty (or with only the
# lock file not yet renamed) and a minute old, it goes; with anything else, or fresh
# (kiln-capture-nolock: a capture may be between its mkdtemp and its lock), it stays.
mkdir "$T/tmp-kill/kiln-capture-oldemp" "$T/tmp-kill/kiln-capture-oldnew" "$T/tmp-kill/kiln-capture-oldful"
touch "$T/tmp-kill/kiln-capture-oldnew/kiln.lock.new" "$T/tmp-kill/kiln-capture-oldful/kiln-cc"
touch -d '2 minutes ago' "$T"/tmp-kill/kiln-capture-old*
flock "$T/tmp-kill/kiln-capture-live11/kiln.lock" sleep 10 &
holder=$!
for _ in $(seq 50); do flock -n "$T/tmp-kill/kiln-capture-live11/kiln.lock" true || break; sleep 0.1; done
TMPDIR="$T/tmp-kill" kiln-capture -o "$T/K" -- true
check "the next capture removed the stale directories and kept the others" \
  bash -c "[[ \$(ls '$T/tmp-kill' | tr '\n' ' ') == 'kiln-capture-live11 kiln-capture-nolock kiln-capture-oldful other ' ]]"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
finish
