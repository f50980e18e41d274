// Differential tests of stamp's floating point against llvm: every operation on float
// and double (arithmetic, fneg, fabs, sqrt, fcmp with every predicate, conversions
// from and to integers of every width, fpext, fptrunc, frem, fmuladd and the
// intrinsics LLVM calls libm for: floor, sin, pow, fma, powi, ...) on every pair of edge values
// (zeros of both signs, infinities, NaNs, denormals, the limits of the integer
// conversions), and the SysV convention for floating-point arguments and returns
// (xmm registers, stack overflow of both classes in order, calls into C, a varargs
// call with al set, aggregates of two leaves returned in rax/rdx and xmm0/xmm1 leaf by
// leaf), all in one module compiled by both back ends and linked with one C driver
// that prints every result's bits.
#include <catch2/catch.hpp>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "differential.h"
#include "ir_helpers.h"
#include "reader_check.h"

using namespace kiln;

namespace {

struct FloatType {
  const char* ir;  // float, double
  const char* c;   // float, double
  const char* suffix;
};
const FloatType kFloatTypes[] = {{"float", "float", "f32"}, {"double", "double", "f64"}};
const char* const kPredicates[] = {"false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
                                   "uno",   "ueq", "ugt", "uge", "ult", "ule", "une", "true"};
const int kIntWidths[] = {1, 8, 16, 32, 64};

// The functions of one type: name tables the driver walks (binary, unary, compares,
// from integers, to integers).
struct FloatFunctions {
  std::vector<std::string> binary, unary, compare, from_int, to_int, to_int_sat;
};

// An integer argument (i64 %x) truncated to iN as %t.
std::string narrow(int w) {
  if (w == 64) return "  %t = add i64 %x, 0\n";
  return "  %t = trunc i64 %x to i" + std::to_string(w) + "\n";
}

void define_operations(std::ostringstream& ir, const FloatType& t, FloatFunctions* out) {
  std::string T = t.ir;
  for (const char* op : {"fadd", "fsub", "fmul", "fdiv"}) {
    std::string name = std::string(op) + "_" + T;
    ir << "define " << T << " @" << name << "(" << T << " %a, " << T << " %b) {\n  %r = " << op << " " << T
       << " %a, %b\n  ret " << T << " %r\n}\n";
    out->binary.push_back(name);
  }
  ir << "define " << T << " @fneg_" << T << "(" << T << " %a) {\n  %r = fneg " << T << " %a\n  ret " << T
     << " %r\n}\n";
  for (const char* intrinsic : {"fabs", "sqrt"}) {
    ir << "declare " << T << " @llvm." << intrinsic << "." << t.suffix << "(" << T << ")\n";
    ir << "define " << T << " @" << intrinsic << "_" << T << "(" << T << " %a) {\n  %r = call " << T << " @llvm."
       << intrinsic << "." << t.suffix << "(" << T << " %a)\n  ret " << T << " %r\n}\n";
  }
  out->unary = {std::string("fneg_") + T, std::string("fabs_") + T, std::string("sqrt_") + T};
  // The intrinsics LLVM calls libm for at -O0, frem (fmod) and powi (__powidf2).
  for (const char* intrinsic : {"floor", "ceil", "trunc", "round", "rint", "nearbyint", "sin", "cos", "exp", "exp2",
                                "log", "log2", "log10"}) {
    ir << "declare " << T << " @llvm." << intrinsic << "." << t.suffix << "(" << T << ")\n";
    ir << "define " << T << " @" << intrinsic << "_" << T << "(" << T << " %a) {\n  %r = call " << T << " @llvm."
       << intrinsic << "." << t.suffix << "(" << T << " %a)\n  ret " << T << " %r\n}\n";
    out->unary.push_back(std::string(intrinsic) + "_" + T);
  }
  for (const char* intrinsic : {"copysign", "pow", "minnum", "maxnum"}) {
    ir << "declare " << T << " @llvm." << intrinsic << "." << t.suffix << "(" << T << ", " << T << ")\n";
    ir << "define " << T << " @" << intrinsic << "_" << T << "(" << T << " %a, " << T << " %b) {\n  %r = call " << T
       << " @llvm." << intrinsic << "." << t.suffix << "(" << T << " %a, " << T << " %b)\n  ret " << T << " %r\n}\n";
    out->binary.push_back(std::string(intrinsic) + "_" + T);
  }
  ir << "declare " << T << " @llvm.fma." << t.suffix << "(" << T << ", " << T << ", " << T << ")\n"
     << "define " << T << " @fma_" << T << "(" << T << " %a, " << T << " %b) {\n  %r = call " << T << " @llvm.fma."
     << t.suffix << "(" << T << " %a, " << T << " %b, " << T << " %a)\n  ret " << T << " %r\n}\n"
     << "define " << T << " @frem_" << T << "(" << T << " %a, " << T << " %b) {\n  %r = frem " << T << " %a, %b\n  ret "
     << T << " %r\n}\n"
     << "declare " << T << " @llvm.powi." << t.suffix << ".i32(" << T << ", i32)\n"
     << "declare " << T << " @llvm.fmuladd." << t.suffix << "(" << T << ", " << T << ", " << T << ")\n"
     << "define " << T << " @fmuladd_" << T << "(" << T << " %a, " << T << " %b) {\n  %r = call " << T
     << " @llvm.fmuladd." << t.suffix << "(" << T << " %a, " << T << " %b, " << T << " %a)\n  ret " << T << " %r\n}\n";
  out->binary.push_back(std::string("fma_") + T);
  out->binary.push_back(std::string("fmuladd_") + T);
  out->binary.push_back(std::string("frem_") + T);
  for (int n : {3, -2}) {
    std::string name = std::string("powi") + (n < 0 ? "m" : "") + std::to_string(n < 0 ? -n : n) + "_" + T;
    ir << "define " << T << " @" << name << "(" << T << " %a) {\n  %r = call " << T << " @llvm.powi." << t.suffix
       << ".i32(" << T << " %a, i32 " << n << ")\n  ret " << T << " %r\n}\n";
    out->unary.push_back(name);
  }
  for (const char* p : kPredicates) {
    std::string name = std::string("fcmp_") + p + "_" + T;
    ir << "define i32 @" << name << "(" << T << " %a, " << T << " %b) {\n  %c = fcmp " << p << " " << T
       << " %a, %b\n  %r = zext i1 %c to i32\n  ret i32 %r\n}\n";
    out->compare.push_back(name);
  }
  for (int w : kIntWidths)
    for (const char* op : {"sitofp", "uitofp"}) {
      std::string name = std::string(op) + "_i" + std::to_string(w) + "_" + T;
      ir << "define " << T << " @" << name << "(i64 %x) {\n"
         << narrow(w) << "  %r = " << op << " i" << w << " %t to " << T << "\n  ret " << T << " %r\n}\n";
      out->from_int.push_back(name);
    }
  for (int w : kIntWidths) {
    if (w == 1) continue;
    for (const char* op : {"fptosi", "fptoui"}) {
      std::string name = std::string(op) + "_" + T + "_i" + std::to_string(w);
      std::string back = w == 64 ? "  %e = add i64 %r, 0\n"
                                 : std::string("  %e = ") + (op[4] == 's' ? "sext" : "zext") + " i" +
                                       std::to_string(w) + " %r to i64\n";
      ir << "define i64 @" << name << "(" << T << " %x) {\n  %r = " << op << " " << T << " %x to i" << w << "\n"
         << back << "  ret i64 %e\n}\n";
      out->to_int.push_back(name);
    }
  }
  // The saturating conversions (Rust's `as` from a float to an integer), defined for
  // every input.
  for (int w : kIntWidths)
    for (const char* op : {"fptosi", "fptoui"}) {
      std::string name = std::string(op) + "_sat_" + T + "_i" + std::to_string(w);
      std::string iw = "i" + std::to_string(w);
      std::string back = w == 64 ? "  %e = add i64 %r, 0\n"
                                 : std::string("  %e = ") + (op[4] == 's' ? "sext " : "zext ") + iw + " %r to i64\n";
      ir << "declare " << iw << " @llvm." << op << ".sat." << iw << "." << t.suffix << "(" << T << ")\n"
         << "define i64 @" << name << "(" << T << " %x) {\n  %r = call " << iw << " @llvm." << op << ".sat." << iw
         << "." << t.suffix << "(" << T << " %x)\n" << back << "  ret i64 %e\n}\n";
      out->to_int_sat.push_back(name);
    }
}

// The calling convention and floating point in flow: 11 floating-point and 7 integer
// arguments interleaved (three of the first and one of the second on the stack, in
// order, the last two integers after them), a
// call of it and of a C function, a varargs call of snprintf, a loop with phis of
// doubles over loaded values, selects and stores of floats.
const char* kFlowIr = R"(
@fmt = private constant [12 x i8] c"%.17g %.9g\0A\00"
declare double @scale(double, float, i32)
declare i32 @snprintf(ptr, i64, ptr, ...)
define double @mix(i64 %a, double %b, i32 %c, float %d, double %e, i8 %f, double %g, double %h, i64 %i,
                   double %j, float %k, double %l, i16 %m, double %n, float %p, double %r, i64 %o, i64 %q) {
  %a1 = sitofp i64 %a to double
  %c1 = sitofp i32 %c to double
  %d1 = fpext float %d to double
  %f1 = sitofp i8 %f to double
  %i1 = sitofp i64 %i to double
  %k1 = fpext float %k to double
  %m1 = uitofp i16 %m to double
  %o1 = sitofp i64 %o to double
  %p1 = fpext float %p to double
  %q1 = sitofp i64 %q to double
  %x0 = fmul double %a1, 1.5
  %x1 = fadd double %x0, %b
  %x2 = fmul double %x1, 1.5
  %x3 = fadd double %x2, %c1
  %x4 = fmul double %x3, 1.5
  %x5 = fadd double %x4, %d1
  %x6 = fmul double %x5, 1.5
  %x7 = fadd double %x6, %e
  %x8 = fmul double %x7, 1.5
  %x9 = fadd double %x8, %f1
  %y0 = fmul double %x9, 1.5
  %y1 = fadd double %y0, %g
  %y2 = fmul double %y1, 1.5
  %y3 = fadd double %y2, %h
  %y4 = fmul double %y3, 1.5
  %y5 = fadd double %y4, %i1
  %y6 = fmul double %y5, 1.5
  %y7 = fadd double %y6, %j
  %y8 = fmul double %y7, 1.5
  %y9 = fadd double %y8, %k1
  %z0 = fmul double %y9, 1.5
  %z1 = fadd double %z0, %l
  %z2 = fmul double %z1, 1.5
  %z3 = fadd double %z2, %m1
  %z4 = fmul double %z3, 1.5
  %z5 = fadd double %z4, %n
  %z6 = fmul double %z5, 1.5
  %z7 = fadd double %z6, %o1
  %z8 = fmul double %z7, 1.5
  %z9 = fadd double %z8, %p1
  %w0 = fmul double %z9, 1.5
  %w1 = fadd double %w0, %q1
  %w2 = fmul double %w1, 1.5
  %w3 = fadd double %w2, %r
  ret double %w3
}
define double @call_mix(double %x, i64 %y) {
  %xf = fptrunc double %x to float
  %y32 = trunc i64 %y to i32
  %y8 = trunc i64 %y to i8
  %y16 = trunc i64 %y to i16
  %h = fmul double %x, 0.25
  %v = call double @mix(i64 %y, double %x, i32 %y32, float %xf, double %h, i8 %y8, double 2.0, double %x,
                        i64 3, double %h, float 0.5, double -1.0, i16 %y16, double %x, float %xf, double %h,
                        i64 %y, i64 7)
  %sc = call double @scale(double %v, float %xf, i32 %y32)
  %r = fsub double %sc, %v
  ret double %r
}
define i32 @format(ptr %buf, double %x, float %y) {
  %yd = fpext float %y to double
  %n = call i32 (ptr, i64, ptr, ...) @snprintf(ptr %buf, i64 64, ptr @fmt, double %x, double %yd)
  ret i32 %n
}
define double @sum(ptr %p, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %body ]
  %acc = phi double [ 0.0, %entry ], [ %acc1, %body ]
  %done = icmp uge i64 %i, %n
  br i1 %done, label %exit, label %body
body:
  %at = getelementptr double, ptr %p, i64 %i
  %v = load double, ptr %at
  %neg = fcmp olt double %v, 0.0
  %nv = fneg double %v
  %abs = select i1 %neg, double %nv, double %v
  %acc1 = fadd double %acc, %abs
  %i1 = add i64 %i, 1
  br label %loop
exit:
  ret double %acc
}
define { i32, float } @pair_if(i32 %a, float %b) {
  %p = insertvalue { i32, float } poison, i32 %a, 0
  %q = insertvalue { i32, float } %p, float %b, 1
  ret { i32, float } %q
}
define { double, i64 } @pair_di(double %a, i64 %b) {
  %p = insertvalue { double, i64 } poison, double %a, 0
  %q = insertvalue { double, i64 } %p, i64 %b, 1
  ret { double, i64 } %q
}
define { float, double } @pair_fd(float %a, double %b) {
  %p = insertvalue { float, double } poison, float %a, 0
  %q = insertvalue { float, double } %p, double %b, 1
  ret { float, double } %q
}
define { i64, double } @pair_id(i64 %a, double %b) {
  %p = insertvalue { i64, double } poison, i64 %a, 0
  %q = insertvalue { i64, double } %p, double %b, 1
  ret { i64, double } %q
}
; Each pair back through a call (the callee may be the other back end's, in C).
define double @pairs(i64 %x, double %y) {
  %xi = trunc i64 %x to i32
  %yf = fptrunc double %y to float
  %a = call { i32, float } @pair_if(i32 %xi, float %yf)
  %b = call { double, i64 } @pair_di(double %y, i64 %x)
  %c = call { float, double } @pair_fd(float %yf, double %y)
  %d = call { i64, double } @pair_id(i64 %x, double %y)
  %e = call { double, double } @c_pair(double %y, double 2.5)
  %a0 = extractvalue { i32, float } %a, 0
  %a1 = extractvalue { i32, float } %a, 1
  %b0 = extractvalue { double, i64 } %b, 0
  %b1 = extractvalue { double, i64 } %b, 1
  %c0 = extractvalue { float, double } %c, 0
  %c1 = extractvalue { float, double } %c, 1
  %d0 = extractvalue { i64, double } %d, 0
  %d1 = extractvalue { i64, double } %d, 1
  %e0 = extractvalue { double, double } %e, 0
  %e1 = extractvalue { double, double } %e, 1
  %s0 = sitofp i32 %a0 to double
  %s1 = fpext float %a1 to double
  %s2 = sitofp i64 %b1 to double
  %s3 = fpext float %c0 to double
  %s4 = sitofp i64 %d0 to double
  %t0 = fadd double %s0, %s1
  %t1 = fmul double %t0, 3.0
  %t2 = fadd double %t1, %b0
  %t3 = fmul double %t2, 3.0
  %t4 = fadd double %t3, %s2
  %t5 = fmul double %t4, 3.0
  %t6 = fadd double %t5, %s3
  %t7 = fmul double %t6, 3.0
  %t8 = fadd double %t7, %c1
  %t9 = fmul double %t8, 3.0
  %u0 = fadd double %t9, %s4
  %u1 = fmul double %u0, 3.0
  %u2 = fadd double %u1, %d1
  %u3 = fmul double %u2, 3.0
  %u4 = fadd double %u3, %e0
  %u5 = fmul double %u4, 3.0
  %u6 = fadd double %u5, %e1
  ret double %u6
}
declare { double, double } @c_pair(double, double)
define double @fpext_f(float %x) {
  %r = fpext float %x to double
  ret double %r
}
define void @halve(ptr %p, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %at = getelementptr float, ptr %p, i64 %i
  %v = load float, ptr %at
  %h = fmul float %v, 0.5
  %big = fcmp ogt float %v, 1.0e+02
  %w = select i1 %big, float %h, float %v
  store float %w, ptr %at
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %n
  br i1 %more, label %loop, label %exit
exit:
  ret void
}
)";

std::string float_module(FloatFunctions* f32, FloatFunctions* f64) {
  std::ostringstream ir;
  ir << "target datalayout = \"e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128\"\n"
        "target triple = \"x86_64-unknown-linux-gnu\"\n";
  define_operations(ir, kFloatTypes[0], f32);
  define_operations(ir, kFloatTypes[1], f64);
  ir << kFlowIr;
  return ir.str();
}

// The driver's tables of one type's functions (as untyped symbols, cast where called)
// and their names.
void declare_all(std::ostringstream& c, const FloatType& t, const FloatFunctions& f) {
  std::string T = t.c;
  auto table = [&](const char* name, const std::vector<std::string>& fns) {
    for (const auto& n : fns) c << "extern char " << n << "[];\n";
    c << "static void* const " << name << "_" << T << "[] = {";
    for (const auto& n : fns) c << n << ", ";
    c << "};\nstatic const char* const " << name << "_" << T << "_names[] = {";
    for (const auto& n : fns) c << '"' << n << "\", ";
    c << "};\n";
  };
  table("binary", f.binary);
  table("unary", f.unary);
  table("compare", f.compare);
  table("from_int", f.from_int);
  table("to_int", f.to_int);
  table("to_int_sat", f.to_int_sat);
}

// The driver: every operation of each type on every (pair of) edge value(s), each
// conversion to an integer only where LLVM defines it (in range, not NaN), and the
// flow functions; results as bit patterns.
std::string float_driver(const FloatFunctions& f32, const FloatFunctions& f64) {
  std::ostringstream c;
  c << "#include <math.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n";
  declare_all(c, kFloatTypes[0], f32);
  declare_all(c, kFloatTypes[1], f64);
  c << R"(
#define COUNT(x) (sizeof(x) / sizeof((x)[0]))
static unsigned long long bits_d(double x) { uint64_t u; memcpy(&u, &x, 8); return u; }
static unsigned long long bits_f(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
double scale(double a, float b, int c) { return a * b + c; }
typedef struct { double a, b; } Two;
Two c_pair(double a, double b) { Two t = {a - b, a * b}; return t; }
double pairs(int64_t, double);
double mix(int64_t, double, int, float, double, int8_t, double, double, int64_t, double, float, double, uint16_t,
           double, float, double, int64_t, int64_t);
double call_mix(double, int64_t);
int format(char*, double, float);
double sum(const double*, int64_t);
void halve(float*, int64_t);
double fpext_f(float);
static const double kValues[] = {0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 3.0, 1e300, -1e300,
    2.2250738585072014e-308, 4.9e-324, INFINITY, -INFINITY, NAN, -NAN, 9223372036854775808.0,
    18446744073709551616.0, 9223372036854774784.0, 3e9, -3e9, 123456789.123, 1.0 / 3, 255.9, -128.7, 65535.5,
    -0.75, 4294967295.0, 2147483648.0, -2147483649.0, 1e-40, 3.4028234663852886e38, 1e39, 127.5, -129.0,
    2147483647.5, -9223372036854777856.0, 18446744073709549568.0, 32767.9, -32768.5, 1.9, -1.9};
static const int64_t kInts[] = {0, 1, -1, 2, 127, -128, 255, 256, 32767, -32768, 65535, 2147483647,
    -2147483647 - 1, 4294967295ll, INT64_MAX, INT64_MIN, (1ll << 53) + 1, (int64_t)((1ull << 63) + 1025),
    0x123456789ABCDEFll, -0x123456789ABCDEFll, (int64_t)0xFFFFFFFFFFFFF801ull, 16777217};
/* Whether fpto[su]i of x to w bits is defined (LLVM: poison when out of range or NaN). */
static int in_range(double x, int w, int is_signed) {
  if (isnan(x) || isinf(x)) return 0;
  double t = trunc(x), lo = is_signed ? -ldexp(1, w - 1) : 0, hi = is_signed ? ldexp(1, w - 1) : ldexp(1, w);
  return t >= lo && t < hi;
}
#define RUN(T, BITS)                                                                                    \
  for (unsigned f = 0; f < COUNT(binary_##T); ++f)                                                      \
    for (unsigned a = 0; a < COUNT(kValues); ++a)                                                       \
      for (unsigned b = 0; b < COUNT(kValues); ++b)                                                     \
        printf("%s %u %u %llx\n", binary_##T##_names[f], a, b,                                          \
               BITS(((T(*)(T, T))binary_##T[f])((T)kValues[a], (T)kValues[b])));                       \
  for (unsigned f = 0; f < COUNT(unary_##T); ++f)                                                       \
    for (unsigned a = 0; a < COUNT(kValues); ++a)                                                       \
      printf("%s %u %llx\n", unary_##T##_names[f], a, BITS(((T(*)(T))unary_##T[f])((T)kValues[a])));    \
  for (unsigned f = 0; f < COUNT(compare_##T); ++f)                                                     \
    for (unsigned a = 0; a < COUNT(kValues); ++a)                                                       \
      for (unsigned b = 0; b < COUNT(kValues); ++b)                                                     \
        printf("%s %u %u %d\n", compare_##T##_names[f], a, b,                                           \
               ((int (*)(T, T))compare_##T[f])((T)kValues[a], (T)kValues[b]));                          \
  for (unsigned f = 0; f < COUNT(from_int_##T); ++f)                                                    \
    for (unsigned a = 0; a < COUNT(kInts); ++a)                                                         \
      printf("%s %u %llx\n", from_int_##T##_names[f], a, BITS(((T(*)(int64_t))from_int_##T[f])(kInts[a]))); \
  for (unsigned f = 0; f < COUNT(to_int_##T); ++f) {                                                    \
    const char* name = to_int_##T##_names[f];                                                           \
    int w = atoi(strrchr(name, 'i') + 1), is_signed = name[4] == 's';                                   \
    for (unsigned a = 0; a < COUNT(kValues); ++a)                                                       \
      if (in_range((T)kValues[a], w, is_signed))                                                         \
        printf("%s %u %lld\n", name, a, (long long)((int64_t(*)(T))to_int_##T[f])((T)kValues[a]));      \
  }                                                                                                     \
  for (unsigned f = 0; f < COUNT(to_int_sat_##T); ++f)                                                  \
    for (unsigned a = 0; a < COUNT(kValues); ++a)                                                       \
      printf("%s %u %lld\n", to_int_sat_##T##_names[f], a,                                              \
             (long long)((int64_t(*)(T))to_int_sat_##T[f])((T)kValues[a]));
int main(void) {
  RUN(float, bits_f)
  RUN(double, bits_d)
  for (unsigned a = 0; a < COUNT(kValues); ++a) {
    printf("ext %u %llx\n", a, bits_d(fpext_f((float)kValues[a])));
    printf("call_mix %u %llx\n", a, bits_d(call_mix(kValues[a], kInts[a % COUNT(kInts)])));
    printf("pairs %u %llx\n", a, bits_d(pairs(kInts[a % COUNT(kInts)], kValues[a])));
    char buf[64] = {0};
    int n = format(buf, kValues[a], (float)kValues[a]);
    printf("format %u %d %s", a, n, buf);
  }
  printf("mix %llx\n", bits_d(mix(1, 2.0, 3, 4.0f, 5.0, -6, 7.0, 8.0, 9, 10.0, 11.0f, 12.0, 65535, 14.0, 16.0f,
                                   18.0, -15, 17)));
  double d[] = {1.5, -2.25, 3.0, -1e300, 1e300, 0.125};
  printf("sum %llx %llx\n", bits_d(sum(d, 6)), bits_d(sum(d, 0)));
  float f[] = {1.0f, 200.0f, -300.0f, 1e30f, 100.0f};
  halve(f, 5);
  for (unsigned k = 0; k < COUNT(f); ++k) printf("halve %u %llx\n", k, bits_f(f[k]));
  return 0;
}
)";
  return c.str();
}

}  // namespace

TEST_CASE("floating point: every operation on edge values and the SysV float convention come out the same",
          "[stamp][differential][float]") {
  FloatFunctions f32, f64;
  std::string ir = float_module(&f32, &f64);
  kiln_test::ScratchDir dir;
  write_file_atomic(dir.path + "/driver.c", float_driver(f32, f64));
  ProcessOptions quiet;
  quiet.quiet = true;
  REQUIRE(run_process({"cc", "-c", "-o", dir.path + "/driver.o", dir.path + "/driver.c"}, quiet).exit_code == 0);
  std::string bitcode = kiln_test::bitcode_from_ir(ir);
  std::string expected = kiln_test::run_with("llvm", bitcode, dir.path + "/driver.o", dir.path, nullptr);
  EmitCounts counts;
  std::string actual = kiln_test::run_with("stamp", bitcode, dir.path + "/driver.o", dir.path, &counts);
  if (counts.functions_llvm != 0 || expected != actual) write_file_atomic("/tmp/kiln-float-failure.ll", ir);
  size_t per_type = f32.binary.size() + f32.unary.size() + f32.compare.size() + f32.from_int.size() + f32.to_int.size() +
                    f32.to_int_sat.size();
  CHECK(counts.functions_stamp == 2 * per_type + 11);  // and mix, call_mix, format, sum, five of pairs, fpext_f, halve
  CHECK(counts.functions_llvm == 0);
  REQUIRE(expected.size() > 0);
  CHECK(kiln_test::first_difference(expected, actual) == "");
  ReaderComparison reader = compare_reader(bitcode, "float");
  INFO(outcome_name(reader.outcome) << ": " << reader.detail);
  CHECK(reader.outcome == ReaderComparison::kIdentical);
  CHECK(reader.whole);
}

namespace {

// llvm.fmuladd where rounding once or twice tells apart: (1 + 2^-27)^2 - (1 + 2^-26)
// is 2^-54 fused and 0 with the product rounded first (and the same for float at
// 2^-12); llvm -O0 on a target without FMA rounds twice.
const char* kMulAddIr = R"(
target triple = "x86_64-unknown-linux-gnu"
declare double @llvm.fmuladd.f64(double, double, double)
declare float @llvm.fmuladd.f32(float, float, float)
define double @muladd_d(double %a, double %b, double %c) {
  %r = call double @llvm.fmuladd.f64(double %a, double %b, double %c)
  ret double %r
}
define float @muladd_f(float %a, float %b, float %c) {
  %r = call float @llvm.fmuladd.f32(float %a, float %b, float %c)
  ret float %r
}
; A loop that accumulates with it, as clang's -ffp-contract=on code does.
define double @dot(ptr %x, ptr %y, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %acc = phi double [ 0.0, %entry ], [ %acc1, %loop ]
  %px = getelementptr double, ptr %x, i64 %i
  %py = getelementptr double, ptr %y, i64 %i
  %vx = load double, ptr %px
  %vy = load double, ptr %py
  %acc1 = call double @llvm.fmuladd.f64(double %vx, double %vy, double %acc)
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %n
  br i1 %more, label %loop, label %exit
exit:
  ret double %acc1
}
)";

const char* kMulAddDriver = R"(#include <stdio.h>
#include <string.h>
double muladd_d(double, double, double);
float muladd_f(float, float, float);
double dot(const double*, const double*, long);
static unsigned long long bits_d(double d) { unsigned long long u; memcpy(&u, &d, 8); return u; }
static unsigned bits_f(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
int main(void) {
  double a = 1.0 + 0x1p-27, c = -(1.0 + 0x1p-26);
  float af = 1.0f + 0x1p-12f, cf = -(1.0f + 0x1p-11f);
  printf("%llx %x\n", bits_d(muladd_d(a, a, c)), bits_f(muladd_f(af, af, cf)));
  printf("%llx %llx\n", bits_d(muladd_d(1e308, 10.0, -1e308)), bits_d(muladd_d(-0.0, 0.0, 0.0)));
  double x[5] = {a, 1.5, -2.25, 0x1p-1074, 3.0}, y[5] = {a, 2.0, 4.0, 0.5, 1e-300};
  printf("%llx\n", bits_d(dot(x, y, 5)));
  return 0;
}
)";

}  // namespace

TEST_CASE("llvm.fmuladd rounds twice as llvm -O0 does without FMA, and is llvm's where the target may fuse it",
          "[stamp][differential][float]") {
  kiln_test::expect_same_as_llvm(kMulAddIr, kMulAddDriver, 3, "muladd");
  // Where the function's target may have FMA, LLVM fuses it: the function falls back,
  // with the same reason from both exporters.
  for (const char* attrs :
       {"\"target-features\"=\"+sse2,+fma\"", "\"target-cpu\"=\"haswell\"", "\"target-features\"=\"+avx512f\""}) {
    std::string ir = std::string(kMulAddIr);
    ir.replace(ir.find("define double @muladd_d(double %a, double %b, double %c) {"),
               std::strlen("define double @muladd_d(double %a, double %b, double %c) {"),
               "define double @muladd_d(double %a, double %b, double %c) #0 {");
    ir += std::string("attributes #0 = { ") + attrs + " }\n";
    std::string bitcode = kiln_test::bitcode_from_ir(ir);
    auto b = make_backend("stamp", Profile::fast);
    EmitResult r = b->emit(bitcode, "muladd.bc");
    INFO(attrs);
    CHECK(r.counts.functions_stamp == 2);
    CHECK(r.counts.functions_llvm == 1);
    ReaderComparison reader = compare_reader(bitcode, "muladd");
    INFO(outcome_name(reader.outcome) << ": " << reader.detail);
    CHECK(reader.outcome == ReaderComparison::kIdentical);
  }
}
