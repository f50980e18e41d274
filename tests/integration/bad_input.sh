#!/usr/bin/env bash
# Bad input gets one line naming the file and the reason, a documented exit code, and
# nothing already on disk is lost or corrupted.
source "$(dirname "$0")/lib.sh"

cd "$T"
printf 'definitely not bitcode\n\x01\x02' > garbage.bc
: > empty.bc
printf 'target triple = "aarch64-unknown-linux-gnu"\ndefine void @f() {\n  ret void\n}\n' > arm.ll
"$LLVM_BINDIR/llvm-as" arm.ll -o arm.bc
printf 'target triple = "x86_64-unknown-linux-gnu"\ndefine i32 @g(i32 %%x) {\n  %%y = mul i32 %%x, 3\n  ret i32 %%y\n}\n' > good.ll
"$LLVM_BINDIR/llvm-as" good.ll -o good.bc
head -c 200 good.bc > truncated.bc
cp /bin/true elf.bc

expect_error 3 "garbage.bc: not LLVM bitcode" kiln-emit garbage.bc -o out.o
expect_error 3 "empty.bc: empty file, not LLVM bitcode" kiln-emit empty.bc -o out.o
expect_error 3 "truncated.bc: truncated or corrupt bitcode" kiln-emit truncated.bc -o out.o
expect_error 3 "elf.bc: not LLVM bitcode \\(looks like an ELF file\\)" kiln-emit elf.bc -o out.o
expect_error 3 "arm.bc: target aarch64-unknown-linux-gnu is not x86-64" kiln-emit arm.bc -o out.o
expect_error 3 "good.ll: not LLVM bitcode \\(looks like LLVM IR text" kiln-emit good.ll -o out.o
expect_error 5 "missing.bc: No such file" kiln-emit missing.bc -o out.o
expect_error 2 "unknown back end" kiln-emit good.bc -o out.o --backend nonsense
expect_error 2 "kiln-emit: error: --profile: turbo not in" kiln-emit good.bc -o out.o --profile turbo
# The stamp back end reads with kiln's own reader first, kiln-replay-flat with nothing
# else: the same inputs get the same one line and exit 3 there.
expect_error 3 "arm.bc: target aarch64-unknown-linux-gnu is not x86-64" kiln-emit arm.bc -o out.o --backend stamp
expect_error 3 "truncated.bc: truncated or corrupt bitcode" kiln-emit truncated.bc -o out.o --backend stamp
expect_error 3 "arm.bc: target aarch64-unknown-linux-gnu is not x86-64" kiln-replay-flat --device cpu arm.bc
expect_error 3 "truncated.bc: top level at bit [0-9]+: block 8 of [0-9]+ words runs past the end" \
  kiln-replay-flat --device cpu truncated.bc
expect_error 3 "garbage.bc: not LLVM bitcode" kiln-replay-flat --device cpu garbage.bc
# --check-contract emits the file with both back ends: the same line and status.
expect_error 3 "garbage.bc: not LLVM bitcode" kiln-emit garbage.bc --check-contract
expect_error 3 "truncated.bc: truncated or corrupt bitcode" kiln-emit truncated.bc --check-contract
expect_error 5 "missing.bc: No such file" kiln-emit missing.bc --check-contract
check "no object is left behind by the failures" test ! -e out.o

kiln-emit good.bc -o out.o >/dev/null && cp out.o keep.o
kiln-emit garbage.bc -o out.o 2>/dev/null
check "a failed emit leaves the previous object untouched" cmp out.o keep.o
check "a census of a foreign file says why and exits 3" \
  bash -c "kiln-census garbage.bc > census.txt; [[ \$? -eq 3 ]] && grep -q 'read: not LLVM bitcode' census.txt"
check "a census of a wrong-target module rejects it for llvm with the reason" \
  bash -c "kiln-census arm.bc | grep -q 'target: aarch64-unknown-linux-gnu is not x86-64'"

expect_error 5 "nowhere: No such file or directory" kiln-census nowhere
expect_error 5 "nowhere: no such corpus directory" kiln-replay nowhere
mkdir notacorpus
expect_error 3 "notacorpus: not a kiln corpus" kiln-census notacorpus

kiln-capture add -o C good.bc >/dev/null
cp -r C C.orig
expect_error 3 "garbage.bc: not LLVM bitcode" kiln-capture add -o C good.bc garbage.bc
check "a failed import leaves the corpus as it was" diff -r C C.orig

sed -i 's/"version":1/"version":7/' C/kiln-corpus.json
expect_error 4 "kiln-corpus.json: corpus schema version 7 is newer" kiln-census C
expect_error 4 "kiln-corpus.json: corpus schema version 7 is newer" kiln-replay C
cp C.orig/kiln-corpus.json C/
echo '{"id": "broken' >> C/modules.jsonl
echo '{}' >> C/modules.jsonl
expect_error 3 "modules.jsonl:2: corrupt record" kiln-census C
cp C.orig/modules.jsonl C/
printf '{"id":"0123' >> C/modules.jsonl
check "an interrupted last record is skipped with a warning, the rest is read" \
  bash -c "kiln-census C 2> warn.txt | grep -q '^1 modules' && grep -q 'incomplete last record' warn.txt"
cp C.orig/modules.jsonl C/

# Read-only output directory: run as an unprivileged user where the tests run as root.
mkdir ro && cp good.bc ro/ && chmod 555 ro
as_user=()
emit=$KILN_BIN/kiln-emit
if [[ $(id -u) -eq 0 ]]; then
  # The build tree may sit where that user cannot reach (under /root): use a copy.
  chmod 755 "$T" && chmod 644 good.bc
  cp "$KILN_BIN/kiln-emit" "$T/kiln-emit" && chmod 755 "$T/kiln-emit"
  emit=$T/kiln-emit
  as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
fi
expect_error 5 "ro/out.o: cannot create a temporary file beside it: Permission denied" "${as_user[@]}" "$emit" good.bc -o ro/out.o
check "nothing was written into the read-only directory" bash -c "[[ \$(ls ro) == good.bc ]]"

# A full disk: a small tmpfs where the machine allows mounting one.
mkdir full
if mount -t tmpfs -o size=16k tmpfs full 2>/dev/null; then
  head -c 12000 /dev/urandom > full/filler
  kiln-emit good.bc -o full/out.o >/dev/null 2>&1 || true
  big=$(mktemp "$T/big-XXXX.bc")
  "$LLVM_BINDIR/llvm-as" good.ll -o "$big"
  expect_error 5 "full/.*(no space left on device)" kiln-capture add -o full/C good.bc
  check "no partial file is left on the full disk" bash -c "! ls -a full | grep -q kiln-tmp"
  umount full
else
  echo "skip - disk-full check: this machine does not allow mounting a tmpfs"
fi

# Missing tools.
expect_error 6 "no-such-build-tool: program not found" kiln-capture -o C2 -- no-such-build-tool --flag
expect_error 1 "back end command failed" kiln-emit good.bc -o out2.o --backend "cmd:false {in} {out}"
finish
