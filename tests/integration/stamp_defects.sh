#!/usr/bin/env bash
# Real C and C++ programs through kiln-emit's stamp back end for the defects of
# issue 8: x32 is refused, long double constants fall back per function, C++
# constructor aliases and extern_weak declarations link and run as with llvm.
source "$(dirname "$0")/lib.sh"

cd "$T"
CC="$LLVM_BINDIR/clang"
printf 'long f(long x) { return x + 1; }\n' > x32.c
"$CC" -mx32 -O1 -c -emit-llvm x32.c -o x32.bc
for backend in llvm stamp; do
  expect_error 3 "x32.bc: target x86_64-pc-linux-gnux32 is x32 \\(32-bit pointers\\)" \
    kiln-emit --backend "$backend" x32.bc -o x32.o
done
check "no object is written for x32" test ! -e x32.o
check "the census names x32 as the target problem" \
  bash -c "kiln-census x32.bc | grep -q 'target: x86_64-pc-linux-gnux32 is x32'"

cat > ld.c <<'C'
#include <stdio.h>
__attribute__((weak)) extern int maybe(void);
extern int maybe_var __attribute__((weak));
long double half(long double x) { return x * 0.5L; }
long twice(long x) { return 2 * x; }
int probe(void) { return (maybe ? maybe() : -1) * 10 + (&maybe_var ? maybe_var : -2); }
int main(void) { printf("%Lf %ld %d\n", half(3.0L), twice(21), probe()); return 0; }
C
cat > ctor.cpp <<'C'
#include <cstdio>
struct S { long v; S(long x); ~S(); };
S::S(long x) : v(x * 3) {}
S::~S() { std::printf("dtor %ld\n", v); }
long use(long x) { S s(x); return s.v + 1; }
int main() { std::printf("%ld\n", use(14)); }
C
for opt in O0 O2; do
  "$CC" -$opt -c -emit-llvm ld.c -o ld.bc
  "$CC" -$opt -c -emit-llvm ctor.cpp -o ctor.bc
  check "-$opt: the census names the long double constant" \
    bash -c "kiln-census ld.bc | grep -q 'floating-point constant wider than 64 bits'"
  for prog in ld ctor; do
    for backend in llvm stamp; do
      kiln-emit --backend "$backend" "$prog.bc" -o "$prog.$backend.o" >/dev/null || fail "-$opt: emit $prog with $backend"
      "$CC" -o "$prog.$backend" "$prog.$backend.o" -lstdc++ || fail "-$opt: link $prog from $backend"
      ./"$prog.$backend" > "$prog.$backend.out" || fail "-$opt: run $prog from $backend"
    done
    check "-$opt: $prog runs the same from stamp as from llvm" cmp "$prog.llvm.out" "$prog.stamp.out"
  done
  check "-$opt: stamp's object has maybe as a weak undefined symbol" \
    bash -c "'$LLVM_BINDIR/llvm-nm' ld.stamp.o | grep -qx ' *w maybe'"
done
finish
