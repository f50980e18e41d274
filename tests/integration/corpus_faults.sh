#!/usr/bin/env bash
# Many captures into one corpus at once, some killed with SIGKILL at random moments,
# then a full disk: the corpus must read back whole and consistent (every record's
# blob present and matching its id) and the next capture must work.
source "$(dirname "$0")/lib.sh"

cd "$T"
RANDOM=8  # the same "random" kill moments on every run
# 16 copies of the example C program, each made different so that every build adds
# modules of its own.
for i in $(seq 1 16); do
  cp -r "$KILN_SOURCE/examples/c-program" "p$i"
  printf 'int kiln_variant_%d(void) { return %d; }\n' "$i" "$i" >> "p$i/stats.c"
  make -s -C "p$i" clean
done

pids=()
for i in $(seq 1 16); do
  kiln-capture -o C --backend llvm -- make -s -C "p$i" >"cap$i.out" 2>&1 &
  pids+=($!)
done
# Kill four of them at staggered moments (0-0.9 s in), the rest finish.
killed=()
for k in 1 2 3 4; do
  victim=${pids[$((RANDOM % 16))]}
  sleep "0.$((RANDOM % 10))"
  kill -9 "$victim" 2>/dev/null && killed+=("$victim")
done
for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
# A killed kiln-capture leaves its make (and compiles) running in the background:
# wait until no build of ours is left before reading the corpus.
for _ in $(seq 1 100); do pgrep -f "make -s -C p" >/dev/null || break; sleep 0.2; done
echo "# killed ${#killed[@]} of 16 captures"

consistent() {  # every record complete, every module's blob present and hashing to its id (read only)
  local dir=$1 n=0 id
  jq -e . "$dir/modules.jsonl" >/dev/null || return 1
  for id in $(jq -r .id "$dir/modules.jsonl" | sort -u); do
    kiln-census "$dir" --explain "$id" >/dev/null || return 1
    n=$((n + 1))
  done
  [[ $n -gt 0 ]]
}
export -f consistent
check "after concurrent captures and kill -9 the corpus reads back whole and consistent" consistent C
check "every invocation line is a complete JSON record" bash -c "jq -e . C/invocations.jsonl >/dev/null"

# A full disk under the corpus: captures fail cleanly, the corpus stays readable.
mkdir full
if mount -t tmpfs -o size=256k tmpfs full 2>/dev/null; then
  for i in 1 2 3; do "$LLVM_BINDIR/clang" -c -emit-llvm -O0 "p$i/stats.c" -o "big$i.bc"; done
  kiln-capture add -o full/D big1.bc >/dev/null
  # Leave less room than the next blobs need.
  avail=$(df --output=avail -B1 full | tail -1)
  head -c $((avail - 1024)) /dev/zero > full/filler 2>/dev/null
  kiln-capture add -o full/D big2.bc big3.bc >/dev/null 2>full.err; rc=$?
  check "a capture onto a full disk fails with exit 5 and says so" \
    bash -c "[[ $rc -eq 5 ]] && grep -q 'no space left on device' full.err"
  check "the corpus on the full disk reads back consistent" consistent full/D
  rm full/filler
  check "the next capture works once there is space" kiln-capture add -o full/D big2.bc big3.bc
  check "and the corpus is consistent after it" bash -c "consistent full/D && [[ \$(jq -r .id full/D/modules.jsonl | sort -u | wc -l) -eq 3 ]]"
  umount full
else
  echo "skip - full-disk check: this machine does not allow mounting a tmpfs"
fi

make -s -C p1 clean
check "the next capture into the concurrent corpus works" kiln-capture -o C --backend llvm -- make -s -C p1
check "and the corpus is still consistent" consistent C
# A killed capture may leave a temporary file it was writing (kill -9 gives it no
# chance); the next capture removes those whose writer is gone. A planted one of a
# process that cannot exist goes too; one of a live process stays.
touch C/.kiln-tmp-999999999-planted C/blobs/.kiln-tmp-999999999-planted "C/.kiln-tmp-$$-live"
make -s -C p2 clean
kiln-capture -o C --backend llvm -- make -s -C p2 >/dev/null 2>&1
check "after the next capture no temporary file of a killed writer is left ($(find C -name '.kiln-tmp-*' | wc -l) left: the live one)" \
  bash -c "[[ \$(find C -name '.kiln-tmp-*' | grep -v -- '-$$-live' | wc -l) -eq 0 ]] && [[ -e 'C/.kiln-tmp-$$-live' ]]"
rm -f "C/.kiln-tmp-$$-live"
finish
