#!/usr/bin/env bash
# One bad module fails alone: a blob that crashes LLVM's bitcode reader and a module
# that makes LLVM stop with a fatal error each fail with their reason, in a file and
# in a corpus, and every other module is still censused, emitted and replayed.
source "$(dirname "$0")/lib.sh"

cd "$T"
# Mutated bitcode that crashes LLVM 22's reader (SIGSEGV, and SIGTRAP from an
# unreachable). Made from a 1,664-byte module (a global and one function) by setting
# 1 to 16 random bytes after the magic with Python's random.Random(seed), seeds 856
# and 250, keeping those that crash llvm-dis. Should a later LLVM stop crashing on
# them, the preconditions below fail: make new ones the same way.
cp "$KILN_SOURCE/tests/data/crash-sigsegv.bc" crash.bc
cp "$KILN_SOURCE/tests/data/crash-sigtrap.bc" trap.bc
# Verifies, but LLVM's x86 back end stops with "LLVM ERROR: 64-bit code requested on a
# subtarget that doesn't support it!" and exit(1) unless kiln catches it.
printf 'target triple = "x86_64-unknown-linux-gnu"\ndefine i32 @h(i32 %%x) #0 {\n  %%y = add i32 %%x, 1\n  ret i32 %%y\n}\nattributes #0 = { "target-cpu"="i386" }\n' > fatal.ll
"$LLVM_BINDIR/llvm-as" fatal.ll -o fatal.bc
for i in 1 2 3; do
  printf 'target triple = "x86_64-unknown-linux-gnu"\ndefine i32 @g%d(i32 %%x) {\n  %%y = mul i32 %%x, %d\n  ret i32 %%y\n}\n' $i $i > good$i.ll
  "$LLVM_BINDIR/llvm-as" good$i.ll -o good$i.bc
done

# Without these the checks below would prove nothing.
check "precondition: crash.bc crashes LLVM's own llvm-dis (SIGSEGV)" \
  bash -c "exec 2>/dev/null; '$LLVM_BINDIR/llvm-dis' crash.bc -o /dev/null; [[ \$? -eq 139 ]]"
check "precondition: trap.bc crashes LLVM's own llvm-dis (SIGTRAP)" \
  bash -c "exec 2>/dev/null; '$LLVM_BINDIR/llvm-dis' trap.bc -o /dev/null; [[ \$? -eq 133 ]]"
check "precondition: fatal.bc makes llc stop with LLVM ERROR" \
  bash -c "'$LLVM_BINDIR/llc' fatal.bc -filetype=obj -o /dev/null 2>&1 | grep -q 'LLVM ERROR: 64-bit code requested'"

# One file: exit 3 and one line naming it and what LLVM did; never an object.
expect_error 3 "^kiln-emit: error: crash.bc: LLVM crashed \\(SIGSEGV\\) while parsing$" kiln-emit crash.bc -o crash.o
expect_error 3 "^kiln-capture: error: crash.bc: LLVM crashed \\(SIGSEGV\\) while parsing$" kiln-capture add -o refused crash.bc
check "a refused import creates no corpus" test ! -e refused
expect_error 3 "^kiln-emit: error: trap.bc: LLVM crashed \\(SIGTRAP\\) while parsing$" kiln-emit trap.bc -o trap.o
expect_error 3 "^kiln-emit: error: fatal.bc: LLVM ERROR while generating code: 64-bit code requested on a subtarget" \
  kiln-emit fatal.bc -o fatal.o
expect_error 3 "^kiln-emit: error: crash.bc: LLVM crashed \\(SIGSEGV\\) while parsing$" kiln-emit crash.bc --export-flat crash.flat
check "no object or flat file is written for them" test ! -e crash.o -a ! -e trap.o -a ! -e fatal.o -a ! -e crash.flat
expect_error 3 "^kiln-census: error: crash.bc: LLVM crashed \\(SIGSEGV\\) while parsing$" kiln-census crash.bc
check "kiln-census prints the crashed module's record, rejected with the reason" \
  bash -c "kiln-census crash.bc 2>/dev/null | grep -q 'read: LLVM crashed (SIGSEGV) while parsing'"
kiln-emit good1.bc -o good1.o >/dev/null
check "a good file is still emitted" test -s good1.o

# A corpus with three good modules and the two bad ones. kiln-capture add refuses
# files it cannot parse, so the crashing blob goes in the way a corpus copied from
# elsewhere would hold it: its blob and a record naming it.
kiln-capture add -o C good1.bc good2.bc good3.bc fatal.bc >/dev/null
id=5e74e731cfda935214dba7f5e0052a47  # xxh3-128 of tests/data/crash-sigsegv.bc (the corpus checks it)
mkdir -p "C/blobs/${id:0:2}" && cp crash.bc "C/blobs/${id:0:2}/$id.bc"
head -1 C/modules.jsonl | sed "s/\"id\":\"[0-9a-f]*\"/\"id\":\"$id\"/; s/\"crate\":\"[^\"]*\"/\"crate\":\"crash.bc\"/" >> C/modules.jsonl
fatal_id=$(grep '"crate":"fatal.bc"' C/modules.jsonl | grep -o '"id":"[0-9a-f]*"' | cut -d'"' -f4)

kiln-census C -j 2 > census.txt 2> census.err
check "kiln-census of the corpus finishes (verdicts do not change its exit status)" test $? -eq 0
check "census.jsonl has a record for each of the 5 modules" test "$(wc -l < C/census.jsonl)" -eq 5
check "the crashing module is rejected with how LLVM crashed" \
  grep -q "\"id\":\"$id\".*read: LLVM crashed (SIGSEGV) while parsing" C/census.jsonl
check "the good modules are eligible for llvm" test "$(grep -c '"verdict":"eligible"' C/census.jsonl)" -ge 3

kiln-emit C --out out -j 2 > emit.txt 2> emit.err
check "kiln-emit of the corpus finishes with exit 1 (some modules failed)" test $? -eq 1
check "it says 5 modules, 3 emitted, 2 failed" grep -q "5 modules: 3 emitted, 2 failed" emit.txt
check "every good module's object is written" \
  bash -c "for f in good1 good2 good3; do i=\$(grep \"\\\"crate\\\":\\\"\$f.bc\\\"\" C/modules.jsonl | grep -o '\"id\":\"[0-9a-f]*\"' | cut -d'\"' -f4); test -s out/\$i.o || exit 1; done"
check "no object for the bad modules" test ! -e "out/$id.o" -a ! -e "out/$fatal_id.o"
check "a receipt for each of the 5 modules" test "$(wc -l < out/receipts.jsonl)" -eq 5
check "the crashing module's receipt says how LLVM crashed" \
  grep -q "\"id\":\"$id\".*\"ok\":false.*LLVM crashed (SIGSEGV) while parsing" out/receipts.jsonl
check "the fatal-error module's receipt has LLVM's message" \
  grep -q "\"id\":\"$fatal_id\".*\"ok\":false.*LLVM ERROR while generating code: 64-bit code requested" out/receipts.jsonl
check "the corpus holds the 5 receipts too" test "$(grep -c "\"origin\":\"kiln-emit\"" C/receipts.jsonl)" -eq 5

kiln-replay C --rounds 2 -j 2 --backend llvm,stamp --report report.json > replay.txt 2> replay.err
check "kiln-replay finishes with exit 1 (some modules failed)" test $? -eq 1
check "the report lists both bad modules as left out, with their reasons" \
  bash -c "grep -q '\"excluded\":\\[{.*\"$id\",\"error\":\"LLVM crashed (SIGSEGV) while parsing\"' report.json &&
           grep -q '\"module\":\"$fatal_id\",\"error\":\"LLVM ERROR while generating code' report.json"
check "the 3 good modules are replayed in every round of both services" \
  jq -e '[.services[].rounds[].modules_ok] == [3, 3, 3, 3]' report.json
check "the table names both as failed" test "$(grep -c '^FAILED: module .*, left out of the rounds' replay.txt)" -eq 2

# The rest on a corpus of good modules only.
kiln-capture add -o G good1.bc good2.bc >/dev/null
# An unwritable receipts.jsonl is an I/O error (exit 5), not std::terminate.
mkdir -p out2/receipts.jsonl
expect_error 5 "out2/receipts.jsonl" kiln-emit G --out out2 -j 2

# Options that the other mode would ignore are usage errors.
expect_error 2 "--out is for a corpus" kiln-emit good1.bc -o one.o --out somewhere
check "and nothing is written" test ! -e somewhere -a ! -e one.o
expect_error 2 "-o is for a single file" kiln-emit G -o x.o --out out3
check "and nothing is written" test ! -e x.o -a ! -e out3
expect_error 2 "--explain needs a module id" kiln-census G --explain ''
expect_error 2 "--explain is for a corpus" kiln-census good1.bc --explain abc

# A file cut short inside the magic number is truncated bitcode, not "a text file".
printf 'BC' > bc2.bc
printf 'BC\xc0' > bc3.bc
expect_error 3 "^kiln-emit: error: bc2.bc: truncated bitcode: 2 bytes" kiln-emit bc2.bc -o x.o
expect_error 3 "^kiln-emit: error: bc3.bc: truncated bitcode: 3 bytes" kiln-emit bc3.bc -o x.o
# A file that cannot be read: the record on stdout, and the error line on stderr.
printf 'definitely not bitcode\n' > garbage.bc
expect_error 3 "^kiln-census: error: garbage.bc: not LLVM bitcode" kiln-census garbage.bc

finish
