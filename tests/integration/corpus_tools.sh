#!/usr/bin/env bash
# The corpus as a user scripts it: import, census (table and JSON), explain, merge,
# filter, and emit a whole corpus into objects that link into a working program.
source "$(dirname "$0")/lib.sh"

cd "$T"
cat > add.ll <<'IR'
target triple = "x86_64-unknown-linux-gnu"
define i64 @add(i64 %a, i64 %b) {
  %s = add i64 %a, %b
  ret i64 %s
}
IR
cat > main.ll <<'IR'
target triple = "x86_64-unknown-linux-gnu"
@fmt = private constant [9 x i8] c"sum %ld\0A\00"
declare i32 @printf(ptr, ...)
declare i64 @add(i64, i64)
define i32 @main() {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %acc = phi i64 [ 0, %entry ], [ %acc.next, %loop ]
  %acc.next = call i64 @add(i64 %acc, i64 %i)
  %i.next = add i64 %i, 1
  %done = icmp eq i64 %i.next, 101
  br i1 %done, label %exit, label %loop
exit:
  %r = call i32 (ptr, ...) @printf(ptr @fmt, i64 %acc.next)
  ret i32 0
}
IR
printf 'target triple = "aarch64-unknown-linux-gnu"\ndefine void @f() {\n  ret void\n}\n' > arm.ll
for f in add main arm; do "$LLVM_BINDIR/llvm-as" $f.ll -o $f.bc; done

check "add imports three modules" bash -c "kiln-capture add -o A add.bc main.bc | grep -q '2 new' && kiln-capture add -o B arm.bc add.bc | grep -q '2 new'"
check "importing the same bytes again adds an occurrence, not a module" \
  bash -c "kiln-capture add -o A add.bc | grep -q '0 new' && [[ \$(wc -l < A/modules.jsonl) -eq 3 ]]"
kiln-census A > census.txt
check "census table counts modules and opcodes" bash -c "grep -q '^2 modules, 2 functions defined' census.txt && grep -qE '^  phi +2' census.txt"
check "census writes one record per module" bash -c "[[ \$(wc -l < A/census.jsonl) -eq 2 ]]"
check "census --json is machine-readable" \
  bash -c "kiln-census A --json | jq -e '.modules == 2 and .verdicts.llvm.eligible.modules == 2 and .verdicts.stamp.eligible.modules == 2 and .stamp_functions.functions_stamp == 2' >/dev/null"
main_id=$(jq -r 'select(.crate=="main.bc") | .id' A/modules.jsonl | head -1)
check "--explain shows one module's facts and verdicts" \
  bash -c "kiln-census A --explain ${main_id:0:8} | grep -q 'functions: 1 defined, 2 declared; 3 blocks'"

# What a merge into M that was killed left beside it goes with the next merge into M
# (nobody else's directory of a like name).
mkdir -p M.kiln-partial-Ab12Cd/blobs M.kiln-partial-keep-me
echo half > M.kiln-partial-Ab12Cd/blobs/x
kiln-capture merge -o M A B >/dev/null
check "a killed merge's partial corpus is removed by the next merge into the same place" \
  bash -c "[[ ! -e M.kiln-partial-Ab12Cd && -d M.kiln-partial-keep-me ]]"
kiln-census M >/dev/null
check "merge keeps every module of both corpora" bash -c "[[ \$(jq -r .id M/modules.jsonl | sort -u | wc -l) -eq 3 ]]"
kiln-capture filter -o R M --reason target >/dev/null
check "filter by census reason keeps the wrong-target module" bash -c "[[ \$(jq -r .crate R/modules.jsonl | sort -u) == arm.bc ]]"
echo "$main_id" > ids.txt
kiln-capture filter -o I M --ids ids.txt >/dev/null
check "filter by id list" bash -c "[[ \$(jq -r .id I/modules.jsonl | sort -u) == $main_id ]]"
kiln-capture filter -o K M --crate add.bc >/dev/null
check "filter by crate" bash -c "[[ \$(jq -r .crate K/modules.jsonl | sort -u) == add.bc ]]"
expect_error 5 "I: already holds a corpus" kiln-capture filter -o I M --crate add.bc

kiln-emit A --out objs -j 2 > emit.txt
check "emit a corpus: every module emitted" grep -q '2 modules: 2 emitted, 0 failed' emit.txt
cc -o prog objs/*.o
check "the corpus's objects link and run" bash -c "[[ \$(./prog) == 'sum 5050' ]]"
check "each emitted module has a receipt with stage times and counts" \
  bash -c "[[ \$(jq -s 'map(select(.ok and .origin==\"kiln-emit\" and .stages.codegen > 0 and .functions.llvm == 1)) | length' objs/receipts.jsonl) -eq 2 ]]"
kiln-emit M --out objs2 -j 2 > emit2.txt
check "a corpus with a bad module emits the rest and exits 1" bash -c "[[ \$? -eq 0 ]]; kiln-emit M --out objs3 >/dev/null 2>&1; [[ \$? -eq 1 ]] && grep -q '3 modules: 2 emitted, 1 failed' emit2.txt"
finish
