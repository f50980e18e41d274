// The direct reader and exporter (lib/stamp/direct_export.h) against LLVM's parser and
// lib/flat_export.cpp (lib/reader_check.h, the oracle kiln-emit --check-reader runs):
// byte-identical flat files, verdicts and global data, one test per record family on
// hand-written IR, and on three real regex modules.
//   [.corpus] KILN_BITCODE_CORPUS=DIR: every *.bc under DIR compared the same way.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "bitcode.h"
#include "direct_export.h"
#include "error.h"
#include "flat_export.h"
#include "flat_module.h"
#include "fs.h"
#include "ir_helpers.h"
#include "reader_check.h"

using namespace kiln;

namespace {

void expect_identical(const std::string& ir, const std::string& what) {
  std::string bitcode = kiln_test::bitcode_from_ir(ir);
  ReaderComparison r = compare_reader(bitcode, what);
  INFO(what << ": " << outcome_name(r.outcome) << ": " << r.detail);
  CHECK(r.outcome == ReaderComparison::kIdentical);
}

const char* kHeader = "target triple = \"x86_64-unknown-linux-gnu\"\n";

}  // namespace

TEST_CASE("direct reader: arithmetic, compares, casts and control flow as LLVM's exporter", "[direct-export]") {
  expect_identical(std::string(kHeader) + R"(
define i64 @f(i64 %a, i32 %b, i1 %c) {
entry:
  %x = add nsw i64 %a, 7
  %y = mul i64 %x, %a
  %z = sdiv i64 %y, -3
  %w = zext i32 %b to i64
  %v = sext i32 %b to i64
  %t = trunc i64 %a to i16
  %u = sext i16 %t to i64
  %s = select i1 %c, i64 %w, i64 %v
  %k = icmp ult i64 %s, %z
  br i1 %k, label %one, label %two
one:
  %p = phi i64 [ %x, %entry ], [ %q, %two ]
  switch i64 %p, label %done [ i64 1, label %two
                               i64 -5, label %done ]
two:
  %q = xor i64 %u, -1
  %r = icmp eq i64 %q, 0
  br i1 %r, label %one, label %done
done:
  %res = phi i64 [ %p, %one ], [ %p, %one ], [ %q, %two ]
  ret i64 %res
}
define void @g() {
  unreachable
}
define i8 @h(i8 %a) {
  %f = freeze i8 %a
  %s = shl i8 %f, 1
  %l = lshr i8 %s, 2
  %r = ashr i8 %l, 1
  %o = or i8 %r, %a
  %n = and i8 %o, 15
  %m = urem i8 %n, 3
  %k = srem i8 %m, 2
  %d = udiv i8 %k, 1
  %e = sub i8 %d, %a
  ret i8 %e
}
)",
                   "arithmetic");
}

TEST_CASE("direct reader: memory, getelementptr and atomics as LLVM's exporter", "[direct-export]") {
  expect_identical(std::string(kHeader) + R"(
%pair = type { i32, i64 }
%"odd::name<'_>" = type { [3 x %pair], i8 }
define i64 @f(ptr %p, i64 %i) {
entry:
  %a = alloca %pair, align 8
  %b = alloca [16 x i8], align 16
  %c = alloca i32, i32 4, align 4
  %g = getelementptr inbounds %pair, ptr %a, i64 0, i32 1
  store i64 %i, ptr %g, align 8
  %h = getelementptr %"odd::name<'_>", ptr %p, i64 %i, i32 0, i64 2, i32 1
  %l = load i64, ptr %h, align 8
  %v = getelementptr i32, ptr %p, i64 %i
  %w = getelementptr i8, ptr %v, i64 -9
  %x = load atomic i64, ptr %w seq_cst, align 8
  store atomic i32 1, ptr %c seq_cst, align 4
  store atomic i32 2, ptr %c syncscope("singlethread") seq_cst, align 4
  %o = atomicrmw add ptr %c, i32 5 acq_rel, align 4
  %n = atomicrmw xchg ptr %p, i64 %i monotonic, align 8
  %m = atomicrmw umax ptr %p, i64 %i monotonic, align 8
  %q = cmpxchg ptr %p, i64 %l, i64 %x seq_cst seq_cst, align 8
  %r = extractvalue { i64, i1 } %q, 0
  %s = load i16, ptr %p, align 1
  %t = load atomic i16, ptr %p monotonic, align 1
  fence seq_cst
  fence acquire
  fence syncscope("singlethread") seq_cst
  %agg = load %pair, ptr %a, align 8
  store %pair %agg, ptr %p, align 8
  %e = extractvalue %pair %agg, 1
  %sum = add i64 %e, %r
  ret i64 %sum
}
define void @dyn(i64 %n) {
  %a = alloca i8, i64 %n, align 8
  %b = alloca i8, align 8192
  ret void
}
)",
                   "memory");
}

TEST_CASE("direct reader: calls, intrinsics and exceptions as LLVM's exporter", "[direct-export]") {
  expect_identical(std::string(kHeader) + R"(
%big = type { i64, i64, i64 }
declare i32 @callee(i8 signext, i32 zeroext)
declare void @sret(ptr sret(%big), i64)
declare void @byval(ptr byval(%big))
declare i64 @variadic(i64, ...)
declare { i64, ptr } @pair(i64)
declare fastcc void @fast()
declare double @fp(double)
declare i32 @__gxx_personality_v0(...)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
declare { i32, i1 } @llvm.sadd.with.overflow.i32(i32, i32)
declare i64 @llvm.ctpop.i64(i64)
declare i8 @llvm.bswap.i8(i8)
declare i64 @llvm.expect.i64(i64, i64)
declare void @llvm.trap()
declare i1 @llvm.is.constant.i64(i64)
declare float @llvm.sqrt.f32(float)
declare void @llvm.lifetime.start.p0(ptr)
define { i64, ptr } @f(ptr %p, i8 %a, i32 %b) personality ptr @__gxx_personality_v0 {
entry:
  %c = call i32 @callee(i8 signext %a, i32 zeroext %b)
  %s = alloca %big, align 8
  call void @llvm.lifetime.start.p0(ptr %s)
  call void @sret(ptr sret(%big) %s, i64 1)
  call void @byval(ptr byval(%big) %s)
  %v = call i64 (i64, ...) @variadic(i64 1, i32 2, ptr %p)
  call fastcc void @fast()
  %d = call double @fp(double 1.5)
  call void @llvm.memcpy.p0.p0.i64(ptr %p, ptr %s, i64 24, i1 false)
  call void @llvm.memset.p0.i64(ptr %p, i8 0, i64 24, i1 false)
  %o = call { i32, i1 } @llvm.sadd.with.overflow.i32(i32 %b, i32 1)
  %n = call i64 @llvm.ctpop.i64(i64 %v)
  %w = call i8 @llvm.bswap.i8(i8 %a)
  %e = call i64 @llvm.expect.i64(i64 %n, i64 0)
  %k = call i1 @llvm.is.constant.i64(i64 %e)
  %q = call float @llvm.sqrt.f32(float 2.0)
  call void asm sideeffect "", ""()
  %r = invoke { i64, ptr } @pair(i64 %e) to label %ok unwind label %bad
ok:
  ret { i64, ptr } %r
bad:
  %lp = landingpad { ptr, i32 } cleanup
  resume { ptr, i32 } %lp
}
define void @catcher() personality ptr @__gxx_personality_v0 {
entry:
  invoke void @fast() to label %ok unwind label %bad
ok:
  ret void
bad:
  %lp = landingpad { ptr, i32 } catch ptr null
  call void @llvm.trap()
  unreachable
}
define i32 @tail(i32 %x) {
  %r = musttail call i32 @tail(i32 %x)
  ret i32 %r
}
)",
                   "calls");
}

TEST_CASE("direct reader: funnel shifts, saturation, empty inline asm and aggregate selects as LLVM's exporter", "[direct-export]") {
  // What stamp takes: the whole module.
  std::string taken = std::string(kHeader) + R"(
declare i8 @llvm.fshl.i8(i8, i8, i8)
declare i24 @llvm.fshr.i24(i24, i24, i24)
declare i64 @llvm.fshl.i64(i64, i64, i64)
declare i64 @llvm.fshr.i64(i64, i64, i64)
declare i40 @llvm.sadd.sat.i40(i40, i40)
declare i16 @llvm.ssub.sat.i16(i16, i16)
declare i56 @llvm.uadd.sat.i56(i56, i56)
declare i24 @llvm.usub.sat.i24(i24, i24)
declare i48 @llvm.ctpop.i48(i48)
declare i24 @llvm.umin.i24(i24, i24)
define i64 @pair_select(i1 %c, i64 %a, ptr %p) {
  %x = insertvalue { ptr, i64 } poison, ptr %p, 0
  %y = insertvalue { ptr, i64 } %x, i64 %a, 1
  %r = select i1 %c, { ptr, i64 } %y, { ptr, i64 } { ptr null, i64 3 }
  %s = select i1 %c, [2 x i32] [i32 1, i32 2], [2 x i32] zeroinitializer
  %v = extractvalue { ptr, i64 } %r, 1
  ret i64 %v
}
define i64 @f(i64 %a, i8 %b, i24 %c, i40 %d, i16 %e) {
  %x = alloca i64, align 8
  store i64 %a, ptr %x
  call void asm sideeffect "", "r,~{memory}"(ptr %x)
  call void asm "", ""()
  call void asm sideeffect "", "*m,~{dirflag},~{fpsr},~{flags}"(ptr elementtype(i64) %x)
  %f1 = call i8 @llvm.fshl.i8(i8 %b, i8 %b, i8 3)
  %f2 = call i24 @llvm.fshr.i24(i24 %c, i24 7, i24 %c)
  %f3 = call i64 @llvm.fshl.i64(i64 %a, i64 %a, i64 %a)
  %f4 = call i64 @llvm.fshr.i64(i64 1, i64 %a, i64 65)
  %s1 = call i40 @llvm.sadd.sat.i40(i40 %d, i40 -1)
  %s2 = call i16 @llvm.ssub.sat.i16(i16 %e, i16 %e)
  %c56 = zext i24 %c to i56
  %s3 = call i56 @llvm.uadd.sat.i56(i56 %c56, i56 1)
  %s4 = call i24 @llvm.usub.sat.i24(i24 %c, i24 5)
  %c48 = zext i24 %c to i48
  %p = call i48 @llvm.ctpop.i48(i48 %c48)
  %m = call i24 @llvm.umin.i24(i24 %c, i24 %s4)
  %r = load i64, ptr %x
  ret i64 %r
}
)";
  std::string bitcode = kiln_test::bitcode_from_ir(taken);
  ReaderComparison r = compare_reader(bitcode, "taken");
  INFO(outcome_name(r.outcome) << ": " << r.detail);
  CHECK(r.outcome == ReaderComparison::kIdentical);
  CHECK(r.whole);
  // What keeps falling back, for the same reasons by both routes.
  expect_identical(std::string(kHeader) + R"(
declare i1 @llvm.fshl.i1(i1, i1, i1)
declare i128 @llvm.fshr.i128(i128, i128, i128)
declare <2 x i32> @llvm.fshl.v2i32(<2 x i32>, <2 x i32>, <2 x i32>)
declare i24 @llvm.bswap.i24(i24)
declare i12 @llvm.sadd.sat.i12(i12, i12)
define i1 @narrow(i1 %a) {
  %r = call i1 @llvm.fshl.i1(i1 %a, i1 %a, i1 %a)
  ret i1 %r
}
define i128 @wide(i128 %a) {
  %r = call i128 @llvm.fshr.i128(i128 %a, i128 %a, i128 3)
  ret i128 %r
}
define <2 x i32> @vector(<2 x i32> %a) {
  %r = call <2 x i32> @llvm.fshl.v2i32(<2 x i32> %a, <2 x i32> %a, <2 x i32> %a)
  ret <2 x i32> %r
}
define i24 @swap(i24 %a) {
  %r = call i24 @llvm.bswap.i24(i24 %a)
  ret i24 %r
}
define i12 @odd(i12 %a) {
  %r = call i12 @llvm.sadd.sat.i12(i12 %a, i12 %a)
  ret i12 %r
}
define <2 x i64> @vector_select(i1 %c, <2 x i64> %a) {
  %r = select i1 %c, <2 x i64> %a, <2 x i64> zeroinitializer
  ret <2 x i64> %r
}
define i64 @output(i64 %a) {
  %r = call i64 asm "", "=r,0"(i64 %a)
  ret i64 %r
}
define void @indirect_output(ptr %p) {
  call void asm "", "=*m"(ptr elementtype(i64) %p)
  ret void
}
define void @text(ptr %p) {
  call void asm sideeffect "nop", "r"(ptr %p)
  ret void
}
)",
                   "refused");
}

TEST_CASE("direct reader: aggregate constants materialized as LLVM's exporter does", "[direct-export]") {
  expect_identical(std::string(kHeader) + R"(
%pair = type { i32, i64 }
define %pair @f(i1 %c, ptr %p) {
entry:
  store %pair { i32 1, i64 2 }, ptr %p, align 8
  store [3 x i16] [i16 1, i16 2, i16 3], ptr %p, align 2
  store <4 x i32> <i32 1, i32 2, i32 3, i32 4>, ptr %p, align 16
  store %pair zeroinitializer, ptr %p, align 8
  br i1 %c, label %a, label %b
a:
  br label %join
b:
  br label %join
join:
  %v = phi %pair [ { i32 1, i64 2 }, %a ], [ { i32 3, i64 4 }, %b ]
  %w = insertvalue %pair %v, i32 7, 0
  %x = insertvalue %pair { i32 9, i64 9 }, i64 8, 1
  store %pair %x, ptr %p, align 8
  ret %pair %w
}
define void @g(ptr %p) {
  store %pair { i32 1, i64 2 }, ptr %p, align 8
  store %pair { i32 5, i64 6 }, ptr %p, align 8
  ret void
}
)",
                   "aggregate constants");
}

TEST_CASE("direct reader: global data, symbols and renaming as LLVM's exporter", "[direct-export]") {
  expect_identical(std::string(kHeader) + R"(
@str = private unnamed_addr constant [6 x i8] c"hello\00", align 1
@table = internal constant [2 x ptr] [ptr @str, ptr getelementptr (i8, ptr @str, i64 2)], align 8
@counter = global i64 0, align 8
@ratio = global double 2.5
@words = constant [3 x i32] [i32 1, i32 -2, i32 3]
@wide = global i128 340282366920938463463374607431768211455
@nested = constant { i8, { i16, ptr }, [2 x i32] } { i8 1, { i16, ptr } { i16 2, ptr @counter }, [2 x i32] [i32 3, i32 4] }
@addr = global i64 ptrtoint (ptr @counter to i64)
@sect = global i32 5, section ".mydata"
@weak = weak global i32 1
@hidden = hidden global i32 2
@0 = internal global i32 3
@ext = external global i32
@extweak = extern_weak global i32
@exthidden = external hidden global i32
@llvm.used = appending global [1 x ptr] [ptr @counter], section "llvm.metadata"
declare hidden void @hidden_fn()
define internal i64 @local(i64 %a) {
  %p = getelementptr i8, ptr @table, i64 8
  %v = load ptr, ptr %p, align 8
  %x = load i64, ptr @counter, align 8
  %y = load i32, ptr @0, align 4
  %z = load i32, ptr @extweak, align 4
  %w = load i32, ptr @exthidden, align 4
  call void @hidden_fn()
  %s = add i64 %x, %a
  ret i64 %s
}
define i64 @public(i64 %a) {
  %r = call i64 @local(i64 %a)
  %q = ptrtoint ptr @ext to i64
  %s = add i64 %r, %q
  ret i64 %s
}
define weak_odr hidden i64 @weakfn() section ".text.special" {
  ret i64 ptrtoint (ptr getelementptr inbounds ([3 x i32], ptr @words, i64 0, i64 2) to i64)
}
)",
                   "globals");
}

TEST_CASE("direct reader: what stamp refuses, with LLVM's reasons", "[direct-export]") {
  expect_identical(std::string(kHeader) + R"(
@tls = thread_local global i64 0
$grp = comdat any
@alias = alias i64 (i64), ptr @target
define i64 @target(i64 %a) {
  ret i64 %a
}
define double @fp(double %a, float %b) {
  %e = fpext float %b to double
  %s = fadd double %a, %e
  %c = fcmp olt double %s, 0.0
  %r = select i1 %c, double %s, double 1.0
  ret double %r
}
define <4 x i32> @vec(<4 x i32> %a, ptr %p) {
  %s = add <4 x i32> %a, <i32 1, i32 1, i32 1, i32 1>
  %l = load <4 x i32>, ptr %p, align 16
  store <4 x i32> %s, ptr %p, align 16
  %e = extractelement <4 x i32> %l, i32 0
  ret <4 x i32> %s
}
define i128 @wide(i128 %a) {
  %s = add i128 %a, 18446744073709551616
  ret i128 %s
}
define fastcc i64 @fast(i64 %a) {
  ret i64 %a
}
define i64 @tlsuse() {
  %v = load i64, ptr @tls, align 8
  ret i64 %v
}
define i64 @grouped() comdat($grp) {
  ret i64 1
}
define i64 @variadic(i64 %a, ...) {
  ret i64 %a
}
define void @naked() naked {
  unreachable
}
define i64 @asm(i64 %a) {
  %r = call i64 asm "mov $1, $0", "=r,r"(i64 %a)
  ret i64 %r
}
define i24 @odd(i24 %a) {
  %s = add i24 %a, 1
  ret i24 %s
}
)",
                   "refusals");
}

// Debug information (flat_debug.h): a module with a metadata index (its retained
// types make it big enough) and DWARF 5, and a small one without an index, the
// version flag or full emission, whose first compile unit is NoDebug.
const char* kDebugIr = R"(
%pair = type { i32, i64 }
define i64 @f(i64 %a, i64 %b, ptr %p) !dbg !10 {
entry:
  %x = add i64 %a, 1, !dbg !20
  %y = mul i64 %x, 3, !dbg !21
  %z = add i64 %y, %b
  %w = sub i64 %z, 1, !dbg !22
  %v = add i64 %w, 2, !dbg !23
  store %pair { i32 1, i64 2 }, ptr %p, align 8, !dbg !24
  ret i64 %v, !dbg !24
}
define i64 @g(i64 %a) {
  %s = add i64 %a, 7
  ret i64 %s
}
define <2 x double> @h(<2 x double> %a) !dbg !30 {
  %s = fadd <2 x double> %a, %a, !dbg !31
  ret <2 x double> %s, !dbg !31
}
define i64 @k(i64 %a) !dbg !40 {
  %s = add i64 %a, 5, !dbg !41
  ret i64 %s, !dbg !42
}
!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!1, !2}
!0 = distinct !DICompileUnit(language: DW_LANG_C99, file: !3, producer: "kiln test", isOptimized: false, runtimeVersion: 0, emissionKind: FullDebug, retainedTypes: !50)
!1 = !{i32 7, !"Dwarf Version", i32 5}
!2 = !{i32 2, !"Debug Info Version", i32 3}
!3 = !DIFile(filename: "a.c", directory: "/src")
!4 = !DIFile(filename: "b.h", directory: "/src/include")
!5 = !DIFile(filename: "c.h", directory: "/src")
!6 = !DIFile(filename: "d.c", directory: "/elsewhere")
!7 = !DISubroutineType(types: !8)
!8 = !{null}
!10 = distinct !DISubprogram(name: "f", linkageName: "f_linkage", scope: !3, file: !3, line: 10, type: !7, scopeLine: 11, spFlags: DISPFlagDefinition | DISPFlagMainSubprogram, unit: !0)
!11 = distinct !DILexicalBlock(scope: !10, file: !3, line: 12, column: 3)
!12 = !DILexicalBlockFile(scope: !11, file: !4, discriminator: 0)
!13 = distinct !DISubprogram(name: "inl", scope: !5, file: !5, line: 1, type: !7, scopeLine: 1, spFlags: DISPFlagDefinition | DISPFlagLocalToUnit, unit: !0)
!20 = !DILocation(line: 12, column: 5, scope: !11)
!21 = !DILocation(line: 3, column: 9, scope: !12)
!22 = !DILocation(line: 0, scope: !10)
!23 = !DILocation(line: 2, column: 4, scope: !13, inlinedAt: !25)
!24 = !DILocation(line: 14, column: 1, scope: !10)
!25 = !DILocation(line: 13, column: 7, scope: !10)
!30 = distinct !DISubprogram(name: "h", scope: !6, file: !6, line: 1, type: !7, scopeLine: 1, spFlags: DISPFlagDefinition, unit: !0)
!31 = !DILocation(line: 2, column: 3, scope: !30)
!40 = distinct !DISubprogram(name: "k", scope: !3, file: !3, line: 30, type: !7, scopeLine: 30, spFlags: DISPFlagDefinition | DISPFlagLocalToUnit, unit: !0)
!41 = !DILocation(line: 3, column: 1, scope: !13, inlinedAt: !42)
!42 = !DILocation(line: 31, column: 2, scope: !40)
!50 = !{!51, !52, !53, !54, !55, !56, !57, !58, !59, !60, !61, !62, !63, !64, !65, !66, !67, !68, !69, !70}
!51 = !DIBasicType(name: "t1", size: 8, encoding: DW_ATE_unsigned)
!52 = !DIBasicType(name: "t2", size: 16, encoding: DW_ATE_unsigned)
!53 = !DIBasicType(name: "t3", size: 32, encoding: DW_ATE_unsigned)
!54 = !DIBasicType(name: "t4", size: 64, encoding: DW_ATE_unsigned)
!55 = !DIBasicType(name: "t5", size: 8, encoding: DW_ATE_signed)
!56 = !DIBasicType(name: "t6", size: 16, encoding: DW_ATE_signed)
!57 = !DIBasicType(name: "t7", size: 32, encoding: DW_ATE_signed)
!58 = !DIBasicType(name: "t8", size: 64, encoding: DW_ATE_signed)
!59 = !DIBasicType(name: "t9", size: 32, encoding: DW_ATE_float)
!60 = !DIBasicType(name: "t10", size: 64, encoding: DW_ATE_float)
!61 = !DIBasicType(name: "t11", size: 8, encoding: DW_ATE_boolean)
!62 = !DIBasicType(name: "t12", size: 32, encoding: DW_ATE_UTF)
!63 = !DIBasicType(name: "t13", size: 8, encoding: DW_ATE_unsigned_char)
!64 = !DIBasicType(name: "t14", size: 8, encoding: DW_ATE_signed_char)
!65 = !DIBasicType(name: "t15", size: 128, encoding: DW_ATE_unsigned)
!66 = !DIBasicType(name: "t16", size: 128, encoding: DW_ATE_signed)
!67 = !DIBasicType(name: "t17", size: 16, encoding: DW_ATE_float)
!68 = !DIBasicType(name: "t18", size: 128, encoding: DW_ATE_float)
!69 = !DIBasicType(name: "t19", size: 16, encoding: DW_ATE_UTF)
!70 = !DIBasicType(name: "t20", size: 64, encoding: DW_ATE_address)
)";

const char* kLineTablesIr = R"(
define i64 @f(i64 %a) !dbg !10 {
  %s = add i64 %a, 1, !dbg !11
  ret i64 %s, !dbg !12
}
!llvm.dbg.cu = !{!9, !0}
!llvm.module.flags = !{!2}
!9 = distinct !DICompileUnit(language: DW_LANG_C, file: !4, producer: "unused", isOptimized: false, runtimeVersion: 0, emissionKind: NoDebug)
!0 = distinct !DICompileUnit(language: DW_LANG_Rust, file: !3, producer: "kiln test", isOptimized: true, runtimeVersion: 0, emissionKind: LineTablesOnly)
!2 = !{i32 2, !"Debug Info Version", i32 3}
!3 = !DIFile(filename: "lib.rs", directory: "/crate")
!4 = !DIFile(filename: "other.c", directory: "/other")
!7 = !DISubroutineType(types: !8)
!8 = !{}
!10 = distinct !DISubprogram(name: "f", scope: !3, file: !3, line: 4, type: !7, scopeLine: 5, spFlags: DISPFlagDefinition, unit: !0)
!11 = !DILocation(line: 5, column: 13, scope: !10)
!12 = !DILocation(line: 6, column: 1, scope: !10)
)";

// Scopes and inlined calls: @m is declared in namespace outer::inner, the inlined
// `add` in a structure (DICompositeType) in that namespace; %x is inlined one level,
// %y two (`step` inlined into `add`'s lexical block, itself inlined into @m), %z at a
// distinct inlinedAt equal to %x's (one site), %w from @callee, a function of the
// module. %v is `step` inlined straight at %x's inlinedAt node: a site of its own
// (same call, another callee).
// The retained types make a metadata index: `outer` is read through it, the rest from
// @m's own metadata block.
const char* kInlineIr = R"(
define i64 @callee(i64 %a) !dbg !10 {
  %s = add i64 %a, 1, !dbg !11
  ret i64 %s, !dbg !11
}
define i64 @m(i64 %a) !dbg !20 {
  %x = add i64 %a, 1, !dbg !30
  %y = mul i64 %x, 3, !dbg !32
  %z = add i64 %y, 3, !dbg !34
  %w = add i64 %z, 4, !dbg !35
  %v = add i64 %w, 5, !dbg !39
  ret i64 %v, !dbg !37
}
!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!1}
!0 = distinct !DICompileUnit(language: DW_LANG_Rust, file: !3, producer: "kiln test", isOptimized: true, runtimeVersion: 0, emissionKind: FullDebug, retainedTypes: !60)
!1 = !{i32 2, !"Debug Info Version", i32 3}
!3 = !DIFile(filename: "a.rs", directory: "/src")
!4 = !DIFile(filename: "b.rs", directory: "/src")
!5 = !DIFile(filename: "c.rs", directory: "/src")
!7 = !DISubroutineType(types: !8)
!8 = !{}
!10 = distinct !DISubprogram(name: "callee", scope: !50, file: !3, line: 1, type: !7, scopeLine: 1, spFlags: DISPFlagDefinition, unit: !0)
!11 = !DILocation(line: 2, column: 5, scope: !10)
!20 = distinct !DISubprogram(name: "m", linkageName: "_ZN5outer5inner1m", scope: !51, file: !3, line: 4, type: !7, scopeLine: 4, spFlags: DISPFlagDefinition, unit: !0)
!30 = !DILocation(line: 21, column: 9, scope: !40, inlinedAt: !31)
!31 = !DILocation(line: 5, column: 3, scope: !20)
!32 = !DILocation(line: 31, column: 1, scope: !41, inlinedAt: !33)
!33 = !DILocation(line: 22, column: 2, scope: !42, inlinedAt: !31)
!34 = !DILocation(line: 23, column: 1, scope: !40, inlinedAt: !38)
!35 = !DILocation(line: 2, column: 5, scope: !10, inlinedAt: !36)
!36 = !DILocation(line: 8, column: 1, scope: !20)
!37 = !DILocation(line: 9, column: 1, scope: !20)
!38 = distinct !DILocation(line: 5, column: 3, scope: !20)
!39 = !DILocation(line: 32, column: 4, scope: !41, inlinedAt: !31)
!40 = distinct !DISubprogram(name: "add", linkageName: "_ZN5outer5inner3Fsm3add", scope: !52, file: !4, line: 20, type: !7, scopeLine: 20, spFlags: DISPFlagDefinition, unit: !0)
!41 = distinct !DISubprogram(name: "step", scope: !51, file: !5, line: 30, type: !7, scopeLine: 30, spFlags: DISPFlagDefinition | DISPFlagLocalToUnit, unit: !0)
!42 = distinct !DILexicalBlock(scope: !40, file: !4, line: 22, column: 1)
!50 = !DINamespace(name: "outer", scope: null)
!51 = !DINamespace(name: "inner", scope: !50)
!52 = !DICompositeType(tag: DW_TAG_structure_type, name: "Fsm", scope: !51, file: !4, line: 1, size: 64, elements: !8)
!60 = !{!61, !62, !63, !64, !65, !66, !67, !68, !69, !70, !71, !72, !73, !74, !75, !76, !77, !78, !79, !80, !81, !82, !83, !84}
!61 = !DIBasicType(name: "t0", size: 8, encoding: DW_ATE_unsigned)
!62 = !DIBasicType(name: "t1", size: 16, encoding: DW_ATE_unsigned)
!63 = !DIBasicType(name: "t2", size: 32, encoding: DW_ATE_unsigned)
!64 = !DIBasicType(name: "t3", size: 64, encoding: DW_ATE_unsigned)
!65 = !DIBasicType(name: "t4", size: 8, encoding: DW_ATE_unsigned)
!66 = !DIBasicType(name: "t5", size: 16, encoding: DW_ATE_unsigned)
!67 = !DIBasicType(name: "t6", size: 32, encoding: DW_ATE_unsigned)
!68 = !DIBasicType(name: "t7", size: 64, encoding: DW_ATE_unsigned)
!69 = !DIBasicType(name: "t8", size: 8, encoding: DW_ATE_unsigned)
!70 = !DIBasicType(name: "t9", size: 16, encoding: DW_ATE_unsigned)
!71 = !DIBasicType(name: "t10", size: 32, encoding: DW_ATE_unsigned)
!72 = !DIBasicType(name: "t11", size: 64, encoding: DW_ATE_unsigned)
!73 = !DIBasicType(name: "t12", size: 8, encoding: DW_ATE_unsigned)
!74 = !DIBasicType(name: "t13", size: 16, encoding: DW_ATE_unsigned)
!75 = !DIBasicType(name: "t14", size: 32, encoding: DW_ATE_unsigned)
!76 = !DIBasicType(name: "t15", size: 64, encoding: DW_ATE_unsigned)
!77 = !DIBasicType(name: "t16", size: 8, encoding: DW_ATE_unsigned)
!78 = !DIBasicType(name: "t17", size: 16, encoding: DW_ATE_unsigned)
!79 = !DIBasicType(name: "t18", size: 32, encoding: DW_ATE_unsigned)
!80 = !DIBasicType(name: "t19", size: 64, encoding: DW_ATE_unsigned)
!81 = !DIBasicType(name: "t20", size: 8, encoding: DW_ATE_unsigned)
!82 = !DIBasicType(name: "t21", size: 16, encoding: DW_ATE_unsigned)
!83 = !DIBasicType(name: "t22", size: 32, encoding: DW_ATE_unsigned)
!84 = !DIBasicType(name: "t23", size: 64, encoding: DW_ATE_unsigned)
)";

TEST_CASE("direct reader: debug information as LLVM's exporter", "[direct-export]") {
  expect_identical(std::string(kHeader) + kDebugIr, "debug information");
  expect_identical(std::string(kHeader) + kLineTablesIr, "line tables only");
  expect_identical(std::string(kHeader) + kInlineIr, "scopes and inlined calls");

  // What both routes agree on is what flat_debug.h asks for.
  std::string bitcode = kiln_test::bitcode_from_ir(std::string(kHeader) + kDebugIr);
  DirectExport d = export_direct(bitcode, "debug.bc", "t");
  REQUIRE(d.declined.empty());
  const FlatDebugInfo& debug = d.flat.debug;
  CHECK(debug.dwarf_version == 5);
  CHECK(debug.emission == DebugEmission::full);
  CHECK(debug.language == 0x0c);  // DW_LANG_C99
  CHECK(debug.producer == "kiln test");
  CHECK((debug.name == "a.c" && debug.directory == "/src"));
  // @h falls back: its file is not named.
  CHECK(d.emitted_by_stamp == std::vector<bool>{true, true, false, true});
  CHECK(debug.files == std::vector<FlatDebugFile>{{"/src", "a.c"}, {"/src/include", "b.h"}, {"/src", "c.h"}});
  REQUIRE(debug.functions.size() == 3);
  CHECK(debug.functions[0] == FlatDebugFunction{true, false, true, 0, 1, 10, 11, "f", "f_linkage"});
  CHECK(debug.functions[1] == FlatDebugFunction{});
  CHECK(debug.functions[2] == FlatDebugFunction{true, true, false, 0, 1, 30, 30, "k", ""});
  REQUIRE(debug.locations.size() == d.flat.insts.size());
  // @f: the lexical block, the block file (in that block), none, line 0, the inlined
  // location (its own scope, not the call site), kiln's load of the constant (none),
  // the store and ret.
  const std::vector<FlatDebugLocation> f = {{1, 12, 5, 0, 1}, {2, 3, 9, 0, 1}, {0, 0, 0},  {1, 0, 0},
                                            {3, 2, 4, 1},     {0, 0, 0},       {1, 14, 1}, {1, 14, 1}};
  CHECK(std::vector<FlatDebugLocation>(debug.locations.begin(), debug.locations.begin() + 8) == f);

  // Scopes and inlined calls, interned in flat_debug.h's order.
  std::string inl = kiln_test::bitcode_from_ir(std::string(kHeader) + kInlineIr);
  DirectExport i = export_direct(inl, "inline.bc", "t");
  REQUIRE(i.declined.empty());
  const FlatDebugInfo& id = i.flat.debug;
  CHECK(id.files == std::vector<FlatDebugFile>{{"/src", "a.rs"}, {"/src", "b.rs"}, {"/src", "c.rs"}});
  CHECK(id.scopes ==
        std::vector<FlatDebugScope>{{0, kDwarfTagNamespace, "outer"},
                                    {1, kDwarfTagNamespace, "inner"},
                                    {2, 0x13, "Fsm"}});  // DW_TAG_structure_type
  const FlatDebugFunction callee{true, false, false, 1, 1, 1, 1, "callee", ""};
  CHECK(id.functions == std::vector<FlatDebugFunction>{callee, {true, false, false, 2, 1, 4, 4, "m", "_ZN5outer5inner1m"}});
  REQUIRE(id.inlined.size() == 3);
  CHECK(id.inlined[0] == FlatDebugFunction{true, false, false, 3, 2, 20, 20, "add", "_ZN5outer5inner3Fsm3add"});
  CHECK(id.inlined[1] == FlatDebugFunction{true, true, false, 2, 3, 30, 30, "step", ""});
  CHECK(id.inlined[2] == callee);
  // One site per (callee, inlinedAt) pair: %z's inlinedAt is a distinct node equal to
  // %x's, and is a site of its own.
  REQUIRE(id.inline_sites.size() == 5);
  CHECK(id.inline_sites[0] == FlatDebugInlineSite{0, 1, 1, 5, 3});
  CHECK(id.inline_sites[1] == FlatDebugInlineSite{1, 2, 2, 22, 2, 1});  // in `add`'s block, in @m
  CHECK(id.inline_sites[2] == FlatDebugInlineSite{0, 1, 1, 5, 3});      // %z: `add` at the distinct !38
  CHECK(id.inline_sites[3] == FlatDebugInlineSite{0, 3, 1, 8, 1});
  CHECK(id.inline_sites[4] == FlatDebugInlineSite{0, 2, 1, 5, 3});  // %v: `step` at %x's call
  CHECK(id.blocks == std::vector<FlatDebugBlock>{{0, 2, 22, 1}});
  REQUIRE(id.locations.size() == 8);
  // @callee's two, then @m's %x, %y, %z, %w, %v and ret.
  CHECK(id.locations[0] == FlatDebugLocation{1, 2, 5, 0});
  CHECK(id.locations[2] == FlatDebugLocation{2, 21, 9, 1});
  CHECK(id.locations[3] == FlatDebugLocation{3, 31, 1, 2});
  CHECK(id.locations[4] == FlatDebugLocation{2, 23, 1, 3});
  CHECK(id.locations[5] == FlatDebugLocation{1, 2, 5, 4});
  CHECK(id.locations[6].inline_site == 5);
  CHECK(id.locations[7] == FlatDebugLocation{1, 9, 1, 0});

  std::string small = kiln_test::bitcode_from_ir(std::string(kHeader) + kLineTablesIr);
  DirectExport lines = export_direct(small, "lines.bc", "t");
  CHECK(lines.flat.debug.dwarf_version == 4);
  CHECK(lines.flat.debug.emission == DebugEmission::line_tables);
  CHECK(lines.flat.debug.language == 0x1c);  // DW_LANG_Rust, of the second unit: the first is NoDebug
  CHECK(lines.flat.debug.name == "lib.rs");
}

TEST_CASE("direct reader: regex modules as LLVM's exporter", "[direct-export]") {
  for (const char* name : {"regex-4k.bc", "regex-18k.bc", "regex-78k.bc"}) {
    std::string path = std::string(KILN_TEST_DATA) + "/bitstream/" + name;
    ReaderComparison r = compare_reader(read_file(path), name);
    INFO(name << ": " << outcome_name(r.outcome) << ": " << r.detail);
    CHECK(r.outcome == ReaderComparison::kIdentical);
  }
}

TEST_CASE("direct reader: corrupt bitcode is exit 3 naming the file", "[direct-export]") {
  std::string bitcode = kiln_test::bitcode_from_ir(std::string(kHeader) + "define i64 @f(i64 %a) { ret i64 %a }\n");
  for (size_t cut : {size_t(0), size_t(3), size_t(8), bitcode.size() / 2, bitcode.size() - 4}) {
    INFO("truncated to " << cut);
    try {
      export_direct(std::string_view(bitcode).substr(0, cut), "cut.bc", "t");
      FAIL("no error");
    } catch (const KilnError& e) {
      CHECK(e.code() == kExitBadInput);
      CHECK(std::string(e.what()).find("cut.bc") != std::string::npos);
    }
  }
}

TEST_CASE("direct reader: target triples judged as LLVM's Triple judges them", "[direct-export]") {
  for (const char* t : {"x86_64-unknown-linux-gnu",
                        "x86_64-pc-linux-gnu",
                        "x86_64-unknown-linux-musl",
                        "amd64-unknown-linux-gnu",
                        "x86_64h-unknown-linux-gnu",
                        "x86_64-unknown-linux-gnux32",
                        "x86_64-unknown-linux-muslx32",
                        "x86_64-linux-gnu",
                        "x86_64-unknown-linux",
                        "x86_64-unknown-linux-gnu-coff",
                        "x86_64-pc-windows-msvc",
                        "x86_64-apple-macosx10.15.0",
                        "aarch64-unknown-linux-gnu",
                        "i686-unknown-linux-gnu",
                        "x86_64",
                        "x86_64-unknown-freebsd",
                        "riscv64gc-unknown-linux-gnu",
                        "",
                        "x86_64-unknown-linux-android",
                        "x86_64-unknown-linux-elf",
                        "x86_64-unknown-linux-gnu-macho"}) {
    INFO("triple '" << t << "'");
    CHECK(target_problem(t) == triple_problem(t));
  }
}

TEST_CASE("direct reader over a corpus (KILN_BITCODE_CORPUS)", "[.corpus]") {
  const char* dir = std::getenv("KILN_BITCODE_CORPUS");
  if (!dir) {
    WARN("skipped: KILN_BITCODE_CORPUS is not set");
    return;
  }
  size_t counts[4] = {0, 0, 0, 0};
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".bc") continue;
    ReaderComparison r = compare_reader(read_file(entry.path().string()), entry.path().string());
    counts[r.outcome]++;
    if (r.outcome != ReaderComparison::kIdentical)
      std::printf("%s: %s: %s\n", entry.path().c_str(), outcome_name(r.outcome), r.detail.c_str());
  }
  std::printf("identical %zu, functions declined %zu, declined %zu, different %zu\n", counts[0], counts[2], counts[1],
              counts[3]);
  CHECK(counts[ReaderComparison::kDifferent] == 0);
}

TEST_CASE("direct reader speed over a corpus (KILN_BITCODE_CORPUS)", "[.bench]") {
  const char* dir = std::getenv("KILN_BITCODE_CORPUS");
  if (!dir) {
    WARN("skipped: KILN_BITCODE_CORPUS is not set");
    return;
  }
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == ".bc")
      files.push_back({entry.path().string(), read_file(entry.path().string())});
  const char* rounds_env = std::getenv("KILN_BENCH_ROUNDS");
  int rounds = rounds_env ? std::atoi(rounds_env) : 5;
  if (std::getenv("KILN_BENCH_LLVM")) {  // LLVM's route instead, for the ratio
    for (int r = 0; r < rounds; ++r) {
      double llvm = 0;
      for (const auto& [path, bytes] : files) llvm += llvm_route_seconds(bytes, path);
      std::printf("round %d: %zu modules, LLVM parse + export %.3f s\n", r + 1, files.size(), llvm);
    }
    return;
  }
  for (int r = 0; r < rounds; ++r) {
    double read = 0, exported = 0;
    uint64_t instructions = 0;
    for (const auto& [path, bytes] : files) {
      DirectExport d = export_direct(bytes, path, "bench");
      read += d.read_seconds;
      exported += d.export_seconds;
      for (const auto& v : d.verdicts) instructions += v.instructions;
    }
    std::printf("round %d: %zu modules, %llu IR instructions, read %.4f s, export %.4f s\n", r + 1, files.size(),
                static_cast<unsigned long long>(instructions), read, exported);
  }
}

// Peak resident memory of the direct reader on one module (KILN_READER_MEMORY=FILE.bc),
// in a child process of its own so that nothing before it counts: the high-water mark
// after the read, less the resident size before it, against the bitcode's size plus the
// flat arrays made of it (the issue's bound: at most 2x the first plus the second).
static uint64_t status_kib(const char* field) {
  std::string status = read_file("/proc/self/status");
  size_t at = status.find(field);
  return at == std::string::npos ? 0 : std::strtoull(status.c_str() + at + std::strlen(field), nullptr, 10);
}

TEST_CASE("direct reader peak memory on one module (KILN_READER_MEMORY)", "[.memory]") {
  const char* path = std::getenv("KILN_READER_MEMORY");
  if (!path) {
    WARN("skipped: KILN_READER_MEMORY is not set");
    return;
  }
  std::string bytes = read_file(path);
  std::fflush(stdout);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    uint64_t before = status_kib("VmRSS:");
    DirectExport d = export_direct(bytes, path, "memory");
    uint64_t peak = status_kib("VmHWM:");
    uint64_t flat = d.flat.insts.size() * sizeof(FlatInst) + d.flat.operands.size() * sizeof(FlatOperand) +
        d.flat.blocks.size() * sizeof(FlatBlock) + d.flat.functions.size() * sizeof(FlatFunction) +
        d.flat.arg_widths.size();
    for (const auto& s : d.flat.symbols) flat += s.size() + sizeof(s);
    for (const auto& g : d.data) flat += g.bytes.size();
    // The debug information's arrays are flat arrays too (kiln-flat(5)); the strings
    // their elements hold are left out, so the bound is if anything too tight.
    const FlatDebugInfo& dbg = d.flat.debug;
    auto add = [&flat](const auto& v) { flat += v.size() * sizeof(v[0]); };
    add(dbg.files), add(dbg.scopes), add(dbg.functions), add(dbg.inlined), add(dbg.inline_sites);
    add(dbg.locations), add(dbg.blocks), add(dbg.variables), add(dbg.types), add(dbg.globals);
    double bound = (2.0 * bytes.size() + flat) / 1024.0;
    std::printf(
        "%s: %zu bytes of bitcode, flat arrays and data %llu bytes; reader peak %llu KiB over %llu KiB "
        "before: %.2fx the bound of %.0f KiB\n",
        path, bytes.size(), static_cast<unsigned long long>(flat),
        static_cast<unsigned long long>(peak > before ? peak - before : 0), static_cast<unsigned long long>(before),
        (peak > before ? peak - before : 0) / bound, bound);
    std::fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(WIFEXITED(status));
}

TEST_CASE("direct reader: i128 values as LLVM's exporter", "[direct-export]") {
  // What stamp takes: the function is whole by both routes.
  std::string taken = std::string(kHeader) + R"(
declare i128 @make(i64)
define i64 @taken(ptr %p, i64 %x) {
entry:
  %slot = alloca i128, align 16
  %a = load i128, ptr %p, align 16
  store i128 9, ptr %slot, align 16
  store i128 -39614081257132168796771975168, ptr %p, align 16
  %c = icmp eq i128 %a, 18446744073709551616
  %w = zext i64 %x to i128
  %s = sext i32 -5 to i128
  %m = shl i128 1, %w
  %n0 = and i128 %m, %s
  %n = mul i128 %n0, -7
  %f = freeze i128 %n
  %r = call i128 @make(i64 %x)
  %sel = select i1 %c, i128 %f, i128 %r
  switch i128 %sel, label %other [ i128 0, label %join
                                   i128 -1, label %join ]
other:
  br label %join
join:
  %ph = phi i128 [ 0, %entry ], [ 0, %entry ], [ %sel, %other ]
  %t = trunc i128 %ph to i64
  ret i64 %t
}
define i128 @returned(ptr %p) {
  %a = load i128, ptr %p, align 16
  ret i128 %a
}
)";
  expect_identical(taken, "i128 taken");
  ReaderComparison r = compare_reader(kiln_test::bitcode_from_ir(taken), "i128 taken");
  CHECK(r.whole);
  // The same result by both routes, taken or falling back for the same reasons: i128
  // arguments and call arguments, division (as compiler-rt's calls) and constants
  // beyond 96 signed bits (loaded from constant data) taken; atomics, i128 addresses
  // and indices, intrinsics falling back.
  expect_identical(std::string(kHeader) + R"(
declare void @take(i128)
declare i128 @llvm.ctpop.i128(i128)
define i128 @arg_ret(i128 %a) {
  ret i128 %a
}
define void @big(ptr %p) {
  store i128 170141183460469231731687303715884105727, ptr %p, align 16
  ret void
}
define void @arith(ptr %p) {
  %a = load i128, ptr %p, align 16
  %m = mul i128 %a, %a
  %d = udiv i128 %m, 7
  %s = srem i128 %d, 3
  store i128 %s, ptr %p, align 16
  ret void
}
define void @atomic(ptr %p) {
  %a = load atomic i128, ptr %p seq_cst, align 16
  store atomic i128 %a, ptr %p seq_cst, align 16
  ret void
}
define ptr @addr(ptr %p, i128 %i) {
  %q = getelementptr i8, ptr %p, i128 %i
  %r = inttoptr i128 %i to ptr
  ret ptr %q
}
define void @arg(ptr %p) {
  %a = load i128, ptr %p, align 16
  call void @take(i128 %a)
  %c = call i128 @llvm.ctpop.i128(i128 %a)
  %t = ptrtoint ptr %p to i128
  store i128 %t, ptr %p, align 16
  ret void
}
)",
                   "i128 refused");
}

// A debug type that contains itself (here a structure listed among its own elements:
// only a malformed module's, which LLVM's parser reads all the same; the fuzzer made one
// by changing a byte of a real module) would make stamp's DWARF writer recurse without
// end. Both routes leave such a module to LLVM: the reader declines it, and LLVM's
// exporter gives every function the reason, so that LLVM emits them all.
TEST_CASE("direct reader: a debug type that contains itself leaves the module to LLVM", "[direct-export]") {
  const std::string ir = std::string(kHeader) + R"(
define i64 @f(i64 %a) !dbg !10 {
  %s = alloca i64, align 8
    #dbg_declare(ptr %s, !12, !DIExpression(), !14)
  store i64 %a, ptr %s, align 8, !dbg !14
  ret i64 %a, !dbg !14
}
define i64 @g(i64 %a) !dbg !20 {
  %s = add i64 %a, 1, !dbg !21
  ret i64 %s, !dbg !21
}
!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!1, !2}
!0 = distinct !DICompileUnit(language: DW_LANG_C99, file: !3, producer: "kiln test", isOptimized: false, runtimeVersion: 0, emissionKind: FullDebug)
!1 = !{i32 7, !"Dwarf Version", i32 5}
!2 = !{i32 2, !"Debug Info Version", i32 3}
!3 = !DIFile(filename: "a.c", directory: "/src")
!7 = !DISubroutineType(types: !8)
!8 = !{null}
!10 = distinct !DISubprogram(name: "f", scope: !3, file: !3, line: 1, type: !7, scopeLine: 1, spFlags: DISPFlagDefinition, unit: !0)
!12 = !DILocalVariable(name: "s", scope: !10, file: !3, line: 2, type: !13)
!13 = distinct !DICompositeType(tag: DW_TAG_structure_type, name: "S", file: !3, line: 1, size: 64, elements: !15)
!15 = !{!13}
!14 = !DILocation(line: 2, column: 3, scope: !10)
!20 = distinct !DISubprogram(name: "g", scope: !3, file: !3, line: 5, type: !7, scopeLine: 5, spFlags: DISPFlagDefinition, unit: !0)
!21 = !DILocation(line: 6, column: 3, scope: !20)
)";
  const std::string bitcode = kiln_test::bitcode_from_ir(ir);
  DirectExport d = export_direct(bitcode, "self.bc", "t");
  CHECK(d.declined == "reader: debug information: debug types contain themselves");

  llvm::LLVMContext ctx;
  auto module = parse_bitcode(ctx, bitcode, "self.bc");
  FlatExport flat = export_flat(*module);
  CHECK(flat.stamp_function_count == 0);
  CHECK(flat.flat.functions.empty());
  CHECK(check_flat_module(flat.flat).empty());
  REQUIRE(flat.verdicts.size() == 2);
  for (const FunctionVerdict& v : flat.verdicts)
    CHECK(v.reasons == std::vector<std::string>{"debug information: debug types contain themselves"});

  // Without the cycle, both take the module (the oracle compares them byte for byte).
  std::string fine = ir;
  fine.replace(fine.find("!15 = !{!13}"), 12, "!15 = !{}");
  expect_identical(fine, "a debug type with no cycle");
}

// The fuzzer's finds (tests/data/fuzz/, seeds of scripts/fuzz.sh), each with what the
// reader now says of it: a module left to LLVM, or exit 3 naming the record.
TEST_CASE("direct reader: inputs that once broke it are declined or refused as bad input", "[direct-export]") {
  const std::string dir = std::string(KILN_TEST_DATA) + "/fuzz/";
  DirectExport d = export_direct(read_file(dir + "direct-reader-self-containing-type.bc"), "a.bc", "t");
  CHECK(d.declined == "reader: debug information: debug types contain themselves");
  // A composite type whose tag became DW_TAG_inheritance (an element), with a type
  // declared inside it: the module passed the exporter's type check and failed
  // check_flat_module; LLVM's verifier drops such debug information.
  d = export_direct(read_file(dir + "direct-reader-type-inside-member.bc"), "c.bc", "t");
  CHECK(d.declined == "reader: debug information: debug type declared inside a member");
  // A "Dwarf Version" module flag of 8: the reader exported it and check_flat_module
  // refused the result. Now LLVM's whole on both routes (LLVM's parser reads any number).
  const std::string version_8 = read_file(dir + "direct-reader-dwarf-version-8.bc");
  d = export_direct(version_8, "v.bc", "t");
  CHECK(d.declined == "reader: debug information: DWARF version other than 2 to 5");
  {
    llvm::LLVMContext ctx;
    auto module = parse_bitcode(ctx, version_8, "v.bc");
    FlatExport flat = export_flat(*module);
    CHECK(flat.stamp_function_count == 0);
    CHECK(check_flat_module(flat.flat).empty());
    REQUIRE(!flat.verdicts.empty());
    for (const FunctionVerdict& v : flat.verdicts)
      CHECK(v.reasons == std::vector<std::string>{"debug information: DWARF version other than 2 to 5"});
  }
  // Two functions of one name (their records point at one string): the reader exported
  // both, and check_flat_module refused it ("function defined twice"). LLVM's parser
  // renames the second, and its route takes the module.
  const std::string twice = read_file(dir + "direct-reader-two-globals-one-name.bc");
  d = export_direct(twice, "n.bc", "t");
  CHECK(d.declined == "reader: two globals of one name");
  {
    llvm::LLVMContext ctx;
    auto module = parse_bitcode(ctx, twice, "n.bc");
    FlatExport flat = export_flat(*module);
    CHECK(check_flat_module(flat.flat).empty());
  }
  // A local variable's record of eight fields with the alignment flag: the ninth was
  // read from past the end of the record (AddressSanitizer: heap-buffer-overflow).
  try {
    export_direct(read_file(dir + "direct-reader-local-variable-alignment.bc"), "b.bc", "t");
    FAIL("read");
  } catch (const KilnError& e) {
    CHECK(e.code() == kExitBadInput);
    CHECK_THAT(e.what(),
               Catch::Matchers::Contains("b.bc") &&
                   Catch::Matchers::Contains("invalid DILocalVariable record (an alignment, but no field for it)"));
  }
}

// A function whose labels a blockaddress takes stays LLVM's ("block address taken"): the
// direct reader once missed it, so clang -O2's label table (a static array of &&label
// with no indirectbr left) made stamp compile the function while the llvm half, which
// keeps the table, only declared it: LLVM wrote 1 for each label's address.
TEST_CASE("direct reader: a function whose block address is taken stays LLVM's", "[direct-export]") {
  const std::string table = std::string(kHeader) + R"(
@step.t = internal constant [2 x ptr] [ptr blockaddress(@step, %small), ptr blockaddress(@step, %big)]
@where = global ptr null
define i32 @step(i32 %x) {
entry:
  store ptr @step.t, ptr @where
  %c = icmp sgt i32 %x, 10
  br i1 %c, label %big, label %small
small:
  %a = add i32 %x, 1
  br label %done
big:
  %b = shl i32 %x, 1
  br label %done
done:
  %r = phi i32 [ %b, %big ], [ %a, %small ]
  ret i32 %r
}
define i32 @other(i32 %x) {
  ret i32 %x
}
)";
  expect_identical(table, "label table");
  DirectExport d = export_direct(kiln_test::bitcode_from_ir(table), "t.bc", "t");
  REQUIRE(d.declined.empty());
  REQUIRE(d.verdicts.size() == 2);
  CHECK(d.verdicts[0].reasons == std::vector<std::string>{"block address taken"});
  CHECK(d.verdicts[1].stamp());
  // Computed goto in the function itself: the label's block and the indirectbr.
  expect_identical(std::string(kHeader) + R"(
define i32 @jump(i1 %c) {
entry:
  %t = select i1 %c, ptr blockaddress(@jump, %one), ptr blockaddress(@jump, %two)
  indirectbr ptr %t, [label %one, label %two]
one:
  ret i32 1
two:
  ret i32 2
}
)",
                   "computed goto");
  // A body that takes the label of a body before it: that function's verdict is made
  // already, so the module goes to LLVM's route whole.
  const std::string late = std::string(kHeader) + R"(
define i32 @first(i1 %c) {
entry:
  br i1 %c, label %one, label %two
one:
  ret i32 1
two:
  ret i32 2
}
define ptr @second() {
  ret ptr blockaddress(@first, %two)
}
)";
  d = export_direct(kiln_test::bitcode_from_ir(late), "l.bc", "t");
  CHECK(d.declined == "reader: blockaddress of a function read before it");
}

// A value of token type (llvm.coro.id's, in C++20 coroutines' ThinLTO bitcode, where
// coroutines are not split yet) has no size: LLVM's exporter asked DataLayout for it
// and LLVM trapped (SIGTRAP, the module's emission failed and --check-reader died).
// It is a reason now, and the direct reader declines the function.
TEST_CASE("LLVM's exporter: a token value is a reason, not a crash", "[direct-export]") {
  const std::string ir = std::string(kHeader) + R"(
define void @coro() {
  %id = call token @llvm.coro.id(i32 0, ptr null, ptr null, ptr null)
  ret void
}
define i32 @plain(i32 %x) {
  ret i32 %x
}
declare token @llvm.coro.id(i32, ptr readnone, ptr readonly captures(none), ptr)
)";
  const std::string bitcode = kiln_test::bitcode_from_ir(ir);
  llvm::LLVMContext ctx;
  auto module = parse_bitcode(ctx, bitcode, "t.bc");
  FlatExport flat = export_flat(*module);
  REQUIRE(flat.verdicts.size() == 2);
  CHECK(flat.verdicts[0].reasons == std::vector<std::string>{"intrinsic llvm.coro.id", "value type token"});
  CHECK(flat.verdicts[1].stamp());
  CHECK(compare_reader(bitcode, "t.bc").outcome == ReaderComparison::kFunctionsDeclined);
}

// Found by the review running --check-reader: a call whose type is not its callee's
// still does not return when the callee is noreturn (LLVM's doesNotReturn asks the
// callee operand whatever the call's type), and an inalloca alloca is never static.
TEST_CASE("direct reader: noreturn through a mismatched call type, inalloca allocas", "[direct-export]") {
  expect_identical(std::string(kHeader) + R"(
declare void @nr() noreturn
define void @f(i32 %x) {
  call void @nr(i32 %x)
  unreachable
}
)",
                   "noreturn callee called with another type");
  expect_identical(std::string(kHeader) + R"(
define i32 @g() {
  %z = alloca inalloca i32
  store i32 1, ptr %z
  %v = load i32, ptr %z
  ret i32 %v
}
)",
                   "inalloca alloca");
}

// atomicrmw's floating-point and wrapping operations keep LLVM's reason ('atomics:
// atomicrmw fadd', ...), where the reader declined the function as 'operation 11'
// whatever the operation.
TEST_CASE("direct reader: every atomicrmw operation with LLVM's reason", "[direct-export]") {
  std::string ir = kHeader;
  const char* ops[][2] = {{"fadd", "double 1.0"}, {"fsub", "double 1.0"},    {"fmax", "double 1.0"},
                          {"fmin", "double 1.0"}, {"fmaximum", "float 1.0"}, {"fminimum", "float 1.0"},
                          {"uinc_wrap", "i32 1"}, {"udec_wrap", "i32 1"},    {"usub_cond", "i32 1"},
                          {"usub_sat", "i64 1"},  {"max", "i32 1"},          {"umin", "i8 1"}};
  for (const auto& [op, value] : ops)
    ir += std::string("define void @") + op + "(ptr %p) {\n  %o = atomicrmw " + op + " ptr %p, " + value +
        " monotonic\n  ret void\n}\n";
  expect_identical(ir, "atomicrmw operations");
  DirectExport d = export_direct(kiln_test::bitcode_from_ir(ir), "a.bc", "t");
  REQUIRE(d.verdicts.size() == std::size(ops));
  CHECK(d.declined_function_count == 0);
  CHECK(d.verdicts[0].reasons == std::vector<std::string>{"atomics: on double", "atomics: atomicrmw fadd"});
  CHECK(d.verdicts[9].reasons == std::vector<std::string>{"atomics: atomicrmw usub_sat"});
}
