#!/usr/bin/env bash
# Files as a hostile user hands them to the tools: devices, symlinks and FIFOs as
# outputs, endless inputs, torn manifests, names that are not UTF-8, unreadable
# manifests, concurrent merges. Nothing on disk may be lost, replaced or corrupted.
source "$(dirname "$0")/lib.sh"

cd "$T"
printf 'target triple = "x86_64-unknown-linux-gnu"\ndefine i32 @g(i32 %%x) {\n  %%y = mul i32 %%x, 3\n  ret i32 %%y\n}\n' > good.ll
"$LLVM_BINDIR/llvm-as" good.ll -o good.bc
printf 'target triple = "x86_64-unknown-linux-gnu"\ndefine i32 @h() {\n  ret i32 7\n}\n' > other.ll
"$LLVM_BINDIR/llvm-as" other.ll -o other.bc

# --- outputs that are devices, symlinks or FIFOs ---
# A private null device (c 1 3), so that a regression cannot replace the machine's
# /dev/null; /dev/stdout, a link to a pipe, is tried for real.
if mknod -m 666 null c 1 3 2>/dev/null; then
  is_null_device() { [[ -c null ]] && [[ $(stat -c %t:%T null) == 1:3 ]]; }
  export -f is_null_device
  kiln-emit good.bc -o null
  check "kiln-emit -o DEVICE leaves the device a character device" is_null_device
  kiln-emit good.bc -o out.o --receipt null
  check "--receipt DEVICE leaves the device a character device" is_null_device
  kiln-emit good.bc -o out.o --backend stamp --export-flat null
  check "--export-flat DEVICE leaves the device a character device" is_null_device
  kiln-capture add -o C good.bc >/dev/null
  kiln-replay C --rounds 1 --report null >/dev/null
  check "kiln-replay --report DEVICE leaves the device a character device" is_null_device
  kiln-measure size --baseline good.bc --candidate good.bc --json null --markdown null >/dev/null
  check "kiln-measure --json/--markdown DEVICE leave the device a character device" is_null_device
  ln -s null null-link
  kiln-emit good.bc -o null-link
  check "a symlink to a device is written through to the device" bash -c "[[ -L null-link ]] && is_null_device"
else
  echo "skip - device outputs: this machine does not allow mknod"
fi
check "-o /dev/stdout into a pipe writes the object into the pipe" \
  bash -c "kiln-emit good.bc -o /dev/stdout | head -c 4 | grep -q ELF"
# /dev/stdout, /dev/fd/N and a link to them, when the shell points them at a regular
# file: written through the descriptor, after what the file holds (appending), not by
# replacing the file (which dropped its earlier lines) nor from its start.
# The receipt then goes to standard error, so that the object stands alone.
kiln-emit good.bc -o ref.o >/dev/null
echo "first line" > appended.txt
kiln-emit good.bc -o /dev/stdout >> appended.txt 2>receipt.txt
check "-o /dev/stdout appended to a file keeps what the file held, then the object alone" \
  bash -c "head -1 appended.txt | grep -qx 'first line' && cmp -s <(tail -c +12 appended.txt) ref.o"
check "... and the receipt goes to standard error" grep -q '"ok":true' receipt.txt
ln -s /dev/stdout to-stdout
kiln-emit good.bc -o to-stdout >> appended.txt 2>/dev/null
check "a link to /dev/stdout appends as well" \
  bash -c "cmp -s <(tail -c +12 appended.txt) <(cat ref.o ref.o)"
{ echo before; kiln-emit good.bc -o /dev/fd/3 3>&1; echo after; } > framed.txt
check "-o /dev/fd/N inside a redirected group keeps the group's other output around it" \
  bash -c "head -1 framed.txt | grep -qx before && tail -c 6 framed.txt | grep -qx after"
# An output file that exists keeps its permissions; a new one gets the umask's.
echo old > private.o && chmod 600 private.o
kiln-emit good.bc -o private.o
check "an existing output keeps its mode (600)" bash -c "[[ \$(stat -c %a private.o) == 600 ]]"
(umask 077 && kiln-emit good.bc -o umask.o)
check "a new output follows the umask (077 gives 600)" bash -c "[[ \$(stat -c %a umask.o) == 600 ]]"

echo old > target.o
ln -s target.o link.o
kiln-emit good.bc -o link.o
check "an -o that is a symlink is written through: the link stays" test -L link.o
check "an -o that is a symlink is written through: its target holds the object" \
  bash -c "head -c 4 target.o | grep -q ELF"

mkfifo out.fifo
(head -c 4 out.fifo > fifo-head.txt) &
reader=$!
kiln-emit good.bc -o out.fifo
wait $reader
check "an -o that is a FIFO is written into, not replaced" bash -c "[[ -p out.fifo ]] && grep -q ELF fifo-head.txt"

# --- a directory of the user's own as the corpus ---
mkdir -p proj/objects && echo mine > proj/notes.txt && echo keep > proj/objects/a.o
expect_error 3 "proj: is not empty and is not a kiln corpus" kiln-capture -o proj -- true
expect_error 3 "proj: is not empty and is not a kiln corpus" kiln-capture add -o proj good.bc
check "a directory of the user's own is left as it was" \
  bash -c "[[ \$(ls -A proj | tr '\n' ' ') == 'notes.txt objects ' && \$(cat proj/objects/a.o) == keep ]]"
mkdir empty-dir && kiln-capture -o empty-dir -- true
check "an empty directory becomes a corpus" test -f empty-dir/kiln-corpus.json
# kiln-emit --out naming the corpus itself: one receipt a module, not two.
kiln-capture add -o RC good.bc other.bc >/dev/null
kiln-emit RC --out RC >/dev/null
check "kiln-emit CORPUS --out CORPUS writes each module's receipt once" \
  bash -c "[[ \$(grep -c kiln-emit RC/receipts.jsonl) -eq 2 ]]"

# --- inputs that never end (under a timeout: a regression would eat all memory) ---
expect_error 3 "/dev/zero: is a character device, not a regular file" timeout 10 kiln-emit /dev/zero -o z.o
check "no object is written for a device input" test ! -e z.o
expect_error 3 "/dev/zero: is a character device, not a regular file" \
  timeout 10 kiln-measure size --baseline /dev/zero --candidate good.bc
kiln-emit good.bc -o direct.o
check "a bitcode file through a pipe is read whole" bash -c "kiln-emit <(cat good.bc) -o piped.o && cmp piped.o direct.o"

# --- a torn last record, then more captures ---
kiln-capture add -o T good.bc >/dev/null
printf '{"id":"0123' >> T/modules.jsonl
kiln-capture add -o T other.bc >/dev/null 2>warn.txt
check "an append after a torn record warns and moves the fragment aside" \
  bash -c "grep -q 'unfinished last record' warn.txt && grep -q '0123' T/modules.jsonl.torn"
check "after a torn record both modules read back" bash -c "kiln-census T | grep -q '^2 modules'"
check "merge and filter work on the repaired corpus" \
  bash -c "kiln-capture merge -o TM T >/dev/null && kiln-capture filter -o TF T --crate other.bc >/dev/null && [[ \$(wc -l < TF/modules.jsonl) -eq 1 ]]"

# --- names that are not UTF-8 ---
cp good.bc $'bad\xff.bc'
kiln-capture add -o U $'bad\xff.bc' >/dev/null
check "a corpus with a non-UTF-8 file name can be read by census" bash -c "kiln-census U | grep -q '^1 modules'"
check "and merged" bash -c "kiln-capture merge -o UM U >/dev/null"
check "the name comes back byte for byte (filter by it finds the module)" bash -c "kiln-capture filter -o UF U --crate \$'bad\\xff.bc' >/dev/null && [[ \$(wc -l < UF/modules.jsonl) -eq 1 ]]"

cp -r "$KILN_SOURCE/examples/c-program" $'cp\xffdir'
make -s -C $'cp\xffdir' clean
check "a C build in a directory whose name is not UTF-8 is captured" \
  bash -c "cd \$'cp\\xffdir' && kiln-capture -o ../W --backend llvm -- make -s >/dev/null && ./kiln-c-example >/dev/null"
check "and its corpus reads back with the directory's bytes" \
  bash -c "kiln-census W | grep -q '^3 modules' && kiln-capture filter -o WF W --crate main.c >/dev/null && grep -q . WF/modules.jsonl"

# --- an unreadable manifest is an error, never an empty corpus ---
kiln-capture add -o L good.bc other.bc >/dev/null
kiln-census L >/dev/null
cp L/census.jsonl census.before
rm L/modules.jsonl && ln -s modules.jsonl L/modules.jsonl
expect_error 5 "modules.jsonl: Too many levels of symbolic links" kiln-census L
check "the census of an unreadable corpus is left as it was" cmp L/census.jsonl census.before
expect_error 5 "modules.jsonl: Too many levels of symbolic links" kiln-emit L --out lobjs
expect_error 5 "modules.jsonl: Too many levels of symbolic links" kiln-capture merge -o LM L
check "no merged corpus appears from an unreadable one" test ! -e LM

# --- negative sizes and huge versions ---
kiln-capture add -o N good.bc >/dev/null
sed -i 's/"bytes":[0-9]*/"bytes":-5/' N/modules.jsonl
expect_error 3 "modules.jsonl:1: module size 'bytes' is negative" kiln-capture merge -o NM N
check "a refused merge leaves nothing behind" bash -c "! ls -d NM* 2>/dev/null"
kiln-capture add -o V good.bc >/dev/null
sed -i 's/"version":1/"version":1180591620717411303424/' V/kiln-corpus.json
expect_error 4 "kiln-corpus.json: corpus schema version .* is newer" kiln-census V

# --- filter options that select nothing by mistake ---
printf '0123456789abcdef0123456789abcdef\nnot-an-id\n' > ids.txt
expect_error 3 "ids.txt:2: not a module id \\(32 hex digits\\): not-an-id" kiln-capture filter -o F1 T --ids ids.txt
expect_error 2 "--reason-backend: foo is not a back end the census judges" kiln-capture filter -o F2 T --reason x --reason-backend foo
check "refused filters create nothing" bash -c "! ls -d F1* F2* 2>/dev/null"

# --- concurrent merges into one place ---
for i in 1 2 3 4 5 6; do kiln-capture add -o S$i good.bc other.bc >/dev/null; done
pids=()
for i in 1 2 3 4 5 6; do (kiln-capture merge -o SAME S1 S2 S$i >/dev/null 2>merge$i.err; echo $? > merge$i.rc) & pids+=($!); done
wait "${pids[@]}"
check "concurrent merges into one directory: one wins, the others are refused with exit 5" \
  bash -c "[[ \$(cat merge*.rc | grep -c '^0\$') -ge 1 ]] && ! cat merge*.rc | grep -qv '^[05]\$'"
check "the merged corpus holds one merge's modules, not a mix" bash -c "[[ \$(wc -l < SAME/modules.jsonl) -eq 6 ]]"
check "no temporary file or directory is left behind" bash -c "! ls -a . SAME | grep -q 'kiln-tmp\|kiln-partial'"
finish
