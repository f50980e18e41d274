#!/usr/bin/env bash
# Captures the example C program through make (CC=kiln-cc) and checks that objects
# from kiln's back ends link into a program that prints what clang's build prints.
source "$(dirname "$0")/lib.sh"

cp -r "$KILN_SOURCE/examples/c-program" "$T/c"
cd "$T/c"
make -s clean
make -s CC="$LLVM_BINDIR/clang" && ./kiln-c-example > "$T/native.out"
check "plain clang build ran" test -s "$T/native.out"

for backend in llvm stamp "cmd:$LLVM_BINDIR/llc -O0 -filetype=obj -relocation-model=pic {in} -o {out}"; do
  make -s clean
  kiln-capture -o "$T/C" --backend "$backend" -- make -s
  ./kiln-c-example > "$T/kiln.out"
  check "make with --backend ${backend%% *}: same output" cmp "$T/native.out" "$T/kiln.out"
done
check "three translation units captured (one build per back end: multiplicity 3)" \
  bash -c "[[ \$(jq -r .id '$T/C/modules.jsonl' | sort -u | wc -l) -eq 3 && \$(wc -l < '$T/C/modules.jsonl') -eq 9 ]]"
kiln-emit "$T/C" --check-contract --no-verify > "$T/contract.txt"
rc=$?
check "--check-contract: stamp's objects of the captured modules keep llvm's symbols (exit $rc: $(tail -1 "$T/contract.txt"))" \
  bash -c "[[ $rc -eq 0 && \$(cat '$T/contract.txt') == '3 modules: 3 same contract, 0 different, 0 failed' ]]"
check "the link step passes through" \
  bash -c "jq -r 'select(.action==\"passthrough\") | .reason' '$T/C/invocations.jsonl' | grep -q 'link'"
check "module records keep the exact compiler arguments and -O level" \
  bash -c "jq -e 'select(.crate==\"main.c\") | .args == [\"-O1\",\"-g\",\"-c\",\"main.c\",\"-o\",\"main.o\"] and .opt_level == \"1\" and .debuginfo == 2' '$T/C/modules.jsonl' | grep -q true"
make -s clean
kiln-capture -o "$T/N" -- make -s
./kiln-c-example > "$T/native2.out"
check "--backend native keeps clang's objects" cmp "$T/native.out" "$T/native2.out"
make -s clean
kiln-capture -o "$T/F" --backend "cmd:false {in} {out}" -- make -s main.o 2> "$T/fail.err"
rc=$?
check "a failing back end fails the compile (status $rc), names the source, and leaves no object" \
  bash -c "[[ $rc -ne 0 ]] && grep -q '^kiln-capture: error: main.c' '$T/fail.err' && [[ ! -e main.o ]]"
# clang's --version is asked once per clang binary (its size and modification time)
# and kept in the corpus: the next capture reads it instead of starting clang.
mkdir -p "$T/fakecc"
printf '#!/bin/sh\necho "$*" >> "%s/fakecc.log"\nexec %s "$@"\n' "$T" "$(command -v clang-22)" > "$T/fakecc/clang-22"
chmod +x "$T/fakecc/clang-22"
for run in 1 2; do PATH="$T/fakecc:$PATH" kiln-capture -o "$T/V" -- true; done
check "compiler versions: two captures start clang --version once, and both manifests name it" \
  bash -c "[[ \$(grep -c -- '--version' '$T/fakecc.log') -eq 1 ]] && jq -e '.clang | startswith(\"Debian clang\") or contains(\"clang version\")' '$T/V/kiln-corpus.json' >/dev/null &&
    [[ \$(wc -l < '$T/V/compiler-versions.jsonl') -eq 1 ]]"
touch -d '2001-01-01' "$T/fakecc/clang-22"
PATH="$T/fakecc:$PATH" kiln-capture -o "$T/V" -- true
check "compiler versions: a changed clang binary (its modification time) is asked again" \
  bash -c "[[ \$(grep -c -- '--version' '$T/fakecc.log') -eq 2 && \$(wc -l < '$T/V/compiler-versions.jsonl') -eq 2 ]]"
# CC and CXX are the same paths in every capture (links beside kiln-capture-llvm): what a
# build keeps of CC (a CMake cache, a cargo build script's rerun-if-env-changed=CC) stays
# valid for the next capture, where a path in each capture's temporary directory did not.
kiln-capture -o "$T/L1" -- sh -c 'echo "$CC $CXX"' > "$T/cc1" 2>/dev/null
kiln-capture -o "$T/L2" -- sh -c 'echo "$CC $CXX"' > "$T/cc2" 2>/dev/null
check "CC and CXX are the same in two captures, links to kiln-capture-llvm beside it ($(cat "$T/cc1"))" \
  bash -c "cmp -s '$T/cc1' '$T/cc2' && read -r cc cxx < '$T/cc1' &&
    [[ \$(readlink -f \"\$cc\") == \$(readlink -f '$KILN_BIN/kiln-capture-llvm') &&
       \$(readlink -f \"\$cxx\") == \$(readlink -f '$KILN_BIN/kiln-capture-llvm') && \$cc == '$KILN_BIN/kiln-cc' ]]"
# Global variables in stamp's DWARF: at a breakpoint gdb prints a program's globals
# (an external, a static, a struct, an array, a pointer, an enum, a function's static, a
# thread-local) and their types as it
# does in clang's build; before, stamp's objects described none ("has unknown type").
mkdir -p "$T/gv" && cd "$T/gv"
cat > g.c <<'SRC'
#include <stdio.h>
struct point { int x, y; };
enum mode { SLOW = 1, FAST = 7 };
int total = 40;
static int calls;
struct point origin = {3, 4};
const short table[4] = {1, 2, 3, 5};
const char *greeting = "hi";
enum mode current = FAST;
_Thread_local long per_thread = 9;
int bump(int k) { static int inner = 2; calls += k + inner; per_thread += k; return total + calls + origin.y + table[3] + (int)current; }
int main(int argc, char **argv) { (void)argv; printf("%d %s\n", bump(argc), greeting); return 0; }
SRC
printf 'g: g.o\n\t$(CC) -g -o g g.o\ng.o: g.c\n\t$(CC) -O0 -g -c g.c -o g.o\n' > Makefile
gdb_globals() {
  gdb -q -batch -ex 'set pagination off' -ex 'break bump' -ex 'run > /dev/null' -ex 'finish' \
    -ex 'print total' -ex 'print calls' -ex 'print origin' -ex 'print table' -ex 'print *greeting@2' \
    -ex 'print current' -ex 'print bump::inner' -ex 'print per_thread' -ex 'ptype origin' -ex 'whatis table' ./g 2>&1 | grep -E '^(\$[0-9]+ = |type = |    |})'
}
make -s CC="$LLVM_BINDIR/clang" && gdb_globals > "$T/gv-native.txt"
rm -f g g.o
kiln-capture -o "$T/GV" --backend stamp -- make -s && gdb_globals > "$T/gv-stamp.txt"
diff "$T/gv-native.txt" "$T/gv-stamp.txt" | head -20  # the differences, if any, in the log
check "gdb prints a program's global variables and their types from stamp's objects as from clang's ($(grep -c '^\$' "$T/gv-stamp.txt") values)" \
  bash -c "[[ \$(grep -c '^\\\$' '$T/gv-native.txt') -eq 8 ]] && grep -q '= {x = 3, y = 4}' '$T/gv-stamp.txt' && diff -q '$T/gv-native.txt' '$T/gv-stamp.txt'"
check "the globals' module went through stamp whole, by the direct reader" \
  bash -c "kiln-census '$T/GV' | grep -Eq 'modules that take the direct route +1 of 1'"
finish
