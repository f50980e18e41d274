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

# A back end whose error spans lines (a cmd: template of two lines): each receipt is
# still one JSON line, in the corpus and in DIR; and a module that fails leaves no
# object of an earlier run in DIR.
kiln-emit A --out objs4 -j 1 > /dev/null
check "a first run put an object per module" bash -c "[[ \$(ls objs4/*.o | wc -l) -eq 2 ]]"
kiln-emit A --out objs4 -j 1 --backend $'cmd:echo two\nfalse {in} {out}' > /dev/null 2>&1
check "receipts stay JSON Lines after a multi-line error" \
  bash -c "jq -e . A/receipts.jsonl > /dev/null && jq -se 'map(select(.ok == false)) | length == 2' objs4/receipts.jsonl > /dev/null"
check "the failed modules' objects of the earlier run are gone" bash -c "[[ -z \$(ls objs4/*.o 2>/dev/null) ]]"
# The back end's standard output is not kiln-emit's: with -o /dev/stdout the object
# stands alone.
kiln-emit add.bc -o /dev/stdout --backend "cmd:echo chatter; $LLVM_BINDIR/llc -O0 -filetype=obj {in} -o {out}" \
  > add-stdout.o 2> /dev/null
check "a cmd: back end's output goes to standard error, not into the object" \
  bash -c "[[ \$(head -c 4 add-stdout.o | tail -c 3) == ELF ]] && ! grep -q chatter add-stdout.o"

# Checks are one mode each; a check writes nothing.
expect_error 2 "one check each" kiln-emit A --check-reader --check-contract
expect_error 2 "a check writes no object" kiln-emit add.bc --check-contract -o x.o
expect_error 2 "--json goes with --check-reader or --check-lines" kiln-emit A --check-contract --json
check "nothing written by the refused checks" test ! -e x.o

# --check-reader on a corpus with a module neither reader can read (a blob cut short
# on disk): that module is reported, the others are still checked.
kiln-capture merge -o A3 A > /dev/null
cut_id=$(jq -r 'select(.crate=="main.bc") | .id' A3/modules.jsonl | head -1)
blob="A3/blobs/${cut_id:0:2}/$cut_id.bc"
head -c 100 "$blob" > cut.bc && chmod u+w "$blob" && cp cut.bc "$blob"
kiln-emit A3 --check-reader > reader.txt 2>&1
check "--check-reader reports the unreadable module and checks the rest" \
  bash -c "grep -q '$cut_id' reader.txt && grep -qE '^2 modules' reader.txt"

# One file that is no bitcode is bad input for --check-reader too (it said "1 declined", exit 0).
echo "not bitcode" > notbc.bc
expect_error 3 "notbc.bc: not LLVM bitcode" kiln-emit notbc.bc --check-reader

# --check-reader on a corpus with a module that crashes LLVM's parser: each module is
# compared in a worker, so that module's line says so and the others are still checked
# (the whole check died by the signal, printing nothing).
kiln-capture merge -o A4 A > /dev/null
crash_id=$(jq -r 'select(.crate=="main.bc") | .id' A4/modules.jsonl | head -1)
blob="A4/blobs/${crash_id:0:2}/$crash_id.bc"
chmod u+w "$blob" && cp "$KILN_SOURCE/tests/data/crash-sigsegv.bc" "$blob"
rc=0; kiln-emit A4 --check-reader > reader4.txt 2>&1 || rc=$?
check "--check-reader reports a module that crashes LLVM and checks the rest (exit 1)" \
  bash -c "[[ $rc -eq 1 ]] && grep -q '$crash_id.*: crashed: LLVM crashed (SIGSEGV) while parsing' reader4.txt &&
           grep -qE '^2 modules: 1 identical, .*, 1 crashed\$' reader4.txt"

# --shard 1/1 (a script's shards when N is 1) writes a shard's file, which merges.
cp A/census.jsonl census-before.jsonl
kiln-census A --shard 1/1 > /dev/null
check "--shard 1/1 writes census.shard-1-of-1.jsonl and leaves census.jsonl alone" \
  bash -c "[[ -s A/census.shard-1-of-1.jsonl ]] && cmp -s A/census.jsonl census-before.jsonl"
check "and merges" kiln-census merge A

# --export-flat on LLVM's route verifies as stamp's emission does there, or not
# with --no-verify; the direct reader's route does not run LLVM's verifier.
printf 'target triple = "x86_64-unknown-linux-gnu"\ndefine i32 @nd(i1 %%c) {\nentry:\n  br i1 %%c, label %%a, label %%b\na:\n  %%x = add i32 1, 2\n  br label %%b\nb:\n  ret i32 %%x\n}\n' > nd.ll
"$LLVM_BINDIR/llvm-as" --disable-verify nd.ll -o nd.bc
expect_error 3 "does not verify" kiln-emit nd.bc --export-flat nd.flat --reader llvm
check "with --no-verify LLVM's route exports it" kiln-emit nd.bc --export-flat nd.flat --reader llvm --no-verify
finish
