// Differential testing of stamp against llvm: random IR functions (loops, branches,
// phis, switches, calls, memory, aggregates and their selects, overflow checks, bit
// intrinsics, saturation and funnel shifts over i1..i64, vectors of 8- to 64-bit
// lanes) are compiled by both back ends, linked with the same C driver, run on random
// inputs, and must print the same results. KILN_DIFFERENTIAL_COUNT sets how many modules (default 12 in the unit
// suite); KILN_DIFFERENTIAL_SEED the first seed.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>
#include <random>
#include <sstream>

#include "backend.h"
#include "fs.h"
#include "differential.h"
#include "ir_helpers.h"
#include "reader_check.h"
#include "process.h"

using namespace kiln;
using kiln_test::first_difference;
using kiln_test::expect_same_as_llvm;
using kiln_test::run_with;

namespace {

class IrGenerator {
 public:
  explicit IrGenerator(uint64_t seed) : rng_(seed) {}

  std::string module(int functions) {
    std::ostringstream m;
    m << "target datalayout = \"e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128\"\n"
         "target triple = \"x86_64-unknown-linux-gnu\"\n"
         "declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)\n"
         "declare {i64, i1} @llvm.uadd.with.overflow.i64(i64, i64)\n"
         "declare {i32, i1} @llvm.smul.with.overflow.i32(i32, i32)\n"
         "declare {i16, i1} @llvm.usub.with.overflow.i16(i16, i16)\n"
         "declare {i8, i1} @llvm.sadd.with.overflow.i8(i8, i8)\n"
         "declare void @llvm.lifetime.start.p0(ptr)\ndeclare void @llvm.lifetime.end.p0(ptr)\n";
    for (int w = 8; w <= 64; w += 8) {
      std::string t = ty(w);
      for (const char* u : {"ctpop", "bitreverse"})
        m << "declare " << t << " @llvm." << u << "." << t << "(" << t << ")\n";
      for (const char* u : {"ctlz", "cttz", "abs"})
        m << "declare " << t << " @llvm." << u << "." << t << "(" << t << ", i1)\n";
      if (w == 16 || w == 32 || w == 64) m << "declare " << t << " @llvm.bswap." << t << "(" << t << ")\n";
      for (const char* u : {"umin", "umax", "smin", "smax", "uadd.sat", "usub.sat", "sadd.sat", "ssub.sat"})
        m << "declare " << t << " @llvm." << u << "." << t << "(" << t << ", " << t << ")\n";
      for (const char* u : {"fshl", "fshr"})
        m << "declare " << t << " @llvm." << u << "." << t << "(" << t << ", " << t << ", " << t << ")\n";
      for (const char* u : {"ucmp", "scmp"})
        m << "declare i8 @llvm." << u << ".i8." << t << "(" << t << ", " << t << ")\n";
    }
    m << "define internal i32 @helper(i32 %x, i8 signext %y) {\n"
         "  %s = sext i8 %y to i32\n  %m = mul i32 %x, 3\n  %r = add i32 %m, %s\n  ret i32 %r\n}\n"
         "define internal {i64, i32} @pair(i64 %x) {\n"
         "  %t = trunc i64 %x to i32\n  %a = insertvalue {i64, i32} poison, i64 %x, 0\n"
         "  %b = insertvalue {i64, i32} %a, i32 %t, 1\n  ret {i64, i32} %b\n}\n"
         // Eight arguments: two travel on the stack.
         // It spills arguments as rustc does for debug information: stamp stores those
         // that come in registers from there (store_from_arg_register), up to the store
         // of one that comes on the stack, after which they come from their slots.
         "define internal i64 @many(i64 %a, i32 %b, i64 %c, i8 %d, i64 %e, i16 %f, i64 %g, i32 signext %h) {\n"
         "  %sb = alloca i32, align 4\n  %sd = alloca i8, align 1\n  %sf = alloca [2 x i16], align 2\n"
         "  %sg = alloca i64, align 8\n  %sf1 = getelementptr inbounds i8, ptr %sf, i64 2\n"
         "  store i32 %b, ptr %sb\n  store i8 %d, ptr %sd\n  store i16 %f, ptr %sf1\n  store i16 %f, ptr %sf\n"
         "  store i64 %g, ptr %sg\n  store i32 %h, ptr %sb\n  store i32 %b, ptr %sb\n  %bl = load i32, ptr %sb\n"
         "  %dl = load i8, ptr %sd\n"
         "  %fl = load i16, ptr %sf1\n  %gl = load i64, ptr %sg\n"
         "  %b64 = zext i32 %bl to i64\n  %d64 = sext i8 %dl to i64\n  %f64 = zext i16 %fl to i64\n"
         "  %h64 = sext i32 %h to i64\n  %s1 = add i64 %a, %b64\n  %s2 = mul i64 %s1, %c\n  %s3 = xor i64 %s2, %d64\n"
         "  %s4 = sub i64 %s3, %e\n  %s5 = add i64 %s4, %f64\n  %s6 = mul i64 %s5, %gl\n  %s7 = add i64 %s6, %h64\n"
         "  ret i64 %s7\n}\n"
         // Odd widths in registers, and an aggregate that flows through a phi.
         "define internal i40 @odd(i64 %x, i24 signext %y) {\n  %t = trunc i64 %x to i40\n  %y40 = sext i24 %y to i40\n"
         "  %r = mul i40 %t, %y40\n  ret i40 %r\n}\n"
         "define internal {i24, i48} @oddpair(i64 %x, i1 %c) {\nentry:\n  %a = trunc i64 %x to i24\n  %b = trunc i64 "
         "%x to i48\n"
         "  %p = insertvalue {i24, i48} poison, i24 %a, 0\n  %q = insertvalue {i24, i48} %p, i48 %b, 1\n"
         "  br i1 %c, label %t, label %j\nt:\n  %n = add i48 %b, 7\n  %q2 = insertvalue {i24, i48} %q, i48 %n, 1\n  br "
         "label %j\n"
         "j:\n  %r = phi {i24, i48} [ %q, %entry ], [ %q2, %t ]\n  ret {i24, i48} %r\n}\n";
    // Vectors: the reductions the generator reads lanes out with, and a function that
    // takes two vectors in xmm registers and returns one in xmm0.
    for (const VectorType& t : kVectorTypes)
      for (const char* op : {"add", "mul", "xor"})
        m << "declare " << ty(t.bits) << " @llvm.vector.reduce." << op << "." << vector_name(t) << "("
          << vector_ty(t) << ")\n";
    m << "define internal <2 x i64> @vmix(<4 x i32> %x, <2 x i64> %y, i64 %z) {\n"
         "  %xb = bitcast <4 x i32> %x to <2 x i64>\n  %s = insertelement <2 x i64> %y, i64 %z, i32 1\n"
         "  %r = add <2 x i64> %xb, %s\n  ret <2 x i64> %r\n}\n";
    for (int f = 0; f < functions; ++f) m << function("f" + std::to_string(f));
    return m.str();
  }

 private:
  struct Value {
    std::string name;
    int width;
  };

  // The vector types stamp takes (test_stamp_vector.cpp tests each op on each alone).
  struct VectorType {
    int lanes, bits;
  };
  static constexpr VectorType kVectorTypes[] = {{16, 8}, {8, 16}, {4, 32}, {2, 64}, {32, 8}, {8, 8}, {4, 64}};
  static std::string vector_ty(VectorType t) {
    return "<" + std::to_string(t.lanes) + " x i" + std::to_string(t.bits) + ">";
  }
  static std::string vector_name(VectorType t) { return "v" + std::to_string(t.lanes) + "i" + std::to_string(t.bits); }
  static std::string splat(VectorType t, int64_t v) {
    std::string s = "<";
    for (int k = 0; k < t.lanes; ++k) s += (k ? ", " : "") + ty(t.bits) + " " + std::to_string(v);
    return s + ">";
  }

  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  std::string fresh() { return "%v" + std::to_string(counter_++); }
  int width() {
    static const int kWidths[] = {1, 8, 16, 24, 32, 40, 48, 56, 64};
    return kWidths[pick(9)];
  }
  static std::string ty(int w) { return "i" + std::to_string(w); }

  // A value of width w made from a random existing 64-bit value.
  std::string value_of(std::ostringstream& b, int w) {
    const Value& v = pool_[pick(static_cast<int>(pool_.size()))];
    if (w == 64) return v.name;
    std::string t = fresh();
    b << "  " << t << " = trunc i64 " << v.name << " to " << ty(w) << "\n";
    return t;
  }
  // A constant of width w as IR text: the edges of imm8 and imm32 (stamp folds
  // constants that fit into the instruction), of the width itself, or random bits.
  std::string constant(int w) {
    if (w == 1) return pick(2) ? "true" : "false";
    static const int64_t kEdges[] = {0, 1, -1, 2, 127, 128, -128, -129, 255, 256, 32767, 32768, -32769,
                                     2147483647LL, 2147483648LL, -2147483647LL - 1, -2147483647LL - 2,
                                     4294967295LL, INT64_MAX, INT64_MIN};
    int64_t v = pick(4) ? kEdges[pick(static_cast<int>(sizeof kEdges / sizeof kEdges[0]))]
                        : static_cast<int64_t>(rng_());
    if (w < 64) {  // wrapped to the width, written signed (LLVM's parser takes either)
      const uint64_t bits = static_cast<uint64_t>(v) << (64 - w);
      v = static_cast<int64_t>(bits) >> (64 - w);
    }
    return std::to_string(v);
  }
  // The right operand of an operation: a value, or a quarter of the time a constant.
  std::string operand_of(std::ostringstream& b, int w) { return pick(4) ? value_of(b, w) : constant(w); }

  void add64(std::ostringstream& b, const std::string& name, int w) {
    std::string x = name;
    if (w != 64) {
      x = fresh();
      b << "  " << x << " = " << (pick(2) ? "zext " : "sext ") << ty(w) << " " << name << " to i64\n";
    }
    pool_.push_back({x, 64});
  }

  // Vectors (issue 12): two made in memory from eight pool values, worked on lane by
  // lane in one to three steps (arithmetic, shifts, compares to masks (widened,
  // combined, or made integers), shuffles,
  // inserts, a call with vector arguments), then read out (a lane, a reduction, a cast
  // to other lanes, or the bytes through memory) into the pool. Nothing poison: shift
  // amounts are masked, shuffles pick defined lanes.
  void vector_op(std::ostringstream& b) {
    const VectorType t = kVectorTypes[pick(7)];
    const std::string T = vector_ty(t), L = ty(t.bits);
    const int bytes = t.lanes * t.bits / 8;
    for (int k = 0; k < 8; ++k) {
      std::string x = value_of(b, 64), p = fresh();
      b << "  " << p << " = getelementptr inbounds i64, ptr %mem2, i64 " << k << "\n";
      b << "  store i64 " << x << ", ptr " << p << "\n";
    }
    std::string cur = fresh(), other = fresh(), high = fresh();
    b << "  " << cur << " = load " << T << ", ptr %mem2, align 8\n";
    b << "  " << high << " = getelementptr inbounds i8, ptr %mem2, i64 32\n";
    b << "  " << other << " = load " << T << ", ptr " << high << ", align 8\n";
    for (int step = 1 + pick(3); step > 0; --step) {
      std::string r = fresh();
      switch (pick(6)) {
        case 0: {
          static const char* kOps[] = {"add", "sub", "mul", "and", "or", "xor"};
          const bool swap = pick(2);
          b << "  " << r << " = " << kOps[pick(6)] << " " << T << " " << (swap ? other : cur) << ", "
            << (swap ? cur : other) << "\n";
          break;
        }
        case 1: {
          static const char* kShifts[] = {"shl", "lshr", "ashr"};
          std::string amount = fresh();
          b << "  " << amount << " = and " << T << " " << other << ", " << splat(t, t.bits - 1) << "\n";
          b << "  " << r << " = " << kShifts[pick(3)] << " " << T << " " << cur << ", " << amount << "\n";
          break;
        }
        case 2: {
          static const char* kPreds[] = {"eq", "ne", "ugt", "uge", "ult", "ule", "sgt", "sge", "slt", "sle"};
          std::string mask = fresh();
          b << "  " << mask << " = icmp " << kPreds[pick(10)] << " " << T << " " << cur << ", " << other << "\n";
          // Half the time the mask is widened as it is; else combined with a second one
          // first, or made an integer (pmovmskb's form) a window of whose bits goes into
          // a lane.
          const int form = pick(4);
          const std::string M = "<" + std::to_string(t.lanes) + " x i1>";
          if (form == 2) {
            static const char* kMaskOps[] = {"and", "or", "xor"};
            std::string second = fresh(), both = fresh();
            b << "  " << second << " = icmp " << kPreds[pick(10)] << " " << T << " " << other << ", " << cur << "\n";
            b << "  " << both << " = " << kMaskOps[pick(3)] << " " << M << " " << mask << ", " << second << "\n";
            mask = both;
          }
          if (form == 3 && t.lanes >= 8) {  // (stamp has no i4 or i2 values)
            std::string bits = fresh(), wide = fresh(), window = fresh(), lane = window;
            b << "  " << bits << " = bitcast " << M << " " << mask << " to i" << t.lanes << "\n";
            b << "  " << wide << " = zext i" << t.lanes << " " << bits << " to i64\n";
            b << "  " << window << " = lshr i64 " << wide << ", " << pick(t.lanes) << "\n";
            if (t.bits < 64) {
              lane = fresh();
              b << "  " << lane << " = trunc i64 " << window << " to " << L << "\n";
            }
            b << "  " << r << " = insertelement " << T << " " << cur << ", " << L << " " << lane << ", i32 "
              << pick(t.lanes) << "\n";
          } else {
            b << "  " << r << " = " << (pick(2) ? "sext" : "zext") << " " << M << " " << mask << " to " << T << "\n";
          }
          break;
        }
        case 3: {
          std::string mask = "<";
          for (int k = 0; k < t.lanes; ++k) mask += (k ? ", i32 " : "i32 ") + std::to_string(pick(2 * t.lanes));
          b << "  " << r << " = shufflevector " << T << " " << cur << ", " << T << " " << other << ", <" << t.lanes
            << " x i32> " << mask << ">\n";
          break;
        }
        case 4: {
          const std::string lane = operand_of(b, t.bits);  // (its trunc first, on a line of its own)
          b << "  " << r << " = insertelement " << T << " " << cur << ", " << L << " " << lane << ", i32 "
            << pick(t.lanes) << "\n";
          break;
        }
        default:
          if (bytes == 16) {  // through @vmix's xmm registers
            std::string x = fresh(), y = fresh(), z = fresh(), scalar = value_of(b, 64);
            b << "  " << x << " = bitcast " << T << " " << cur << " to <4 x i32>\n";
            b << "  " << y << " = bitcast " << T << " " << other << " to <2 x i64>\n";
            b << "  " << z << " = call <2 x i64> @vmix(<4 x i32> " << x << ", <2 x i64> " << y << ", i64 " << scalar
              << ")\n";
            b << "  " << r << " = bitcast <2 x i64> " << z << " to " << T << "\n";
          } else {  // as bytes, and back
            const VectorType u{bytes, 8};
            std::string x = fresh(), y = fresh();
            b << "  " << x << " = bitcast " << T << " " << cur << " to " << vector_ty(u) << "\n";
            b << "  " << y << " = add " << vector_ty(u) << " " << x << ", " << splat(u, 1 + pick(200)) << "\n";
            b << "  " << r << " = bitcast " << vector_ty(u) << " " << y << " to " << T << "\n";
          }
          break;
      }
      cur = r;
    }
    std::string out = fresh();
    switch (pick(4)) {
      case 0:
        b << "  " << out << " = extractelement " << T << " " << cur << ", i32 " << pick(t.lanes) << "\n";
        add64(b, out, t.bits);
        return;
      case 1: {
        static const char* kReductions[] = {"add", "mul", "xor"};
        b << "  " << out << " = call " << L << " @llvm.vector.reduce." << kReductions[pick(3)] << "." << vector_name(t)
          << "(" << T << " " << cur << ")\n";
        add64(b, out, t.bits);
        return;
      }
      case 2:
        if (t.bits < 64 && t.lanes <= 8) {  // to i64 lanes (at most 64 bytes: %mem2), one read back
          const VectorType wide{t.lanes, 64};
          std::string x = fresh(), p = fresh();
          b << "  " << x << " = " << (pick(2) ? "sext " : "zext ") << T << " " << cur << " to " << vector_ty(wide)
            << "\n";
          b << "  store " << vector_ty(wide) << " " << x << ", ptr %mem2, align 8\n";
          b << "  " << p << " = getelementptr inbounds i64, ptr %mem2, i64 " << pick(t.lanes) << "\n";
          b << "  " << out << " = load i64, ptr " << p << "\n";
          add64(b, out, 64);
          return;
        }
        if (t.bits > 8) {  // to i8 lanes, read back whole (16 to 64 bits)
          const VectorType narrow{t.lanes, 8};
          std::string x = fresh();
          b << "  " << x << " = trunc " << T << " " << cur << " to " << vector_ty(narrow) << "\n";
          b << "  store " << vector_ty(narrow) << " " << x << ", ptr %mem2, align 8\n";
          const int w = std::min(64, t.lanes * 8);
          b << "  " << out << " = load " << ty(w) << ", ptr %mem2\n";
          add64(b, out, w);
          return;
        }
        [[fallthrough]];
      default: {
        std::string p = fresh();
        b << "  store " << T << " " << cur << ", ptr %mem2, align 8\n";
        b << "  " << p << " = getelementptr inbounds i64, ptr %mem2, i64 " << pick(std::max(1, bytes / 8)) << "\n";
        b << "  " << out << " = load i64, ptr " << p << "\n";
        add64(b, out, 64);
        return;
      }
    }
  }

  void random_op(std::ostringstream& b) {
    int w = width();
    std::string r = fresh();
    switch (pick(13)) {
      case 12:
        vector_op(b);
        return;
      case 11: {  // odd widths through calls, returns and an aggregate phi
        // Arguments made right before the call, which stamp passes on from rax.
        std::string c = value_of(b, 1), x = value_of(b, 64), y = value_of(b, 24), p = fresh(), a = fresh(), q = fresh();
        std::string nc = fresh();
        b << "  " << r << " = call i40 @odd(i64 " << x << ", i24 signext " << y << ")\n";
        b << "  " << nc << " = xor i1 " << c << ", true\n";
        b << "  " << p << " = call {i24, i48} @oddpair(i64 " << x << ", i1 " << nc << ")\n";
        b << "  " << a << " = extractvalue {i24, i48} " << p << ", 0\n";
        b << "  " << q << " = extractvalue {i24, i48} " << p << ", 1\n";
        add64(b, r, 40);
        add64(b, a, 24);
        add64(b, q, 48);
        return;
      }
      case 10: {  // bit manipulation, min/max, saturation, three-way compares and funnel shifts
        int bw = 8 * (1 + pick(8));
        std::string t = ty(bw), x = value_of(b, bw), y = value_of(b, bw);
        switch (pick(7)) {
          case 0:
            b << "  " << r << " = call " << t << " @llvm." << (pick(2) ? "ctpop." : "bitreverse.") << t << "(" << t
              << " " << x << ")\n";
            break;
          case 1:
            b << "  " << r << " = call " << t << " @llvm." << (pick(2) ? "ctlz." : "cttz.") << t << "(" << t << " " << x
              << ", i1 false)\n";
            break;
          case 2:
            b << "  " << r << " = call " << t << " @llvm.abs." << t << "(" << t << " " << x << ", i1 false)\n";
            break;
          case 3:
            if (bw != 16 && bw != 32 && bw != 64) b << "  " << r << " = add " << t << " " << x << ", " << y << "\n";
            else b << "  " << r << " = call " << t << " @llvm.bswap." << t << "(" << t << " " << x << ")\n";
            break;
          case 4: {
            static const char* kOps[] = {"umin", "umax", "smin", "smax", "uadd.sat", "usub.sat", "sadd.sat", "ssub.sat"};
            b << "  " << r << " = call " << t << " @llvm." << kOps[pick(8)] << "." << t << "(" << t << " " << x << ", "
              << t << " " << y << ")\n";
            break;
          }
          case 5: {  // the amount a value (any, even beyond the width), a constant, or a rotate's
            std::string amount = pick(2) ? value_of(b, bw) : std::to_string(pick(2 * bw));
            std::string second = pick(3) ? y : x;
            b << "  " << r << " = call " << t << " @llvm." << (pick(2) ? "fshl." : "fshr.") << t << "(" << t << " " << x
              << ", " << t << " " << second << ", " << t << " " << amount << ")\n";
            break;
          }
          default:
            b << "  " << r << " = call i8 @llvm." << (pick(2) ? "ucmp" : "scmp") << ".i8." << t << "(" << t << " " << x
              << ", " << t << " " << y << ")\n";
            add64(b, r, 8);
            return;
        }
        add64(b, r, bw);
        return;
      }
      case 9: {  // a call with stack arguments
        std::string a = value_of(b, 64), bb = value_of(b, 32), c = value_of(b, 64), d = value_of(b, 8);
        std::string e = value_of(b, 64), f = value_of(b, 16), g = value_of(b, 64), h = value_of(b, 32);
        b << "  " << r << " = call i64 @many(i64 " << a << ", i32 " << bb << ", i64 " << c << ", i8 " << d << ", i64 "
          << e << ", i16 " << f << ", i64 " << g << ", i32 signext " << h << ")\n";
        add64(b, r, 64);
        return;
      }
      case 0:
      case 1: {  // arithmetic at width w
        static const char* kOps[] = {"add",  "sub",  "mul",  "and",  "or",   "xor", "shl",
                                     "lshr", "ashr", "udiv", "urem", "sdiv", "srem"};
        const char* op = kOps[pick(13)];
        std::string x = value_of(b, w), y = value_of(b, w);
        std::string op_s(op);
        const bool shift = op_s == "shl" || op_s == "lshr" || op_s == "ashr";
        if (!pick(4) && (shift || op_s == "udiv" || op_s == "urem")) {  // a constant in range (odd: not 0)
          const uint64_t bits = rng_();
          y = w == 1 ? (shift ? "false" : "true")
                     : std::to_string(shift ? bits % static_cast<uint64_t>(w)
                                            : (w == 64 ? bits >> 1 : bits & ((uint64_t(1) << (w - 1)) - 1)) | 1);
        } else if (!shift && op_s != "udiv" && op_s != "urem" && op_s != "sdiv" && op_s != "srem") {
          y = operand_of(b, w);
        } else if (shift) {  // keep shift amounts in range
          std::string m = fresh();
          b << "  " << m << " = and " << ty(w) << " " << y << ", " << (w - 1) << "\n";
          y = m;
        } else if (op_s == "udiv" || op_s == "urem") {  // no division by zero
          std::string m = fresh();
          b << "  " << m << " = or " << ty(w) << " " << y << ", 1\n";
          y = m;
        } else if (op_s == "sdiv" || op_s == "srem") {  // positive divisor: no overflow
          if (w == 1) {
            op_s = "and";
          } else {
            std::string m = fresh(), n = fresh();
            b << "  " << m << " = lshr " << ty(w) << " " << y << ", 1\n";
            b << "  " << n << " = or " << ty(w) << " " << m << ", 1\n";
            y = n;
          }
        }
        b << "  " << r << " = " << op_s << " " << ty(w) << " " << x << ", " << y << "\n";
        add64(b, r, w);
        return;
      }
      case 2: {  // compare and select
        static const char* kPreds[] = {"eq", "ne", "ugt", "uge", "ult", "ule", "sgt", "sge", "slt", "sle"};
        std::string x = value_of(b, w), y = operand_of(b, w), c = fresh();
        b << "  " << c << " = icmp " << kPreds[pick(10)] << " " << ty(w) << " " << x << ", " << y << "\n";
        b << "  " << r << " = select i1 " << c << ", " << ty(w) << " " << x << ", " << ty(w) << " " << y << "\n";
        add64(b, r, w);
        add64(b, c, 1);
        if (w == 1) {  // || as clang writes it (&& is the select above with a false y)
          std::string o = fresh();
          b << "  " << o << " = select i1 " << c << ", i1 true, i1 " << x << "\n";
          add64(b, o, 1);
        }
        return;
      }
      case 3: {  // store then load through a variable index into the frame array
        int sw = w == 1 ? 8 : w;
        std::string idx = value_of(b, 64), masked = fresh(), p = fresh(), v = operand_of(b, sw), l = fresh();
        b << "  " << masked << " = and i64 " << idx << ", 7\n";
        b << "  " << p << " = getelementptr inbounds [8 x i64], ptr %mem, i64 0, i64 " << masked << "\n";
        b << "  store " << ty(sw) << " " << v << ", ptr " << p << "\n";
        std::string idx2 = value_of(b, 64), masked2 = fresh(), p2 = fresh();
        b << "  " << masked2 << " = and i64 " << idx2 << ", 7\n";
        b << "  " << p2 << " = getelementptr inbounds i64, ptr %mem, i64 " << masked2 << "\n";
        b << "  " << l << " = load " << ty(sw) << ", ptr " << p2 << "\n";
        add64(b, l, sw);
        return;
      }
      case 4: {  // call the helper (i32 and a signext i8)
        std::string x = value_of(b, 32), y = value_of(b, 8);
        b << "  " << r << " = call i32 @helper(i32 " << x << ", i8 signext " << y << ")\n";
        add64(b, r, 32);
        return;
      }
      case 5: {  // overflow check at a random width
        static const char* kIntr[] = {"llvm.uadd.with.overflow.i64", "llvm.smul.with.overflow.i32",
                                      "llvm.usub.with.overflow.i16", "llvm.sadd.with.overflow.i8"};
        static const int kW[] = {64, 32, 16, 8};
        int k = pick(4);
        std::string x = value_of(b, kW[k]), y = value_of(b, kW[k]), s = fresh(), o = fresh();
        b << "  " << r << " = call {" << ty(kW[k]) << ", i1} @" << kIntr[k] << "(" << ty(kW[k]) << " " << x << ", "
          << ty(kW[k]) << " " << y << ")\n";
        b << "  " << s << " = extractvalue {" << ty(kW[k]) << ", i1} " << r << ", 0\n";
        b << "  " << o << " = extractvalue {" << ty(kW[k]) << ", i1} " << r << ", 1\n";
        add64(b, s, kW[k]);
        add64(b, o, 1);
        return;
      }
      case 6: {  // aggregates returned in two registers, and a select of them
        std::string x = value_of(b, 64), y = value_of(b, 64), k = value_of(b, 1), p = fresh(), q = fresh();
        std::string a = fresh(), c = fresh();
        b << "  " << p << " = call {i64, i32} @pair(i64 " << x << ")\n";
        b << "  " << q << " = call {i64, i32} @pair(i64 " << y << ")\n";
        b << "  " << r << " = select i1 " << k << ", {i64, i32} " << p << ", {i64, i32} " << q << "\n";
        b << "  " << a << " = extractvalue {i64, i32} " << r << ", 0\n";
        b << "  " << c << " = extractvalue {i64, i32} " << r << ", 1\n";
        add64(b, a, 64);
        add64(b, c, 32);
        return;
      }
      case 7: {  // memcpy between frame arrays, then read back
        std::string l = fresh();
        b << "  call void @llvm.memcpy.p0.p0.i64(ptr %mem2, ptr %mem, i64 64, i1 false)\n";
        // Vectors moved as values: a 32-byte and a 16-byte load and store.
        std::string v = fresh(), w = fresh(), at = fresh();
        b << "  " << v << " = load <4 x i64>, ptr %mem, align 8\n";
        b << "  " << at << " = getelementptr i8, ptr %mem2, i64 " << 8 * pick(4) << "\n";
        b << "  store <4 x i64> " << v << ", ptr " << at << ", align 8\n";
        b << "  " << w << " = load <2 x i64>, ptr " << at << ", align 8\n";
        b << "  store <2 x i64> " << w << ", ptr %mem2, align 8\n";
        b << "  " << l << " = load i64, ptr %mem2\n";
        add64(b, l, 64);
        return;
      }
      default: {  // width changes
        std::string x = value_of(b, w);
        if (w == 64) {
          b << "  " << r << " = trunc i64 " << x << " to i16\n";
          add64(b, r, 16);
        } else {
          b << "  " << r << " = " << (pick(2) ? "sext " : "zext ") << ty(w) << " " << x << " to i64\n";
          add64(b, r, 64);
        }
        return;
      }
    }
  }

  std::string combine(std::ostringstream& b) {
    std::string acc = pool_[0].name;
    for (size_t i = 1; i < pool_.size(); ++i) {
      std::string t = fresh();
      b << "  " << t << " = " << (i % 2 ? "xor" : "add") << " i64 " << acc << ", " << pool_[i].name << "\n";
      acc = t;
    }
    return acc;
  }

  std::string function(const std::string& name) {
    std::ostringstream b;
    pool_ = {{"%a", 64}, {"%b", 64}, {"%c", 64}};
    b << "define i64 @" << name << "(i64 %a, i64 %b, i64 %c) {\nentry:\n";
    b << "  %mem = alloca [8 x i64], align 8\n  %mem2 = alloca [8 x i64], align 8\n  %life = alloca i64, align 8\n";
    // Arguments spilled first thing (from their registers: store_from_arg_register;
    // the third overwrites the first; %c comes in rdx, which stamp stores from its slot),
    // then read back: every value stored from a register is read.
    b << "  %sa = alloca i64, align 8\n  %sc = alloca [2 x i64], align 8\n  %sc1 = getelementptr inbounds i8, ptr %sc, i64 8\n";
    // A select of i128 (its template uses rdi, where %a came) before them in half the
    // functions, so that they are stored from their slots there and from their
    // registers in the other half.
    const char* wide_select =
        "  %wc = trunc i64 %c to i1\n  %wsel = select i1 %wc, i128 5, i128 340282366920938463463374607431768211455\n";
    const bool select_first = pick(2) == 0;
    if (select_first) b << wide_select;
    b << "  store i64 %b, ptr %sa\n  store i64 %a, ptr %sc\n  store i64 %a, ptr %sa\n  store i64 %c, ptr %sc1\n";
    if (!select_first) b << wide_select;
    // An over-aligned alloca: its address must honour the alignment.
    b << "  %big = alloca [4 x i64], align 64\n  store i64 %a, ptr %big\n  %bigv = load i64, ptr %big\n";
    b << "  %bigp = ptrtoint ptr %big to i64\n  %bigm = and i64 %bigp, 63\n  %bigx0 = add i64 %bigv, %bigm\n";
    // Constant offsets from a pointer that is no frame address, each the address of the
    // access right after it (stamp adds the offset there: gep_offset_folds): stores of
    // a value, of a constant and of an i24, loads at 64, 32 and 24 bits, a negative
    // offset; then an index of stride 1 from a slot (added as a memory operand).
    b << "  %bg1 = getelementptr inbounds i8, ptr %big, i64 8\n  store i64 %b, ptr %bg1\n";
    b << "  %bg2 = getelementptr inbounds i8, ptr %big, i64 16\n  store i32 -7, ptr %bg2\n";
    b << "  %bgt = trunc i64 %c to i24\n  %bg3 = getelementptr inbounds i8, ptr %big, i64 20\n  store i24 %bgt, ptr %bg3\n";
    b << "  %bg4 = getelementptr inbounds i8, ptr %big, i64 24\n  %bg5 = getelementptr inbounds i8, ptr %bg4, i64 -16\n";
    b << "  %bgv = load i64, ptr %bg5\n  %bg6 = getelementptr inbounds i8, ptr %big, i64 16\n  %bgw32 = load i32, ptr %bg6\n";
    b << "  %bg7 = getelementptr inbounds i8, ptr %big, i64 20\n  %bgy = load i24, ptr %bg7\n  %bgy64 = zext i24 %bgy to i64\n";
    b << "  %bgo = and i64 %b, 8\n  %bgq = getelementptr inbounds i8, ptr %big, i64 %bgo\n  %bgz = load i64, ptr %bgq\n";
    b << "  %bgw = sext i32 %bgw32 to i64\n  %bgs0 = add i64 %bgv, %bgw\n  %bgs = xor i64 %bgs0, %bgz\n";
    b << "  %bgs2 = xor i64 %bgs, %bgy64\n  %bigx = add i64 %bigx0, %bgs2\n";
    // Direct frame accesses: an alloca and a constant offset into another.
    b << "  %cell = alloca i32, align 4\n  %t32 = trunc i64 %b to i32\n  store i32 %t32, ptr %cell\n";
    b << "  %f1 = getelementptr inbounds i8, ptr %mem2, i64 12\n  store i32 %t32, ptr %f1\n  store i16 7, ptr %f1\n";
    b << "  %cellv = load i32, ptr %cell\n  %f1v = load i24, ptr %f1\n  %cell64 = zext i32 %cellv to i64\n";
    b << "  %f164 = zext i24 %f1v to i64\n  %cellx = xor i64 %cell64, %f164\n";
    for (int k = 0; k < 8; ++k) {
      b << "  %init" << k << " = getelementptr [8 x i64], ptr %mem, i64 0, i64 " << k << "\n";
      b << "  store i64 " << (k % 3 == 0 ? "%a" : k % 3 == 1 ? "%b" : "%c") << ", ptr %init" << k << "\n";
    }
    // Loads from the frame whose one user comes after a store or a call that writes
    // that memory: stamp must not fold them into their users (load_folds); the last one
    // it folds into the add right after it.
    b << "  %fold = alloca i64, align 8\n  store i64 %b, ptr %fold\n  %foldv = load i64, ptr %fold\n";
    b << "  store i64 %c, ptr %fold\n  %foldx = xor i64 %foldv, 5\n  %foldw = load i16, ptr %fold\n";
    b << "  call void @llvm.memcpy.p0.p0.i64(ptr %fold, ptr %mem, i64 8, i1 false)\n";
    b << "  %foldy = zext i16 %foldw to i64\n  %folds = add i64 %foldx, %foldy\n";
    b << "  %foldz = load i64, ptr %fold\n  %foldr = add i64 %foldz, %folds\n";
    // Loads right after a store: of the same frame address and width (stamp takes the
    // value from rax: load_forwards), of a narrower width, and of another offset.
    b << "  %fw = alloca [2 x i64], align 8\n  %fw1 = getelementptr inbounds i8, ptr %fw, i64 8\n";
    b << "  store i64 -1, ptr %fw1\n  %fa8 = trunc i64 %a to i8\n  store i8 %fa8, ptr %fw1\n";
    b << "  %fwv = load i8, ptr %fw1\n  store i64 %b, ptr %fw\n  %fwn = load i32, ptr %fw\n";
    b << "  store i64 %c, ptr %fw\n  %fwo = load i64, ptr %fw1\n  %fb1 = trunc i64 %b to i1\n";
    b << "  store i1 %fb1, ptr %fw\n  %fbv = load i1, ptr %fw\n  %fwv64 = sext i8 %fwv to i64\n";
    b << "  %fwn64 = zext i32 %fwn to i64\n  %fbv64 = zext i1 %fbv to i64\n  %fwx = xor i64 %fwv64, %fwn64\n";
    b << "  %fwy = add i64 %fwx, %fwo\n  %fwz = mul i64 %fwy, %fbv64\n  %fwr = add i64 %fwz, %fwy\n";
    // Constants stored into the frame at every width, one beyond a 64-bit store's imm32.
    b << "  %imm = alloca [3 x i64], align 8\n  store i64 -2147483648, ptr %imm\n";
    b << "  %imm1 = getelementptr inbounds i8, ptr %imm, i64 8\n  store i64 4294967296, ptr %imm1\n";
    b << "  %imm2 = getelementptr inbounds i8, ptr %imm, i64 16\n  store i32 -7, ptr %imm2\n";
    b << "  %imm3 = getelementptr inbounds i8, ptr %imm, i64 20\n  store i16 -300, ptr %imm3\n";
    b << "  %imm4 = getelementptr inbounds i8, ptr %imm, i64 22\n  store i8 200, ptr %imm4\n";
    b << "  %imm5 = getelementptr inbounds i8, ptr %imm, i64 23\n  store i1 true, ptr %imm5\n";
    b << "  %immv = load i64, ptr %imm\n  %immw = load i64, ptr %imm1\n  %immy = load i64, ptr %imm2\n";
    b << "  %immz = xor i64 %immv, %immw\n  %immx0 = xor i64 %immz, %immy\n  %sav = load i64, ptr %sa\n";
    b << "  %scv = load i64, ptr %sc1\n  %sc0v = load i64, ptr %sc\n  %sax = mul i64 %sav, %scv\n";
    b << "  %sa2 = add i64 %sax, %sc0v\n  %wsel64 = trunc i128 %wsel to i64\n  %sa3 = xor i64 %sa2, %wsel64\n";
    b << "  %immx = xor i64 %immx0, %sa3\n";
    pool_.push_back({"%bigx", 64});
    pool_.push_back({"%cellx", 64});
    pool_.push_back({"%foldr", 64});
    pool_.push_back({"%immx", 64});
    pool_.push_back({"%fwr", 64});
    int straight = 3 + pick(6);
    for (int i = 0; i < straight; ++i) random_op(b);
    std::string start = combine(b);
    int trips = 1 + pick(6);
    b << "  br label %loop\nloop:\n";
    // Two back edges: join's, and hop's (from join), where keep comes back as itself:
    // join's copies must not overwrite keep on its way to hop.
    b << "  %i = phi i64 [ 0, %entry ], [ %i.next, %join ], [ %i.next, %hop ]\n";
    b << "  %acc = phi i64 [ " << start << ", %entry ], [ %acc.next, %join ], [ %acc.next, %hop ]\n";
    b << "  %carry = phi i64 [ %c, %entry ], [ %fld0, %join ], [ %fld0, %hop ]\n";
    b << "  %keep = phi i64 [ %b, %entry ], [ %keep.next, %join ], [ %keep, %hop ]\n";
    pool_ = {{"%acc", 64}, {"%i", 64}, {"%a", 64}, {"%keep", 64}};
    for (int i = 0; i < 2 + pick(4); ++i) random_op(b);
    std::string mid = combine(b);
    // An aggregate made again in every iteration, whose fields stamp reads in place
    // (field_folds): one goes to the next iteration through a phi (read at the end of
    // join, before the aggregate is made again) and to the exit block, the others to
    // the branches, one of them an i1.
    b << "  %fa = insertvalue {i64, i8, i1} poison, i64 " << mid << ", 0\n  %fc8 = trunc i64 %carry to i8\n";
    b << "  %fb = insertvalue {i64, i8, i1} %fa, i8 %fc8, 1\n  %fcb = trunc i64 %i to i1\n";
    b << "  %fd = insertvalue {i64, i8, i1} %fb, i1 %fcb, 2\n  %fld0 = extractvalue {i64, i8, i1} %fd, 0\n";
    b << "  %fld1 = extractvalue {i64, i8, i1} %fd, 1\n  %fld2 = extractvalue {i64, i8, i1} %fd, 2\n";
    b << "  %fld1w = sext i8 %fld1 to i64\n  %fld2w = zext i1 %fld2 to i64\n";
    // Lifetime markers (no code) between a value and its one user, which takes it from
    // rax (rax_holds), and between a compare and the branch on its flags.
    b << "  %cmid = and i64 " << mid << ", 5\n  call void @llvm.lifetime.start.p0(ptr %life)\n";
    b << "  %cond = icmp ugt i64 %cmid, 2\n  call void @llvm.lifetime.end.p0(ptr %life)\n";
    b << "  br i1 %cond, label %then, label %else\nthen:\n";
    // The compare read again after its branch: it keeps a slot, and the branch still
    // jumps on its flags (compare_flags_reach).
    b << "  %condw = zext i1 %cond to i64\n";
    pool_ = {{mid, 64}, {"%i", 64}, {"%fld1w", 64}, {"%condw", 64}};
    for (int i = 0; i < 1 + pick(3); ++i) random_op(b);
    std::string t = combine(b);
    b << "  br label %join\nelse:\n";
    pool_ = {{mid, 64}, {"%b", 64}, {"%fld2w", 64}, {"%carry", 64}};
    for (int i = 0; i < 1 + pick(3); ++i) random_op(b);
    std::string e = combine(b);
    b << "  br label %join\njoin:\n";
    b << "  %acc.next = phi i64 [ " << t << ", %then ], [ " << e << ", %else ]\n";
    b << "  %i.next = add i64 %i, 1\n  %more = icmp ult i64 %i.next, " << trips << "\n";
    b << "  %keep.next = add i64 %keep, %acc.next\n  %par = and i64 %acc.next, 1\n";
    b << "  %stay = icmp eq i64 %par, 0\n  %go = and i1 %more, %stay\n";
    b << "  br i1 %go, label %loop, label %hop\nhop:\n";
    b << "  br i1 %more, label %loop, label %exit\nexit:\n";
    b << "  %out = add i64 %acc.next, %fld0\n  %sel = and i64 %out, 3\n";
    b << "  switch i64 %sel, label %d [ i64 0, label %s0\n i64 1, label %s1\n i64 2, label %s1 ]\n";
    b << "s0:\n  %r0 = mul i64 %out, 31\n  ret i64 %r0\n";
    b << "s1:\n  %r1 = xor i64 %out, -6148914691236517206\n  ret i64 %r1\n";
    b << "d:\n  ret i64 %out\n}\n";
    // Names must be unique per function: renumber by prefixing the function name.
    std::string text = b.str();
    return text;
  }

  std::mt19937_64 rng_;
  std::vector<Value> pool_;
  int counter_ = 0;
};

const char* kDriver = R"(
#include <stdint.h>
#include <stdio.h>
#define N FUNCTIONS
typedef int64_t (*fn)(int64_t, int64_t, int64_t);
DECLS
int main(void) {
  fn fns[N] = {TABLE};
  uint64_t s = SEED;
  for (int round = 0; round < 64; ++round) {
    int64_t in[3];
    for (int k = 0; k < 3; ++k) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; in[k] = (int64_t)s >> (round % 40); }
    for (int f = 0; f < N; ++f) printf("%d %d %lld\n", round, f, (long long)fns[f](in[0], in[1], in[2]));
  }
  return 0;
}
)";

std::string replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size()) s.replace(p, from.size(), to);
  return s;
}

}  // namespace

TEST_CASE("stamp and llvm compute the same results on random programs", "[stamp][differential]") {
  const char* count_env = std::getenv("KILN_DIFFERENTIAL_COUNT");
  const char* seed_env = std::getenv("KILN_DIFFERENTIAL_SEED");
  int modules = count_env ? std::atoi(count_env) : 12;
  uint64_t seed = seed_env ? std::strtoull(seed_env, nullptr, 10) : 1;
  const int kFunctions = 8;
  kiln_test::ScratchDir dir;
  uint64_t stamp_functions = 0;
  for (int m = 0; m < modules; ++m) {
    uint64_t s = seed + static_cast<uint64_t>(m);
    INFO("seed " << s << " (rerun: KILN_DIFFERENTIAL_SEED=" << s << " KILN_DIFFERENTIAL_COUNT=1)");
    std::string ir = IrGenerator(s).module(kFunctions);
    write_file_atomic(dir.path + "/module.ll", ir);
    std::string bitcode = kiln_test::bitcode_from_ir(ir);
    // The direct reader must make of it exactly what LLVM's parser and exporter make.
    ReaderComparison reader = compare_reader(bitcode, "seed " + std::to_string(s));
    INFO("direct reader: " << outcome_name(reader.outcome) << ": " << reader.detail);
    CHECK(reader.outcome == ReaderComparison::kIdentical);
    std::string decls, table;
    for (int f = 0; f < kFunctions; ++f) {
      decls += "int64_t f" + std::to_string(f) + "(int64_t, int64_t, int64_t);\n";
      table += (f ? ", f" : "f") + std::to_string(f);
    }
    std::string driver =
        replace(replace(replace(replace(kDriver, "FUNCTIONS", std::to_string(kFunctions)), "DECLS", decls), "TABLE",
                        table),
                "SEED", std::to_string(s * 2654435761u + 1) + "ull");
    write_file_atomic(dir.path + "/driver.c", driver);
    ProcessOptions quiet;
    quiet.quiet = true;
    REQUIRE(run_process({"cc", "-c", "-O1", "-o", dir.path + "/driver.o", dir.path + "/driver.c"}, quiet).exit_code ==
            0);
    std::string expected = run_with("llvm", bitcode, dir.path + "/driver.o", dir.path, nullptr);
    EmitCounts counts;
    std::string actual = run_with("stamp", bitcode, dir.path + "/driver.o", dir.path, &counts);
    stamp_functions += counts.functions_stamp;
    CHECK(counts.functions_llvm == 0);  // every generated function is in stamp's contract
    REQUIRE(expected.size() > 0);
    if (expected != actual) write_file_atomic("/tmp/kiln-differential-failure.ll", ir);
    REQUIRE(expected == actual);
  }
  CHECK(stamp_functions == static_cast<uint64_t>(modules) * (kFunctions + 6));
}

// Builds f0 from `ir` with both back ends, links each with the driver and runs them:
// their outputs, llvm's first.
static std::pair<std::string, std::string> run_f0_both(const std::string& ir, const char* seed, EmitCounts* counts) {
  kiln_test::ScratchDir dir;
  std::string bitcode = kiln_test::bitcode_from_ir(ir);
  std::string driver =
      replace(replace(replace(replace(kDriver, "FUNCTIONS", "1"), "DECLS", "int64_t f0(int64_t, int64_t, int64_t);\n"),
                      "TABLE", "f0"),
              "SEED", seed);
  write_file_atomic(dir.path + "/driver.c", driver);
  ProcessOptions quiet;
  quiet.quiet = true;
  REQUIRE(run_process({"cc", "-c", "-o", dir.path + "/driver.o", dir.path + "/driver.c"}, quiet).exit_code == 0);
  std::string expected = run_with("llvm", bitcode, dir.path + "/driver.o", dir.path, nullptr);
  return {expected, run_with("stamp", bitcode, dir.path + "/driver.o", dir.path, counts)};
}

TEST_CASE("aggregate constants (stored, returned through a phi) come out the same", "[stamp][differential]") {
  const char* ir = R"(
target triple = "x86_64-unknown-linux-gnu"
define { i64, i64 } @pairc(i1 %c) {
entry:
  br i1 %c, label %a, label %b
a:
  br label %j
b:
  br label %j
j:
  %p = phi { i64, i64 } [ { i64 3, i64 4 }, %a ], [ { i64 5, i64 6 }, %b ]
  ret { i64, i64 } %p
}
define i64 @f0(i64 %a, i64 %b, i64 %c) {
  %m = alloca [3 x i32], align 4
  store [3 x i32] [i32 7, i32 8, i32 9], ptr %m
  %i = and i64 %a, 1
  %g = getelementptr [3 x i32], ptr %m, i64 0, i64 %i
  %v = load i32, ptr %g
  %t = trunc i64 %b to i1
  %r = call { i64, i64 } @pairc(i1 %t)
  %x = extractvalue { i64, i64 } %r, 0
  %y = extractvalue { i64, i64 } %r, 1
  %v64 = zext i32 %v to i64
  %s = add i64 %x, %y
  %u = mul i64 %s, %v64
  ret i64 %u
}
)";
  EmitCounts counts;
  auto [expected, actual] = run_f0_both(ir, "12345ull", &counts);
  CHECK(actual == expected);
  CHECK(counts.functions_stamp == 2);
}

TEST_CASE("globals holding pointers made from integers (Rust's dangling NonNull) come out the same",
          "[stamp][differential]") {
  const char* ir = R"(
target triple = "x86_64-unknown-linux-gnu"
@dangling = global { ptr, i64, ptr, i32 } { ptr inttoptr (i64 8 to ptr), i64 3, ptr inttoptr (i64 -16 to ptr), i32 5 }, align 8
@narrow = constant ptr inttoptr (i32 -1 to ptr), align 8
define i64 @f0(i64 %a, i64 %b, i64 %c) {
  %p = load ptr, ptr @dangling
  %q = getelementptr i8, ptr @dangling, i64 16
  %r = load ptr, ptr %q
  %n = load ptr, ptr @narrow
  %x = ptrtoint ptr %p to i64
  %y = ptrtoint ptr %r to i64
  %z = ptrtoint ptr %n to i64
  %s = add i64 %x, %y
  %t = xor i64 %s, %z
  %u = mul i64 %t, %a
  ret i64 %u
}
)";
  EmitCounts counts;
  auto [expected, actual] = run_f0_both(ir, "777ull", &counts);
  CHECK(actual == expected);
  CHECK(counts.functions_stamp == 1);
  CHECK(counts.functions_llvm == 0);
  // Both readers make the same global data of it, and take the module whole.
  ReaderComparison reader = compare_reader(kiln_test::bitcode_from_ir(ir), "dangling");
  INFO(outcome_name(reader.outcome) << ": " << reader.detail);
  CHECK(reader.outcome == ReaderComparison::kIdentical);
  CHECK(reader.whole);
}

// f0 runs every atomic operation stamp compiles, at 8, 16, 32 and 64 bits (on a local
// cell and, for 64 bits, a global one), and folds every result into what it returns.
static std::string atomics_module() {
  std::ostringstream ir;
  ir << "target triple = \"x86_64-unknown-linux-gnu\"\n@cell64 = global i64 0, align 8\n";
  ir << "define i64 @f0(i64 %a, i64 %b, i64 %c) {\n";
  std::string acc = "0";
  int n = 0;
  auto fold = [&](const std::string& value, int w, int factor, const char* op) {
    int k = ++n;
    if (w < 64) ir << "  %z" << k << " = zext i" << w << " " << value << " to i64\n";
    else ir << "  %z" << k << " = add i64 " << value << ", 0\n";
    ir << "  %s" << k << " = mul i64 " << acc << ", " << factor << "\n";
    ir << "  %acc" << k << " = " << op << " i64 %s" << k << ", %z" << k << "\n";
    acc = "%acc" + std::to_string(k);
  };
  for (int w : {8, 16, 32, 64}) {
    std::string t = "i" + std::to_string(w), al = ", align " + std::to_string(w / 8);
    std::string cell = w == 64 ? "@cell64" : "%m" + std::to_string(w);
    if (w < 64) ir << "  " << cell << " = alloca " << t << al << "\n";
    for (const char* x : {"a", "b", "c"}) {
      if (w < 64) ir << "  %" << x << w << " = trunc i64 %" << x << " to " << t << "\n";
      else ir << "  %" << x << w << " = add i64 %" << x << ", 0\n";
    }
    std::string a = "%a" + std::to_string(w), b = "%b" + std::to_string(w), c = "%c" + std::to_string(w);
    ir << "  store atomic " << t << " " << a << ", ptr " << cell << " seq_cst" << al << "\n";
    for (const char* op : {"add", "sub", "xchg", "and", "or", "xor", "nand"}) {
      std::string r = "%r" + std::to_string(++n);
      ir << "  " << r << " = atomicrmw " << op << " ptr " << cell << ", " << t << " " << b << " seq_cst" << al << "\n";
      fold(r, w, 31, "xor");
    }
    std::string id = std::to_string(++n);
    ir << "  %cur" << id << " = load atomic " << t << ", ptr " << cell << " acquire" << al << "\n";
    ir << "  %x" << id << " = cmpxchg ptr " << cell << ", " << t << " %cur" << id << ", " << t << " " << c
       << " seq_cst seq_cst" << al << "\n";
    ir << "  %y" << id << " = cmpxchg weak ptr " << cell << ", " << t << " " << a << ", " << t << " " << b
       << " acq_rel monotonic" << al << "\n";
    ir << "  fence seq_cst\n  fence acquire\n";
    ir << "  %fin" << id << " = load atomic " << t << ", ptr " << cell << " seq_cst" << al << "\n";
    for (const char* pair : {"x", "y"}) {
      ir << "  %" << pair << "o" << id << " = extractvalue { " << t << ", i1 } %" << pair << id << ", 0\n";
      ir << "  %" << pair << "s" << id << " = extractvalue { " << t << ", i1 } %" << pair << id << ", 1\n";
      fold("%" + std::string(pair) + "o" + id, w, 31, "xor");
      fold("%" + std::string(pair) + "s" + id, 1, 3, "add");
    }
    fold("%fin" + id, w, 31, "xor");
  }
  ir << "  ret i64 " << acc << "\n}\n";
  return ir.str();
}

TEST_CASE("atomics (load, store, atomicrmw, cmpxchg, fence) at every width come out the same",
          "[stamp][differential]") {
  EmitCounts counts;
  auto [expected, actual] = run_f0_both(atomics_module(), "987654321ull", &counts);
  CHECK(actual == expected);
  CHECK(counts.functions_stamp == 1);
  CHECK(counts.functions_llvm == 0);
}

// fastcc (8) and x86_64_sysvcc (78) are the C convention on x86-64 ELF: callers and
// callees built by different back ends must agree. The callees' module and the
// caller's are each built by stamp and by llvm, and all four pairings must print what
// llvm's pair prints.
TEST_CASE("fastcc and x86_64_sysvcc calls agree across stamp's and llvm's objects", "[stamp][differential]") {
  const std::string head = "target triple = \"x86_64-unknown-linux-gnu\"\n%S = type { i64, i64, i64 }\n";
  std::string callees = head + R"(
define fastcc i64 @many(i64 %a, i32 %b, i64 %c, i8 zeroext %d, i64 %e, i16 signext %f, i64 %g, i32 signext %h) {
  %b64 = zext i32 %b to i64
  %d64 = zext i8 %d to i64
  %f64 = sext i16 %f to i64
  %h64 = sext i32 %h to i64
  %s1 = add i64 %a, %b64
  %s2 = mul i64 %s1, %c
  %s3 = xor i64 %s2, %d64
  %s4 = sub i64 %s3, %e
  %s5 = add i64 %s4, %f64
  %s6 = mul i64 %s5, %g
  %s7 = add i64 %s6, %h64
  ret i64 %s7
}
define x86_64_sysvcc { i64, i32 } @pair(i64 %x) {
  %t = trunc i64 %x to i32
  %a = insertvalue { i64, i32 } poison, i64 %x, 0
  %b = insertvalue { i64, i32 } %a, i32 %t, 1
  ret { i64, i32 } %b
}
define fastcc void @fill(ptr sret(%S) %out, i64 %x, ptr %in) {
  %p = getelementptr %S, ptr %in, i64 0, i32 2
  %v = load i64, ptr %p
  %s = add i64 %v, %x
  store i64 %s, ptr %out
  %o1 = getelementptr %S, ptr %out, i64 0, i32 1
  store i64 %v, ptr %o1
  %o2 = getelementptr %S, ptr %out, i64 0, i32 2
  store i64 %x, ptr %o2
  ret void
}
)";
  std::string caller = head + R"(
declare fastcc i64 @many(i64, i32, i64, i8 zeroext, i64, i16 signext, i64, i32 signext)
declare x86_64_sysvcc { i64, i32 } @pair(i64)
declare fastcc void @fill(ptr sret(%S), i64, ptr)
define i64 @f0(i64 %a, i64 %b, i64 %c) {
  %b32 = trunc i64 %b to i32
  %c8 = trunc i64 %c to i8
  %a16 = trunc i64 %a to i16
  %c32 = trunc i64 %c to i32
  %m = call fastcc i64 @many(i64 %a, i32 %b32, i64 %c, i8 zeroext %c8, i64 %b, i16 signext %a16, i64 %a, i32 signext %c32)
  %p = call x86_64_sysvcc { i64, i32 } @pair(i64 %m)
  %p0 = extractvalue { i64, i32 } %p, 0
  %p1 = extractvalue { i64, i32 } %p, 1
  %in = alloca %S, align 8
  %out = alloca %S, align 8
  %i2 = getelementptr %S, ptr %in, i64 0, i32 2
  store i64 %b, ptr %i2
  call fastcc void @fill(ptr sret(%S) %out, i64 %p0, ptr %in)
  %o0 = load i64, ptr %out
  %o1p = getelementptr %S, ptr %out, i64 0, i32 1
  %o1 = load i64, ptr %o1p
  %q = sext i32 %p1 to i64
  %r1 = xor i64 %o0, %q
  %r2 = mul i64 %r1, %o1
  ret i64 %r2
}
)";
  kiln_test::ScratchDir dir;
  std::string driver = replace(replace(replace(replace(kDriver, "FUNCTIONS", "1"), "DECLS",
                                               "int64_t f0(int64_t, int64_t, int64_t);\n"),
                                       "TABLE", "f0"),
                               "SEED", "424242ull");
  write_file_atomic(dir.path + "/driver.c", driver);
  ProcessOptions quiet;
  quiet.quiet = true;
  REQUIRE(run_process({"cc", "-c", "-o", dir.path + "/driver.o", dir.path + "/driver.c"}, quiet).exit_code == 0);
  const std::string callee_bc = kiln_test::bitcode_from_ir(callees), caller_bc = kiln_test::bitcode_from_ir(caller);
  for (const char* backend : {"llvm", "stamp"}) {
    auto b = make_backend(backend, Profile::fast);
    EmitResult callee_obj = b->emit(callee_bc, "callees.bc"), caller_obj = b->emit(caller_bc, "caller.bc");
    if (std::string(backend) == "stamp") {
      CHECK(callee_obj.counts.functions_stamp == 3);
      CHECK(caller_obj.counts.functions_stamp == 1);
      CHECK(callee_obj.counts.functions_llvm + caller_obj.counts.functions_llvm == 0);
    }
    write_file_atomic(dir.path + "/callees-" + backend + ".o", callee_obj.object);
    write_file_atomic(dir.path + "/caller-" + backend + ".o", caller_obj.object);
  }
  std::map<std::string, std::string> outputs;
  for (const char* callee_backend : {"llvm", "stamp"})
    for (const char* caller_backend : {"llvm", "stamp"}) {
      const std::string exe = dir.path + "/run-" + callee_backend + "-" + caller_backend;
      REQUIRE(run_process({"cc", "-o", exe, dir.path + "/driver.o", dir.path + "/callees-" + callee_backend + ".o",
                           dir.path + "/caller-" + caller_backend + ".o"},
                          quiet)
                  .exit_code == 0);
      ProcessOptions capture;
      capture.capture_stdout = true;
      ProcessResult run = run_process({exe}, capture);
      REQUIRE(run.exit_code == 0);
      outputs[std::string(callee_backend) + "/" + caller_backend] = run.captured_stdout;
    }
  REQUIRE(outputs["llvm/llvm"].size() > 0);
  for (const auto& [pairing, output] : outputs) {
    INFO("callees/caller: " << pairing);
    CHECK(output == outputs["llvm/llvm"]);
  }
}

// Funnel shifts (general, rotates, constant amounts) and saturating add and subtract
// at every width stamp holds, each as a function of (a, b, s) on i64 that truncates
// its arguments to the width. The amount is truncated last, so that the instruction
// right before the call leaves a or s in rax.
static std::string edge_module(std::vector<std::string>* funnel, std::vector<std::string>* saturating) {
  std::ostringstream ir;
  ir << "target triple = \"x86_64-unknown-linux-gnu\"\n";
  auto define = [&](const std::string& name, int w, const std::string& call) {
    std::string t = "i" + std::to_string(w);
    ir << "define i64 @" << name << "(i64 %a, i64 %b, i64 %s) {\n";
    for (const char* v : {"s", "b", "a"}) {
      if (w < 64) ir << "  %" << v << "w = trunc i64 %" << v << " to " << t << "\n";
      else ir << "  %" << v << "w = add i64 %" << v << ", 0\n";
    }
    ir << "  %r = call " << t << " " << call << "\n";
    if (w < 64) ir << "  %e = zext " << t << " %r to i64\n  ret i64 %e\n}\n";
    else ir << "  ret i64 %r\n}\n";
  };
  for (int w = 8; w <= 64; w += 8) {
    std::string t = "i" + std::to_string(w), ws = std::to_string(w);
    for (const char* f : {"fshl", "fshr"}) {
      ir << "declare " << t << " @llvm." << f << "." << t << "(" << t << ", " << t << ", " << t << ")\n";
      std::string callee = std::string("@llvm.") + f + "." + t + "(";
      std::vector<std::pair<std::string, std::string>> forms = {
          {"", t + " %aw, " + t + " %bw, " + t + " %sw)"},                         // general
          {"_rot", t + " %aw, " + t + " %aw, " + t + " %sw)"},                     // rotate
          {"_c3", t + " %aw, " + t + " %bw, " + t + " 3)"},                        // constant amount
          {"_cw", t + " %aw, " + t + " %bw, " + t + " " + std::to_string(w + 5) + ")"}};  // constant beyond w
      for (const auto& [suffix, args] : forms) {
        std::string name = std::string(f) + suffix + "_" + ws;
        define(name, w, callee + args);
        funnel->push_back(name);
      }
    }
    for (const char* f : {"sadd.sat", "ssub.sat", "uadd.sat", "usub.sat"}) {
      ir << "declare " << t << " @llvm." << f << "." << t << "(" << t << ", " << t << ")\n";
      std::string name = std::string(f).replace(4, 1, "_") + "_" + ws;
      define(name, w, std::string("@llvm.") + f + "." + t + "(" + t + " %aw, " + t + " %bw)");
      saturating->push_back(name);
    }
  }
  return ir.str();
}

// The driver: every funnel shift on bit patterns times shift amounts around each
// width (0, w - 1, w, beyond w, all ones), every saturating operation on each
// width's boundaries (0, 1, INT_MAX, INT_MIN, UINT_MAX) against each other.
static std::string edge_driver(const std::vector<std::string>& funnel, const std::vector<std::string>& saturating) {
  std::ostringstream c, values, shifts;
  c << "#include <stdint.h>\n#include <stdio.h>\ntypedef uint64_t (*fn)(uint64_t, uint64_t, uint64_t);\n";
  std::string table_f, table_s;
  for (const auto& n : funnel) c << "uint64_t " << n << "(uint64_t, uint64_t, uint64_t);\n", table_f += n + ", ";
  for (const auto& n : saturating) c << "uint64_t " << n << "(uint64_t, uint64_t, uint64_t);\n", table_s += n + ", ";
  values << "0, 1, 2, 3, ~0ull, 0x5A5A5A5A5A5A5A5Aull, 0xDEADBEEFCAFEF00Dull";
  shifts << "0, 1, 2, 3, 7, 9, 17, 33, 65, 127, 128, 255, 256, ~0ull, 1ull << 63, 0x123456789ABCDEFull";
  for (int w = 8; w <= 64; w += 8) {
    std::string high = "(1ull << " + std::to_string(w - 1) + ")";
    values << ", " << high << ", " << high << " - 1, " << high << " + 1, " << high << " * 2 - 1";
    for (int s : {w - 1, w, w + 1, 2 * w - 1, 2 * w, 3 * w + 5}) shifts << ", " << s;
    shifts << ", " << high << " * 2 - 1";  // all ones at width w
  }
  c << "static const fn kFunnel[] = {" << table_f << "};\nstatic const fn kSat[] = {" << table_s << "};\n";
  c << "static const uint64_t kValues[] = {" << values.str() << "};\n";
  c << "static const uint64_t kShifts[] = {" << shifts.str() << "};\n";
  c << "static const uint64_t kPatterns[] = {0, ~0ull, 0x0123456789ABCDEFull, 0xF0E1D2C3B4A59687ull, 1ull << 63};\n";
  c << R"(#define COUNT(x) (sizeof(x) / sizeof((x)[0]))
int main(void) {
  for (unsigned f = 0; f < COUNT(kFunnel); ++f)
    for (unsigned a = 0; a < COUNT(kPatterns); ++a)
      for (unsigned b = 0; b < COUNT(kPatterns); ++b)
        for (unsigned s = 0; s < COUNT(kShifts); ++s)
          printf("funnel %u %u %u %u %llx\n", f, a, b, s,
                 (unsigned long long)kFunnel[f](kPatterns[a], kPatterns[b], kShifts[s]));
  for (unsigned f = 0; f < COUNT(kSat); ++f)
    for (unsigned a = 0; a < COUNT(kValues); ++a)
      for (unsigned b = 0; b < COUNT(kValues); ++b)
        printf("sat %u %u %u %llx\n", f, a, b, (unsigned long long)kSat[f](kValues[a], kValues[b], 0));
  return 0;
}
)";
  return c.str();
}

TEST_CASE("funnel shifts and saturating arithmetic at every width come out the same on edge inputs",
          "[stamp][differential]") {
  std::vector<std::string> funnel, saturating;
  std::string ir = edge_module(&funnel, &saturating);
  kiln_test::ScratchDir dir;
  write_file_atomic(dir.path + "/driver.c", edge_driver(funnel, saturating));
  ProcessOptions quiet;
  quiet.quiet = true;
  REQUIRE(run_process({"cc", "-c", "-o", dir.path + "/driver.o", dir.path + "/driver.c"}, quiet).exit_code == 0);
  std::string bitcode = kiln_test::bitcode_from_ir(ir);
  std::string expected = run_with("llvm", bitcode, dir.path + "/driver.o", dir.path, nullptr);
  EmitCounts counts;
  std::string actual = run_with("stamp", bitcode, dir.path + "/driver.o", dir.path, &counts);
  CHECK(counts.functions_stamp == funnel.size() + saturating.size());
  CHECK(counts.functions_llvm == 0);
  REQUIRE(expected.size() > 0);
  INFO("function tables: funnel " << funnel.size() << ", saturating " << saturating.size());
  CHECK(first_difference(expected, actual) == "");
  ReaderComparison reader = compare_reader(bitcode, "edges");
  INFO(outcome_name(reader.outcome) << ": " << reader.detail);
  CHECK(reader.outcome == ReaderComparison::kIdentical);
}

// Rust's black_box and compiler barriers: inline asm with an empty template, inputs
// and clobbers only, is no code in stamp. The value behind the pointer must still be
// the one stored before and read after.
TEST_CASE("empty inline asm (black_box, barriers) is no code and changes nothing", "[stamp][differential]") {
  const char* ir = R"(
target triple = "x86_64-unknown-linux-gnu"
define i64 @f0(i64 %a, i64 %b, i64 %c) {
  %x = alloca i64, align 8
  store i64 %a, ptr %x
  call void asm sideeffect "", "r,~{memory}"(ptr %x)
  %v = load i64, ptr %x
  call void asm sideeffect "", "~{memory},~{dirflag},~{fpsr},~{flags}"()
  %s = add i64 %v, %b
  call void asm sideeffect "", "r"(i64 %s)
  store i64 %s, ptr %x
  call void asm sideeffect "", "*m,~{memory}"(ptr elementtype(i64) %x)
  %w = load i64, ptr %x
  %r = mul i64 %w, %c
  ret i64 %r
}
)";
  EmitCounts counts;
  auto [expected, actual] = run_f0_both(ir, "31337ull", &counts);
  CHECK(actual == expected);
  CHECK(counts.functions_stamp == 1);
  CHECK(counts.functions_llvm == 0);
}

// An argument stored to the frame from the register it came in (store_from_arg_register)
// after a select of i128, whose template tests its condition in rdi, where %a came:
// that store must take %a from its slot.
TEST_CASE("an argument spilled after a select of i128 keeps its value", "[stamp][differential]") {
  const char* ir = R"(
target triple = "x86_64-unknown-linux-gnu"
define i64 @f0(i64 %a, i64 %b, i64 %c) {
entry:
  %sa = alloca i64, align 8
  %wc = trunc i64 %c to i1
  %wsel = select i1 %wc, i128 5, i128 7
  store i64 %a, ptr %sa
  %v = load i64, ptr %sa
  %w = trunc i128 %wsel to i64
  %r = add i64 %v, %w
  ret i64 %r
}
)";
  EmitCounts counts;
  auto [expected, actual] = run_f0_both(ir, "2468ull", &counts);
  CHECK(actual == expected);
  CHECK(counts.functions_stamp == 1);
}

// select of aggregates: two-word pairs ({i64, i64}, {ptr, i64}), one with odd pieces
// and padding, an array, zero operands, and a poison one (whose result nothing reads:
// llvm may take the other operand for it, stamp takes zeros).
TEST_CASE("select of aggregates comes out the same", "[stamp][differential]") {
  const char* ir = R"(
target triple = "x86_64-unknown-linux-gnu"
@g = global [4 x i64] [i64 1, i64 2, i64 3, i64 4]
define { i64, i64 } @pick(i1 %c, i64 %a, i64 %b) {
  %p = insertvalue { i64, i64 } poison, i64 %a, 0
  %p2 = insertvalue { i64, i64 } %p, i64 %b, 1
  %q = insertvalue { i64, i64 } poison, i64 %b, 0
  %q2 = insertvalue { i64, i64 } %q, i64 %a, 1
  %r = select i1 %c, { i64, i64 } %p2, { i64, i64 } %q2
  ret { i64, i64 } %r
}
define i64 @f0(i64 %a, i64 %b, i64 %c) {
  %c1 = trunc i64 %c to i1
  %c2 = icmp ult i64 %a, %b
  %r = call { i64, i64 } @pick(i1 %c1, i64 %a, i64 %b)
  %r0 = extractvalue { i64, i64 } %r, 0
  %r1 = extractvalue { i64, i64 } %r, 1
  %i = and i64 %b, 3
  %gp = getelementptr [4 x i64], ptr @g, i64 0, i64 %i
  %s = insertvalue { ptr, i64 } poison, ptr %gp, 0
  %s2 = insertvalue { ptr, i64 } %s, i64 %a, 1
  %t = insertvalue { ptr, i64 } poison, ptr @g, 0
  %t2 = insertvalue { ptr, i64 } %t, i64 %c, 1
  %u = select i1 %c2, { ptr, i64 } %s2, { ptr, i64 } %t2
  %up = extractvalue { ptr, i64 } %u, 0
  %uv = load i64, ptr %up
  %ul = extractvalue { ptr, i64 } %u, 1
  %o = insertvalue { i32, i8, i16, i24 } poison, i32 7, 0
  %o2 = insertvalue { i32, i8, i16, i24 } %o, i8 -1, 1
  %o3 = insertvalue { i32, i8, i16, i24 } %o2, i16 300, 2
  %ac = trunc i64 %a to i24
  %o4 = insertvalue { i32, i8, i16, i24 } %o3, i24 %ac, 3
  %z = select i1 %c1, { i32, i8, i16, i24 } %o4, { i32, i8, i16, i24 } zeroinitializer
  %zp = select i1 %c2, { i32, i8, i16, i24 } zeroinitializer, { i32, i8, i16, i24 } %z
  %unused = select i1 %c2, { i32, i8, i16, i24 } poison, { i32, i8, i16, i24 } %z
  %z1 = extractvalue { i32, i8, i16, i24 } %zp, 1
  %z3 = extractvalue { i32, i8, i16, i24 } %zp, 3
  %arr = insertvalue [3 x i16] zeroinitializer, i16 5, 1
  %ab = trunc i64 %b to i16
  %arr2 = insertvalue [3 x i16] %arr, i16 %ab, 2
  %sa = select i1 %c1, [3 x i16] %arr2, [3 x i16] [i16 9, i16 8, i16 7]
  %a0 = extractvalue [3 x i16] %sa, 0
  %a2 = extractvalue [3 x i16] %sa, 2
  %m = alloca { i64, i64 }, align 8
  %w = select i1 %c2, { i64, i64 } %r, { i64, i64 } zeroinitializer
  store { i64, i64 } %w, ptr %m
  %m1p = getelementptr i8, ptr %m, i64 8
  %m1 = load i64, ptr %m1p
  %x1 = xor i64 %r0, %r1
  %x2 = mul i64 %x1, 31
  %x3 = add i64 %x2, %uv
  %x4 = xor i64 %x3, %ul
  %z1w = zext i8 %z1 to i64
  %z3w = zext i24 %z3 to i64
  %a0w = zext i16 %a0 to i64
  %a2w = zext i16 %a2 to i64
  %x5 = mul i64 %x4, %z1w
  %x6 = add i64 %x5, %z3w
  %x7 = mul i64 %x6, 33
  %x8 = add i64 %x7, %a0w
  %x9 = xor i64 %x8, %a2w
  %x10 = add i64 %x9, %m1
  ret i64 %x10
}
)";
  EmitCounts counts;
  auto [expected, actual] = run_f0_both(ir, "4711ull", &counts);
  CHECK(actual == expected);
  CHECK(counts.functions_stamp == 2);
  CHECK(counts.functions_llvm == 0);
  ReaderComparison reader = compare_reader(kiln_test::bitcode_from_ir(ir), "aggregate select");
  INFO(outcome_name(reader.outcome) << ": " << reader.detail);
  CHECK(reader.outcome == ReaderComparison::kIdentical);
  CHECK(reader.whole);
}

// Aggregates of kCopyLoopBytes and more, whose 16-byte pieces stamp copies in a loop:
// between memory and the frame both ways, frame to frame (a phi's copies, a store to and
// a load from an alloca, extractvalue of an inner array, insertvalue), zeros into the
// frame and through a pointer, each with a rest of odd size after the looped part; and
// selects of such aggregates (a branch to one of two copies), one side zeros.
TEST_CASE("large aggregates copied in loops come out the same", "[stamp][differential]") {
  const char* ir = R"(
target triple = "x86_64-unknown-linux-gnu"
define void @copy_mem(ptr %dst, ptr %src) {
  %v = load [40 x i64], ptr %src
  store [40 x i64] %v, ptr %dst
  ret void
}
define void @zero_mem(ptr %dst) {
  store [67 x i8] zeroinitializer, ptr %dst
  ret void
}
define void @bytes_through_frame(ptr %dst, ptr %src) {
  %buf = alloca [67 x i8], align 1
  %v = load [67 x i8], ptr %src
  store [67 x i8] %v, ptr %buf
  %w = load [67 x i8], ptr %buf
  %b = extractvalue [67 x i8] %w, 66
  %b1 = add i8 %b, 1
  %w2 = insertvalue [67 x i8] %w, i8 %b1, 0
  store [67 x i8] %w2, ptr %dst
  ret void
}
define void @select_big(ptr %dst, ptr %a, ptr %b, i64 %k) {
  %c = icmp ugt i64 %k, 1
  %va = load [40 x i64], ptr %a
  %vb = load [40 x i64], ptr %b
  %s = select i1 %c, [40 x i64] %va, [40 x i64] %vb
  store [40 x i64] %s, ptr %dst
  ret void
}
define void @select_bytes(ptr %dst, ptr %a, i64 %k) {
  %c = icmp eq i64 %k, 0
  %va = load [67 x i8], ptr %a
  %s = select i1 %c, [67 x i8] zeroinitializer, [67 x i8] %va
  store [67 x i8] %s, ptr %dst
  ret void
}
define i64 @loop(ptr %dst, ptr %src, i64 %n) {
entry:
  %buf = alloca [40 x i64], align 8
  %a = load [40 x i64], ptr %src
  br label %loop
loop:
  %agg = phi [40 x i64] [ %a, %entry ], [ %agg2, %loop ]
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %x = extractvalue [40 x i64] %agg, 5
  %y = add i64 %x, %i
  %agg2 = insertvalue [40 x i64] %agg, i64 %y, 5
  %i1 = add i64 %i, 1
  %c = icmp ult i64 %i1, %n
  br i1 %c, label %loop, label %exit
exit:
  store [40 x i64] %agg2, ptr %buf
  %b = load [40 x i64], ptr %buf
  %pair = insertvalue { [5 x i64], [40 x i64] } zeroinitializer, [40 x i64] %b, 1
  %inner = extractvalue { [5 x i64], [40 x i64] } %pair, 1
  %z = insertvalue [40 x i64] zeroinitializer, i64 %n, 39
  %d2 = getelementptr [40 x i64], ptr %dst, i64 1
  store [40 x i64] %inner, ptr %dst
  store [40 x i64] %z, ptr %d2
  %last = extractvalue [40 x i64] %inner, 39
  ret i64 %last
}
)";
  expect_same_as_llvm(ir, R"(#include <stdint.h>
#include <stdio.h>
#include <string.h>
void copy_mem(uint64_t* dst, const uint64_t* src);
void zero_mem(uint8_t* dst);
void bytes_through_frame(uint8_t* dst, const uint8_t* src);
uint64_t loop(uint64_t* dst, const uint64_t* src, uint64_t n);
void select_big(uint64_t* dst, const uint64_t* a, const uint64_t* b, uint64_t k);
void select_bytes(uint8_t* dst, const uint8_t* a, uint64_t k);
int main(void) {
  uint64_t src[40], dst[82];
  uint8_t b[70], c[70];
  for (int i = 0; i < 40; ++i) src[i] = 0x0101010101010101ull * (uint64_t)(i + 1) + (uint64_t)i;
  memset(dst, 0xAB, sizeof dst);
  copy_mem(dst + 1, src);
  for (int i = 0; i < 42; ++i) printf("copy %d %llx\n", i, (unsigned long long)dst[i]);
  memset(b, 0xCD, sizeof b);
  zero_mem(b + 1);
  for (int i = 0; i < 70; ++i) printf("zero %d %x\n", i, b[i]);
  for (int i = 0; i < 70; ++i) b[i] = (uint8_t)(3 * i + 7);
  memset(c, 0xEF, sizeof c);
  bytes_through_frame(c + 1, b + 2);
  for (int i = 0; i < 70; ++i) printf("bytes %d %x\n", i, c[i]);
  memset(dst, 0xAB, sizeof dst);
  uint64_t last = loop(dst + 1, src, 9);
  printf("last %llx\n", (unsigned long long)last);
  for (int i = 0; i < 82; ++i) printf("loop %d %llx\n", i, (unsigned long long)dst[i]);
  for (uint64_t k = 0; k < 3; ++k) {
    memset(dst, 0xAB, sizeof dst);
    select_big(dst + 1, src, dst + 41, k);
    for (int i = 0; i < 42; ++i) printf("select %d %llx\n", i, (unsigned long long)dst[i]);
    memset(c, 0xEF, sizeof c);
    select_bytes(c + 1, b, k);
    for (int i = 0; i < 70; ++i) printf("select bytes %d %x\n", i, c[i]);
  }
  return 0;
}
)",
                      6, "large aggregates");
}

// i128 (issue 12): Rust's -O0 enums compare their discriminants as i128. Every
// operation stamp takes on i128, each in a function that reads its operands through
// pointers (i128 arguments have a test of their own, below) and writes its result.
static std::string i128_module(std::vector<std::string>* binary, std::vector<std::string>* compare,
                               std::vector<std::string>* unary) {
  std::ostringstream ir;
  ir << "target triple = \"x86_64-unknown-linux-gnu\"\n";
  ir << "declare i128 @make_wide(i64, i64)\n";
  for (const char* op : {"add", "sub", "and", "or", "xor", "shl", "lshr", "ashr", "mul"}) {
    bool shift = std::string(op) == "shl" || std::string(op) == "lshr" || std::string(op) == "ashr";
    ir << "define void @bin_" << op << "(ptr %out, ptr %pa, ptr %pb) {\n"
       << "  %a = load i128, ptr %pa, align 16\n  %b0 = load i128, ptr %pb, align 16\n"
       << (shift ? "  %b = and i128 %b0, 127\n" : "  %b = freeze i128 %b0\n") << "  %r = " << op
       << " i128 %a, %b\n  store i128 %r, ptr %out, align 16\n  ret void\n}\n";
    binary->push_back(std::string("bin_") + op);
  }
  for (const char* p : {"eq", "ne", "ugt", "uge", "ult", "ule", "sgt", "sge", "slt", "sle"}) {
    ir << "define i64 @cmp_" << p << "(ptr %pa, ptr %pb) {\n"
       << "  %a = load i128, ptr %pa, align 16\n  %b = load i128, ptr %pb, align 16\n"
       << "  %c = icmp " << p << " i128 %a, %b\n  %z = zext i1 %c to i64\n  ret i64 %z\n}\n";
    compare->push_back(std::string("cmp_") + p);
  }
  // Constants (both halves, up to the high halves that are 32-bit numbers: 2^95 - 1,
  // -2^95), truncations,
  // extensions, select, phi, switch, a frame slot, and a call returning i128.
  ir << R"(define void @un_consts(ptr %out, ptr %pa) {
  %a = load i128, ptr %pa, align 16
  %c1 = icmp eq i128 %a, 9
  %c2 = icmp ult i128 %a, 18446744073709551616
  %c3 = icmp sgt i128 %a, -1
  %c4 = icmp ne i128 %a, 18446744073709551615
  %c5 = icmp slt i128 %a, -9223372036854775808
  %c6 = icmp uge i128 %a, 19807040628566084398385987584
  %z1 = zext i1 %c1 to i128
  %z2 = zext i1 %c2 to i128
  %s2 = shl i128 %z2, 1
  %z3 = zext i1 %c3 to i128
  %s3 = shl i128 %z3, 2
  %z4 = zext i1 %c4 to i128
  %s4 = shl i128 %z4, 3
  %z5 = zext i1 %c5 to i128
  %s5 = shl i128 %z5, 4
  %z6 = zext i1 %c6 to i128
  %s6 = shl i128 %z6, 70
  %o1 = or i128 %z1, %s2
  %o2 = or i128 %o1, %s3
  %o3 = or i128 %o2, %s4
  %o4 = or i128 %o3, %s5
  %o5 = or i128 %o4, %s6
  %x = xor i128 %o5, -4294967296
  %y = add i128 %x, 36893488147419103232
  store i128 %y, ptr %out, align 16
  ret void
}
define void @un_trunc(ptr %out, ptr %pa) {
  %a = load i128, ptr %pa, align 16
  %t64 = trunc i128 %a to i64
  %t32 = trunc i128 %a to i32
  %t8 = trunc i128 %a to i8
  %t1 = trunc i128 %a to i1
  %h = lshr i128 %a, 64
  %th = trunc i128 %h to i64
  %w32 = zext i32 %t32 to i64
  %w8 = sext i8 %t8 to i64
  %w1 = zext i1 %t1 to i64
  %m1 = mul i64 %t64, 31
  %m2 = add i64 %m1, %w32
  %m3 = mul i64 %m2, 37
  %m4 = xor i64 %m3, %w8
  %m5 = add i64 %m4, %w1
  %m6 = xor i64 %m5, %th
  %r = zext i64 %m6 to i128
  store i128 %r, ptr %out, align 16
  ret void
}
define void @un_ext(ptr %out, ptr %pa) {
  %a = load i128, ptr %pa, align 16
  %t64 = trunc i128 %a to i64
  %t32 = trunc i128 %a to i32
  %t8 = trunc i128 %a to i8
  %t1 = trunc i128 %a to i1
  %e1 = sext i64 %t64 to i128
  %e2 = sext i32 %t32 to i128
  %e3 = sext i8 %t8 to i128
  %e4 = sext i1 %t1 to i128
  %e5 = zext i32 %t32 to i128
  %e6 = zext i8 %t8 to i128
  %f1 = xor i128 %e1, %e2
  %f2 = add i128 %f1, %e3
  %f3 = sub i128 %f2, %e4
  %f4 = shl i128 %f3, 1
  %f5 = xor i128 %f4, %e5
  %f6 = add i128 %f5, %e6
  store i128 %f6, ptr %out, align 16
  ret void
}
define void @un_flow(ptr %out, ptr %pa) {
entry:
  %slot = alloca i128, align 16
  store i128 -4294967291, ptr %slot, align 16
  %k = load i128, ptr %slot, align 16
  %a = load i128, ptr %pa, align 16
  store i128 %a, ptr %slot, align 16
  %b = load i128, ptr %slot, align 16
  %neg = icmp slt i128 %b, 0
  %sel = select i1 %neg, i128 %b, i128 12345678901234567890123
  %sel2 = select i1 %neg, i128 0, i128 %sel
  switch i128 %b, label %other [ i128 0, label %zero
                                 i128 9, label %nine
                                 i128 18446744073709551616, label %two64
                                 i128 -1, label %minus1 ]
zero:
  br label %join
nine:
  br label %join
two64:
  br label %join
minus1:
  br label %join
other:
  %big = icmp ugt i128 %b, 39614081257132168796771975167
  br i1 %big, label %join, label %small
small:
  br label %join
join:
  %p = phi i128 [ 1, %zero ], [ %sel, %nine ], [ -18446744073709551616, %two64 ], [ %sel2, %minus1 ],
                [ %b, %other ], [ 7, %small ]
  %q = phi i128 [ 0, %zero ], [ 0, %nine ], [ 0, %two64 ], [ 0, %minus1 ], [ 1, %other ], [ 2, %small ]
  %q2 = shl i128 %q, 100
  %r0 = xor i128 %p, %q2
  %r = sub i128 %r0, %k
  store i128 %r, ptr %slot, align 16
  %back = load i128, ptr %slot, align 16
  store i128 %back, ptr %out, align 16
  ret void
}
define i128 @ret_mix(ptr %pa) {
entry:
  %a = load i128, ptr %pa, align 16
  %neg = icmp slt i128 %a, 0
  br i1 %neg, label %minus, label %plus
minus:
  ret i128 -39614081257132168796771975168
plus:
  %r = add i128 %a, 18446744073709551615
  ret i128 %r
}
define void @un_call(ptr %out, ptr %pa) {
  %mix = call i128 @ret_mix(ptr %pa)
  %a0 = load i128, ptr %pa, align 16
  %a = xor i128 %a0, %mix
  %lo = trunc i128 %a to i64
  %sh = lshr i128 %a, 64
  %hi = trunc i128 %sh to i64
  %w = call i128 @make_wide(i64 %hi, i64 %lo)
  %z = zext i64 %lo to i128
  %r = add i128 %w, %z
  store i128 -39614081257132168796771975168, ptr %out, align 16
  %old = load i128, ptr %out, align 16
  %r2 = xor i128 %r, %old
  store i128 %r2, ptr %out, align 16
  ret void
}
)";
  for (const char* u : {"un_consts", "un_trunc", "un_ext", "un_flow", "un_call"}) unary->push_back(u);
  unary->push_back("ret_mix");  // counted with them; the driver calls it for its return
  return ir.str();
}

// Every binary operation and compare on every pair of edge values (0, 1, -1, 2^63,
// 2^64 - 1, 2^64, 2^127 - 1, -2^127, values apart only in one half), every unary
// function on each; results as two hex halves.
static std::string i128_driver(const std::vector<std::string>& binary, const std::vector<std::string>& compare,
                               const std::vector<std::string>& unary) {
  std::ostringstream c;
  c << "#include <stdint.h>\n#include <stdio.h>\ntypedef unsigned __int128 u128;\n";
  c << "u128 make_wide(uint64_t hi, uint64_t lo) { return ((u128)hi << 64 | lo) * 3; }\n";
  c << "u128 ret_mix(const u128*);\n";
  std::string tb, tc, tu;
  for (const auto& n : binary) c << "void " << n << "(u128*, const u128*, const u128*);\n", tb += n + ", ";
  for (const auto& n : compare) c << "uint64_t " << n << "(const u128*, const u128*);\n", tc += n + ", ";
  for (const auto& n : unary)
    if (n != "ret_mix") c << "void " << n << "(u128*, const u128*);\n", tu += n + ", ";
  c << "typedef void (*bin)(u128*, const u128*, const u128*);\ntypedef uint64_t (*cmp)(const u128*, const u128*);\n"
    << "typedef void (*un)(u128*, const u128*);\n";
  c << "static const bin kBin[] = {" << tb << "};\nstatic const cmp kCmp[] = {" << tc << "};\n"
    << "static const un kUn[] = {" << tu << "};\n";
  c << R"(#define COUNT(x) (sizeof(x) / sizeof((x)[0]))
#define W(hi, lo) (((u128)(uint64_t)(hi) << 64) | (uint64_t)(lo))
static u128 v[] = {0, 1, W(-1, -1), W(0, 1ull << 63), W(0, -1), W(1, 0), W(0x7FFFFFFFFFFFFFFFull, -1),
                   W(1ull << 63, 0), W(5, 9), W(6, 9), W(5, 10), W(-1, 0), W(-2, -1), W(0x123456789ull, 0xFEDCBA9876543210ull),
                   9, W(-1, -9), W(0x7FFFFFFF, 0x8000000000000000ull), W(0x80000000, 3), 64, 65, 127, 63};
int main(void) {
  static u128 a, b, r;
  for (unsigned f = 0; f < COUNT(kBin); ++f)
    for (unsigned i = 0; i < COUNT(v); ++i)
      for (unsigned j = 0; j < COUNT(v); ++j) {
        a = v[i], b = v[j];
        kBin[f](&r, &a, &b);
        printf("bin %u %u %u %016llx%016llx\n", f, i, j, (unsigned long long)(r >> 64), (unsigned long long)r);
      }
  for (unsigned f = 0; f < COUNT(kCmp); ++f)
    for (unsigned i = 0; i < COUNT(v); ++i)
      for (unsigned j = 0; j < COUNT(v); ++j) {
        a = v[i], b = v[j];
        printf("cmp %u %u %u %llu\n", f, i, j, (unsigned long long)kCmp[f](&a, &b));
      }
  for (unsigned f = 0; f < COUNT(kUn); ++f)
    for (unsigned i = 0; i < COUNT(v); ++i) {
      a = v[i];
      kUn[f](&r, &a);
      printf("un %u %u %016llx%016llx\n", f, i, (unsigned long long)(r >> 64), (unsigned long long)r);
    }
  for (unsigned i = 0; i < COUNT(v); ++i) {
    a = v[i];
    r = ret_mix(&a);
    printf("ret %u %016llx%016llx\n", i, (unsigned long long)(r >> 64), (unsigned long long)r);
  }
  return 0;
}
)";
  return c.str();
}

TEST_CASE("i128 loads, stores, arithmetic, compares, casts, select, phi, switch, calls and returns come out the same",
          "[stamp][differential]") {
  std::vector<std::string> binary, compare, unary;
  std::string ir = i128_module(&binary, &compare, &unary);
  kiln_test::ScratchDir dir;
  write_file_atomic(dir.path + "/driver.c", i128_driver(binary, compare, unary));
  ProcessOptions quiet;
  quiet.quiet = true;
  REQUIRE(run_process({"cc", "-c", "-o", dir.path + "/driver.o", dir.path + "/driver.c"}, quiet).exit_code == 0);
  std::string bitcode = kiln_test::bitcode_from_ir(ir);
  std::string expected = run_with("llvm", bitcode, dir.path + "/driver.o", dir.path, nullptr);
  EmitCounts counts;
  std::string actual = run_with("stamp", bitcode, dir.path + "/driver.o", dir.path, &counts);
  if (counts.functions_llvm != 0 || expected != actual) write_file_atomic("/tmp/kiln-i128-failure.ll", ir);
  CHECK(counts.functions_stamp == binary.size() + compare.size() + unary.size());
  CHECK(counts.functions_llvm == 0);
  REQUIRE(expected.size() > 0);
  CHECK(first_difference(expected, actual) == "");
  ReaderComparison reader = compare_reader(bitcode, "i128");
  INFO(outcome_name(reader.outcome) << ": " << reader.detail);
  CHECK(reader.outcome == ReaderComparison::kIdentical);
  CHECK(reader.whole);
}

// i128 arguments by the SysV rules as LLVM 22 applies them: two consecutive integer
// registers, else 16-byte aligned stack while a later integer may still take the
// register left over; in definitions and in calls, stamp's code calling C's and C's
// calling stamp's, mixed with floating-point and stack arguments.
static const char* kWideArgsIr = R"(
target triple = "x86_64-unknown-linux-gnu"
declare i128 @c_wide(i64, i128, i64, i64, i64, i128)
define i128 @w_first(i128 %a, i64 %b) {
  %bb = zext i64 %b to i128
  %m = mul i128 %a, 3
  %r = add i128 %m, %bb
  ret i128 %r
}
define i64 @w_spill(i64 %a, i64 %b, i64 %c, i64 %d, i64 %e, i128 %x, i64 %g) {
  %lo = trunc i128 %x to i64
  %s = lshr i128 %x, 64
  %hi = trunc i128 %s to i64
  %r1 = mul i64 %lo, 5
  %r2 = add i64 %r1, %hi
  %r3 = mul i64 %r2, 7
  %r4 = add i64 %r3, %g
  %r5 = sub i64 %r4, %a
  %r6 = add i64 %r5, %e
  ret i64 %r6
}
define i128 @w_align(i64 %a, i64 %b, i64 %c, i64 %d, i64 %e, i64 %f, i64 %g, i128 %x, double %h, i128 %y) {
  %a1 = zext i64 %a to i128
  %g1 = zext i64 %g to i128
  %hi = fptosi double %h to i64
  %h1 = sext i64 %hi to i128
  %m = mul i128 %x, %a1
  %n = xor i128 %y, %g1
  %r1 = add i128 %m, %n
  %r2 = add i128 %r1, %h1
  ret i128 %r2
}
define i128 @w_pairs(i128 %a, i128 %b, i128 %c, i64 %d) {
  %d1 = zext i64 %d to i128
  %ab = mul i128 %a, %b
  %r1 = sub i128 %ab, %c
  %r2 = add i128 %r1, %d1
  ret i128 %r2
}
define i128 @w_call(i128 %a, i64 %k) {
  %k1 = zext i64 %k to i128
  %ak = mul i128 %a, %k1
  %c = call i128 @c_wide(i64 %k, i128 %a, i64 2, i64 3, i64 4, i128 %ak)
  %x = call i128 @w_align(i64 %k, i64 1, i64 2, i64 3, i64 4, i64 5, i64 6, i128 %a, double 2.5, i128 %c)
  %y = call i64 @w_spill(i64 1, i64 2, i64 3, i64 4, i64 %k, i128 %x, i64 9)
  %p = call i128 @w_pairs(i128 %x, i128 %c, i128 %a, i64 %y)
  %f = call i128 @w_first(i128 %p, i64 %y)
  ret i128 %f
}
)";

TEST_CASE("i128 arguments in registers and on the stack come out the same", "[stamp][differential]") {
  expect_same_as_llvm(kWideArgsIr, R"(#include <stdint.h>
#include <stdio.h>
typedef unsigned __int128 u128;
u128 c_wide(int64_t a, u128 x, int64_t b, int64_t c, int64_t d, u128 y) { return x * (u128)a + y * (u128)(b + c + d); }
u128 w_first(u128, int64_t);
int64_t w_spill(int64_t, int64_t, int64_t, int64_t, int64_t, u128, int64_t);
u128 w_align(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, u128, double, u128);
u128 w_pairs(u128, u128, u128, int64_t);
u128 w_call(u128, int64_t);
#define W(h, l) (((u128)(uint64_t)(h) << 64) | (uint64_t)(l))
static void show(const char* what, unsigned i, u128 r) {
  printf("%s %u %016llx%016llx\n", what, i, (unsigned long long)(r >> 64), (unsigned long long)r);
}
int main(void) {
  static const u128 v[] = {0, 1, W(-1, -1), W(0, 1ull << 63), W(1, 0), W(0x0123456789ABCDEFull, 0xFEDCBA9876543210ull),
                           W(0x8000000000000000ull, 0), W(7, 0xFFFFFFFFFFFFFFFFull)};
  for (unsigned i = 0; i < sizeof v / sizeof v[0]; ++i) {
    show("first", i, w_first(v[i], (int64_t)i * 1000003));
    printf("spill %u %lld\n", i, (long long)w_spill(1, 2, 3, 4, 5 + i, v[i], -9));
    show("align", i, w_align(3 + i, 1, 2, 3, 4, 5, 77, v[i], -1.5 * i, v[(i + 1) % 8]));
    show("pairs", i, w_pairs(v[i], v[(i + 3) % 8], v[(i + 5) % 8], 11));
    show("call", i, w_call(v[i], 3 + 2 * i));
  }
  return 0;
}
)", 5, "i128-args");
}

// i128 division and remainder: calls of compiler-rt's __udivti3, __divti3, __umodti3
// and __modti3, as llvm -O0 makes them, on register pairs and through memory; the
// driver leaves out a zero divisor and the one signed quotient that overflows. And
// conversions between i128 and float or double (__fixdfti, __floatuntisf, ...), on
// values where they are defined.
static const char* kWideDivisionIr = R"(
target triple = "x86_64-unknown-linux-gnu"
define i128 @d_mixed(i128 %a, i64 %k) {
  %k1 = zext i64 %k to i128
  %k2 = or i128 %k1, 1
  %q = udiv i128 %a, %k2
  %t = sdiv i128 %q, -7
  %s = srem i128 %a, 1000000007
  %u = urem i128 %t, 18446744073709551629
  %m = mul i128 %u, %s
  %r = add i128 %m, %q
  ret i128 %r
}
)";

// d_udiv, d_sdiv, d_urem and d_srem through memory, then the conversions between i128
// and float or double: c_fptosi_d, ..., c_uitofp_f.
static std::string wide_division_ir() {
  std::ostringstream ir;
  for (const char* op : {"udiv", "sdiv", "urem", "srem"})
    ir << "define void @d_" << op << "(ptr %r, ptr %pa, ptr %pb) {\n  %a = load i128, ptr %pa\n"
       << "  %b = load i128, ptr %pb\n  %q = " << op << " i128 %a, %b\n  store i128 %q, ptr %r\n  ret void\n}\n";
  for (const char* t : {"double", "float"})
    for (const char* op : {"fptosi", "fptoui"})
      ir << "define i128 @c_" << op << "_" << t[0] << "(" << t << " %x) {\n  %r = " << op << " " << t
         << " %x to i128\n  ret i128 %r\n}\n";
  for (const char* t : {"double", "float"})
    for (const char* op : {"sitofp", "uitofp"})
      ir << "define " << t << " @c_" << op << "_" << t[0] << "(i128 %a) {\n  %r = " << op << " i128 %a to " << t
         << "\n  ret " << t << " %r\n}\n";
  // Rust's `as` to i128 and u128: the saturating intrinsics.
  for (const char* t : {"double", "float"}) {
    const std::string suffix = t[0] == 'd' ? "f64" : "f32";
    for (const char* op : {"fptosi", "fptoui"})
      ir << "declare i128 @llvm." << op << ".sat.i128." << suffix << "(" << t << ")\n"
         << "define i128 @s_" << op << "_" << t[0] << "(" << t << " %x) {\n  %r = call i128 @llvm." << op
         << ".sat.i128." << suffix << "(" << t << " %x)\n  ret i128 %r\n}\n";
  }
  return ir.str();
}

TEST_CASE("i128 division, remainder and conversions call compiler-rt as llvm does and come out the same",
          "[stamp][differential]") {
  expect_same_as_llvm(std::string(kWideDivisionIr) + wide_division_ir(), R"(#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
typedef unsigned __int128 u128;
typedef __int128 i128;
void d_udiv(u128*, const u128*, const u128*);
void d_sdiv(u128*, const u128*, const u128*);
void d_urem(u128*, const u128*, const u128*);
void d_srem(u128*, const u128*, const u128*);
u128 d_mixed(u128, int64_t);
u128 c_fptosi_d(double), c_fptoui_d(double), c_fptosi_f(float), c_fptoui_f(float);
u128 s_fptosi_d(double), s_fptoui_d(double), s_fptosi_f(float), s_fptoui_f(float);
double c_sitofp_d(u128), c_uitofp_d(u128);
float c_sitofp_f(u128), c_uitofp_f(u128);
#define W(h, l) (((u128)(uint64_t)(h) << 64) | (uint64_t)(l))
static void show(const char* what, unsigned i, unsigned j, u128 r) {
  printf("%s %u %u %016llx%016llx\n", what, i, j, (unsigned long long)(r >> 64), (unsigned long long)r);
}
int main(void) {
  static const u128 v[] = {0, 1, 2, 3, 7, W(-1, -1), W(-1, -7), W(0, 1ull << 63), W(1, 0), W(0, -1),
                           W(0x0123456789ABCDEFull, 0xFEDCBA9876543210ull), W(0x8000000000000000ull, 0),
                           W(0x7FFFFFFFFFFFFFFFull, -1), W(7, 0xFFFFFFFFFFFFFFFFull), W(-1, 0), 1000000007};
  static void (*const kOps[])(u128*, const u128*, const u128*) = {d_udiv, d_sdiv, d_urem, d_srem};
  static const char* const kNames[] = {"udiv", "sdiv", "urem", "srem"};
  const unsigned n = sizeof v / sizeof v[0];
  static u128 a, b, r;
  for (unsigned f = 0; f < 4; ++f)
    for (unsigned i = 0; i < n; ++i)
      for (unsigned j = 0; j < n; ++j) {
        a = v[i], b = v[j];
        if (b == 0) continue;
        if (f % 2 == 1 && a == W(0x8000000000000000ull, 0) && b == W(-1, -1)) continue;  // overflows
        kOps[f](&r, &a, &b);
        show(kNames[f], i, j, r);
      }
  for (unsigned i = 0; i < n; ++i) show("mixed", i, 0, d_mixed(v[i], 3 + 1000 * i));
  static const double kSigned[] = {0.0, -0.0, 1.5, -2.5, 1e18, -1e20, 1.7e38, -1.7e38, 12345678901234567890.0, -0.99};
  static const double kUnsigned[] = {0.0, 0.75, 3.0, 1e19, 1.8446744073709552e19, 3.4e38, 1e30, 2.5e7};
  for (unsigned i = 0; i < sizeof kSigned / sizeof kSigned[0]; ++i) {
    show("fptosi_d", i, 0, c_fptosi_d(kSigned[i]));
    show("fptosi_f", i, 0, c_fptosi_f((float)kSigned[i]));
  }
  for (unsigned i = 0; i < sizeof kUnsigned / sizeof kUnsigned[0]; ++i) {
    show("fptoui_d", i, 0, c_fptoui_d(kUnsigned[i]));
    show("fptoui_f", i, 0, c_fptoui_f((float)kUnsigned[i]));
  }
  for (unsigned i = 0; i < n; ++i) {
    double a = c_sitofp_d(v[i]), b = c_uitofp_d(v[i]);
    float c = c_sitofp_f(v[i]), d = c_uitofp_f(v[i]);
    unsigned long long ab, bb;
    unsigned int cb, db;
    memcpy(&ab, &a, 8), memcpy(&bb, &b, 8), memcpy(&cb, &c, 4), memcpy(&db, &d, 4);
    printf("tofp %u %llx %llx %x %x\n", i, ab, bb, cb, db);
  }
  /* The saturating conversions at their bounds: 2^127 and 2^128 and the values next to
     them, NaN, the infinities, signed zeros and fractions around 0 and -1. */
  const double p127 = ldexp(1, 127), p128 = ldexp(1, 128);
  const double kEdges[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 0.5, -0.5, -1.0, -1.5, 1.5, -2.5,
                           p127, nextafter(p127, 0), -p127, nextafter(-p127, -INFINITY), p128, nextafter(p128, 0),
                           1e38, -1e38, 1e300, -1e300, 12345678901234567890.0, 9.5e37};
  for (unsigned i = 0; i < sizeof kEdges / sizeof kEdges[0]; ++i) {
    show("sat_d", i, 0, s_fptosi_d(kEdges[i]));
    show("sat_d", i, 1, s_fptoui_d(kEdges[i]));
    show("sat_f", i, 0, s_fptosi_f((float)kEdges[i]));
    show("sat_f", i, 1, s_fptoui_f((float)kEdges[i]));
  }
  const float kFloatEdges[] = {nextafterf(ldexpf(1, 127), 0), nextafterf(-ldexpf(1, 127), -INFINITY),
                               nextafterf(INFINITY, 0), -nextafterf(INFINITY, 0)};
  for (unsigned i = 0; i < sizeof kFloatEdges / sizeof kFloatEdges[0]; ++i) {
    show("sat_f_edge", i, 0, s_fptosi_f(kFloatEdges[i]));
    show("sat_f_edge", i, 1, s_fptoui_f(kFloatEdges[i]));
  }
  return 0;
}
)", 17, "i128-division");
}

// The *.with.overflow intrinsics at 128 bits (Rust's checked and overflowing u128 and
// i128 arithmetic, and every debug-build `+` and `-` on them), the i128 field taken out
// with extractvalue, an i128 put into an aggregate with insertvalue, and i128 constants
// beyond an immediate's 96 bits (loaded from constant data) in arithmetic, a phi and a
// store; three-way compares, the bit count and bit reversal, umin, umax, smin, smax and
// abs of i128, and umul.with.overflow (Rust's checked u128 multiplication).
static std::string wide_overflow_ir() {
  std::ostringstream ir;
  ir << "target triple = \"x86_64-unknown-linux-gnu\"\n";
  for (const char* op : {"uadd", "sadd", "usub", "ssub", "umul"}) {
    ir << "declare {i128, i1} @llvm." << op << ".with.overflow.i128(i128, i128)\n"
       << "define void @o_" << op << "(ptr %r, ptr %pa, ptr %pb) {\n"
       << "  %a = load i128, ptr %pa\n  %b = load i128, ptr %pb\n"
       << "  %s = call {i128, i1} @llvm." << op << ".with.overflow.i128(i128 %a, i128 %b)\n"
       << "  %v = extractvalue {i128, i1} %s, 0\n  %o = extractvalue {i128, i1} %s, 1\n"
       << "  store i128 %v, ptr %r\n  %o64 = zext i1 %o to i64\n"
       << "  %rp = getelementptr i8, ptr %r, i64 16\n  store i64 %o64, ptr %rp\n  ret void\n}\n";
  }
  ir << R"(define i128 @o_insert(i128 %a, i64 %k) {
  %k1 = zext i64 %k to i128
  %g0 = insertvalue {i64, i128} undef, i64 %k, 0
  %g1 = insertvalue {i64, i128} %g0, i128 %a, 1
  %g2 = insertvalue {i64, i128} %g1, i128 5, 1
  %x = extractvalue {i64, i128} %g1, 1
  %z = extractvalue {i64, i128} %g2, 1
  %y = add i128 %x, %k1
  %w = mul i128 %y, %z
  ret i128 %w
}
define i128 @o_const(i128 %a, ptr %p) {
entry:
  %x = xor i128 %a, 170141183460469231731687303715884105727
  %y = add i128 %x, -85070591730234615865843651857942052864
  store i128 324518553658426726783156020576255, ptr %p
  %c = icmp ult i128 %a, 1000
  br i1 %c, label %small, label %done
small:
  br label %done
done:
  %r = phi i128 [ %y, %entry ], [ 340282366920938463463374607431768211455, %small ]
  ret i128 %r
}
declare i8 @llvm.ucmp.i8.i128(i128, i128)
declare i8 @llvm.scmp.i8.i128(i128, i128)
declare i32 @llvm.scmp.i32.i128(i128, i128)
declare i128 @llvm.ctpop.i128(i128)
define i64 @o_cmp(ptr %pa, ptr %pb) {
  %a = load i128, ptr %pa
  %b = load i128, ptr %pb
  %u = call i8 @llvm.ucmp.i8.i128(i128 %a, i128 %b)
  %s = call i8 @llvm.scmp.i8.i128(i128 %a, i128 %b)
  %t = call i32 @llvm.scmp.i32.i128(i128 %b, i128 %a)
  %u64 = sext i8 %u to i64
  %s64 = sext i8 %s to i64
  %t64 = sext i32 %t to i64
  %x = mul i64 %u64, 100
  %y = mul i64 %s64, 10
  %z = add i64 %x, %y
  %r = add i64 %z, %t64
  ret i64 %r
}
declare i128 @llvm.umin.i128(i128, i128)
declare i128 @llvm.umax.i128(i128, i128)
declare i128 @llvm.smin.i128(i128, i128)
declare i128 @llvm.smax.i128(i128, i128)
declare i128 @llvm.abs.i128(i128, i1)
define void @o_minmax(ptr %r, ptr %pa, ptr %pb) {
  %a = load i128, ptr %pa
  %b = load i128, ptr %pb
  %u = call i128 @llvm.umin.i128(i128 %a, i128 %b)
  %v = call i128 @llvm.umax.i128(i128 %a, i128 %b)
  %s = call i128 @llvm.smin.i128(i128 %a, i128 %b)
  %t = call i128 @llvm.smax.i128(i128 %a, i128 %b)
  %x = call i128 @llvm.abs.i128(i128 %a, i1 false)
  store i128 %u, ptr %r
  %r1 = getelementptr i8, ptr %r, i64 16
  store i128 %v, ptr %r1
  %r2 = getelementptr i8, ptr %r, i64 32
  store i128 %s, ptr %r2
  %r3 = getelementptr i8, ptr %r, i64 48
  store i128 %t, ptr %r3
  %r4 = getelementptr i8, ptr %r, i64 64
  store i128 %x, ptr %r4
  ret void
}
declare i128 @llvm.bitreverse.i128(i128)
define i128 @o_ctpop(i128 %a) {
  %c = call i128 @llvm.ctpop.i128(i128 %a)
  %b = call i128 @llvm.bitreverse.i128(i128 %a)
  %s = shl i128 %c, 120
  %r = xor i128 %b, %s
  ret i128 %r
}
; Intrinsics on i128 constants beyond an immediate (i128::MIN - x, as checked_sub
; from a constant compiles), which are loaded from constant data as elsewhere.
define i128 @o_const_intrinsic(i128 %a) {
  %s = call {i128, i1} @llvm.ssub.with.overflow.i128(i128 -170141183460469231731687303715884105728, i128 %a)
  %v = extractvalue {i128, i1} %s, 0
  %o = extractvalue {i128, i1} %s, 1
  %m = call i128 @llvm.umax.i128(i128 %v, i128 324518553658426726783156020576255)
  %o128 = zext i1 %o to i128
  %r = xor i128 %m, %o128
  ret i128 %r
}
)";
  return ir.str();
}

TEST_CASE("i128 overflow intrinsics, extractvalue, insertvalue, wide constants, three-way compares and ctpop come out "
          "the same",
          "[stamp][differential]") {
  expect_same_as_llvm(wide_overflow_ir(), R"(#include <stdint.h>
#include <stdio.h>
typedef unsigned __int128 u128;
typedef struct { u128 v; uint64_t flag, pad; } Result;
void o_uadd(Result*, const u128*, const u128*);
void o_sadd(Result*, const u128*, const u128*);
void o_usub(Result*, const u128*, const u128*);
void o_ssub(Result*, const u128*, const u128*);
void o_umul(Result*, const u128*, const u128*);
void o_minmax(u128*, const u128*, const u128*);
u128 o_insert(u128, int64_t);
u128 o_const(u128, u128*);
int64_t o_cmp(const u128*, const u128*);
u128 o_ctpop(u128);
u128 o_const_intrinsic(u128);
#define W(h, l) (((u128)(uint64_t)(h) << 64) | (uint64_t)(l))
int main(void) {
  static const u128 v[] = {0, 1, 2, W(-1, -1), W(-1, -2), W(0, -1), W(1, 0), W(0x7FFFFFFFFFFFFFFFull, -1),
                           W(0x8000000000000000ull, 0), W(0x8000000000000000ull, 1), W(0x4000000000000000ull, 0),
                           W(0x0123456789ABCDEFull, 0xFEDCBA9876543210ull), W(0xC000000000000000ull, 0)};
  static void (*const kOps[])(Result*, const u128*, const u128*) = {o_uadd, o_sadd, o_usub, o_ssub, o_umul};
  static const char* const kNames[] = {"uadd", "sadd", "usub", "ssub", "umul"};
  const unsigned n = sizeof v / sizeof v[0];
  static u128 a, b;
  static Result r;
  static u128 mm[5];
  for (unsigned i = 0; i < n; ++i)
    for (unsigned j = 0; j < n; ++j) {
      a = v[i], b = v[j];
      o_minmax(mm, &a, &b);
      printf("minmax %u %u", i, j);
      for (unsigned k = 0; k < 5; ++k)
        printf(" %016llx%016llx", (unsigned long long)(mm[k] >> 64), (unsigned long long)mm[k]);
      printf("\n");
    }
  for (unsigned f = 0; f < 5; ++f)
    for (unsigned i = 0; i < n; ++i)
      for (unsigned j = 0; j < n; ++j) {
        a = v[i], b = v[j];
        r.flag = 7;
        kOps[f](&r, &a, &b);
        printf("%s %u %u %016llx%016llx %llu\n", kNames[f], i, j, (unsigned long long)(r.v >> 64),
               (unsigned long long)r.v, (unsigned long long)r.flag);
        if (f == 0) printf("cmp %u %u %lld\n", i, j, (long long)o_cmp(&a, &b));
      }
  for (unsigned i = 0; i < n; ++i) {
    u128 x = o_insert(v[i], 1000 + i);
    printf("insert %u %016llx%016llx\n", i, (unsigned long long)(x >> 64), (unsigned long long)x);
    u128 stored = 0;
    x = o_const(v[i], &stored);
    printf("const %u %016llx%016llx %016llx%016llx\n", i, (unsigned long long)(x >> 64), (unsigned long long)x,
           (unsigned long long)(stored >> 64), (unsigned long long)stored);
    x = o_ctpop(v[i]);
    printf("ctpop %u %016llx%016llx\n", i, (unsigned long long)(x >> 64), (unsigned long long)x);
    x = o_const_intrinsic(v[i]);
    printf("const_intrinsic %u %016llx%016llx\n", i, (unsigned long long)(x >> 64), (unsigned long long)x);
  }
  return 0;
}
)", 11, "i128-overflow");
}

// A select whose condition is the icmp right before it picks on the compare's flags
// (select_fuses_compare, stamp_emit.h): its values are loaded before the compare, from
// every kind of operand (zero and other constants, arguments, symbols, a field read
// in place, an i1 loaded from the frame), at every width, with signed and unsigned
// predicates, after a compare whose operand the instruction before left in rax; and a
// select that also takes the compare as a value does not fuse.
TEST_CASE("a select on the compare right before it comes out the same as llvm's", "[stamp][differential]") {
  const std::string ir = R"(target triple = "x86_64-unknown-linux-gnu"
@g = global i64 5
@h = global i64 6
define i64 @pick_args(i64 %a, i64 %b, i64 %x, i64 %y) {
  %c = icmp ult i64 %a, %b
  %r = select i1 %c, i64 %x, i64 %y
  ret i64 %r
}
define i64 @pick_consts(i32 %a, i32 %b) {
  %c = icmp slt i32 %a, %b
  %r = select i1 %c, i64 0, i64 -7
  ret i64 %r
}
define i8 @pick_narrow(i8 %a, i8 %b, i8 %x) {
  %c = icmp sge i8 %a, %b
  %r = select i1 %c, i8 %x, i8 0
  ret i8 %r
}
define ptr @pick_symbols(i64 %a) {
  %c = icmp eq i64 %a, 3
  %r = select i1 %c, ptr @g, ptr @h
  ret ptr %r
}
define i1 @pick_bools(i64 %a, i1 %x) {
  %m = alloca i1, align 1
  store i1 %x, ptr %m
  %l = load i1, ptr %m
  %c = icmp ne i64 %a, 0
  %r = select i1 %c, i1 %l, i1 true
  ret i1 %r
}
define i32 @pick_field(i64 %a, i32 %x, i32 %y) {
  %s1 = insertvalue { i32, i32 } undef, i32 %x, 0
  %s2 = insertvalue { i32, i32 } %s1, i32 %y, 1
  %f = extractvalue { i32, i32 } %s2, 1
  %c = icmp sgt i64 %a, -2
  %r = select i1 %c, i32 %f, i32 %x
  ret i32 %r
}
define i64 @pick_computed(i64 %a, i64 %b) {
  %t = add i64 %a, 1
  %c = icmp ult i64 %t, %b
  %r = select i1 %c, i64 %b, i64 %t
  ret i64 %r
}
define i1 @pick_itself(i64 %a, i1 %x) {
  %c = icmp ule i64 %a, 9
  %r = select i1 %c, i1 %x, i1 %c
  ret i1 %r
}
)";
  const std::string driver = R"(#include <stdint.h>
#include <stdio.h>
#include <stdbool.h>
int64_t pick_args(int64_t, int64_t, int64_t, int64_t);
int64_t pick_consts(int32_t, int32_t);
int8_t pick_narrow(int8_t, int8_t, int8_t);
int64_t *pick_symbols(int64_t);
bool pick_bools(int64_t, bool);
int32_t pick_field(int64_t, int32_t, int32_t);
bool pick_itself(int64_t, bool);
int64_t pick_computed(int64_t, int64_t);
int main(void) {
  const int64_t v[] = {-3, -2, -1, 0, 1, 2, 3, 9, 10, 127, -128, 255, 0x7fffffff, -0x80000000LL};
  const int n = sizeof v / sizeof v[0];
  for (int i = 0; i < n; ++i) {
    printf("%lld %lld %lld %lld\n", (long long)pick_consts((int32_t)v[i], 1), (long long)*pick_symbols(v[i]),
           (long long)pick_field(v[i], 11, 22), (long long)pick_bools(v[i], i & 1));
    printf("%d %d\n", (int)pick_itself(v[i], 1), (int)pick_itself(v[i], 0));
    for (int j = 0; j < n; ++j)
      printf("%lld %d %lld\n", (long long)pick_args(v[i], v[j], 100 + i, 200 + j),
             (int)pick_narrow((int8_t)v[i], (int8_t)v[j], (int8_t)(i * 7)), (long long)pick_computed(v[i], v[j]));
  }
  return 0;
}
)";
  kiln_test::expect_same_as_llvm(ir, driver, 8, "fused selects");
}

// An i1 select with a constant false or true on one side (clang's && and ||) is an and
// or an or; a conditional branch right after a compare whose result is read again
// later (so kept in a slot) jumps on the compare's flags, across phi copies that keep
// them. Both on every pair of a few values, from compares, arguments, loads and
// constants.
TEST_CASE("i1 selects with a constant side and branches on a compare read again come out the same",
          "[stamp][differential]") {
  const std::string ir = R"(target triple = "x86_64-unknown-linux-gnu"
define zeroext i1 @and_of(i64 %a, i64 %b) {
  %c1 = icmp ult i64 %a, %b
  %c2 = icmp sgt i64 %a, 2
  %r = select i1 %c1, i1 %c2, i1 false
  ret i1 %r
}
define zeroext i1 @or_of(i64 %a, i64 %b) {
  %c1 = icmp ult i64 %a, %b
  %c2 = icmp sgt i64 %a, 2
  %r = select i1 %c1, i1 true, i1 %c2
  ret i1 %r
}
define zeroext i1 @and_args(i1 zeroext %x, i1 zeroext %y) {
  %r = select i1 %x, i1 %y, i1 false
  ret i1 %r
}
define zeroext i1 @or_args(i1 zeroext %x, i1 zeroext %y) {
  %r = select i1 %x, i1 true, i1 %y
  ret i1 %r
}
define zeroext i1 @both_constant(i1 zeroext %x) {
  %r = select i1 %x, i1 true, i1 false
  ret i1 %r
}
define zeroext i1 @or_loaded(i64 %a, i1 zeroext %y) {
  %m = alloca i1, align 1
  store i1 %y, ptr %m
  %c = icmp eq i64 %a, 0
  %l = load i1, ptr %m
  %r = select i1 %c, i1 true, i1 %l
  ret i1 %r
}
define i64 @branch_twice(i32 %a, i32 %b) {
entry:
  %c = icmp slt i32 %a, %b
  br i1 %c, label %yes, label %no
yes:
  %z = zext i1 %c to i64
  %r1 = add i64 %z, 10
  ret i64 %r1
no:
  %z2 = zext i1 %c to i64
  %r2 = add i64 %z2, 20
  ret i64 %r2
}
define i64 @loop_twice(i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %body ]
  %acc = phi i64 [ 5, %entry ], [ %acc1, %body ]
  %i1 = add i64 %i, 1
  %c = icmp ult i64 %i1, %n
  br i1 %c, label %body, label %exit
body:
  %cz = zext i1 %c to i64
  %t = mul i64 %acc, 3
  %acc1 = add i64 %t, %cz
  br label %loop
exit:
  %r = phi i64 [ %i1, %loop ]
  %s = add i64 %r, %acc
  ret i64 %s
}
)";
  const std::string driver = R"(#include <stdint.h>
#include <stdio.h>
#include <stdbool.h>
bool and_of(int64_t, int64_t);
bool or_of(int64_t, int64_t);
bool and_args(bool, bool);
bool or_args(bool, bool);
bool both_constant(bool);
bool or_loaded(int64_t, bool);
int64_t branch_twice(int32_t, int32_t);
int64_t loop_twice(int64_t);
int main(void) {
  const int64_t v[] = {-3, -1, 0, 1, 2, 3, 4, 9, 0x7fffffff, -0x80000000LL};
  const int n = sizeof v / sizeof v[0];
  for (int i = 0; i < n; ++i) {
    printf("%lld %d %d\n", (long long)loop_twice(v[i] & 15), (int)or_loaded(v[i], i & 1), (int)both_constant(i & 1));
    for (int j = 0; j < n; ++j)
      printf("%d %d %lld\n", (int)and_of(v[i], v[j]), (int)or_of(v[i], v[j]),
             (long long)branch_twice((int32_t)v[i], (int32_t)v[j]));
  }
  for (int x = 0; x < 2; ++x)
    for (int y = 0; y < 2; ++y) printf("%d %d\n", (int)and_args(x, y), (int)or_args(x, y));
  return 0;
}
)";
  kiln_test::expect_same_as_llvm(ir, driver, 8, "i1 selects and branches on kept compares");
}

// A truncation to i1 whose only reader is the branch right after it leaves the other
// bits of rax as they were (only_bit0_read, stamp_emit.h): the branch tests bit 0
// alone. Every i8 value, other bits set or not, from an argument, a computed value
// and a select.
TEST_CASE("a branch on a truncation to i1 takes bit 0 alone, as llvm's does", "[stamp][differential]") {
  const std::string ir = R"(target triple = "x86_64-unknown-linux-gnu"
define i32 @on_arg(i8 %x) {
  %t = trunc i8 %x to i1
  br i1 %t, label %yes, label %no
yes:
  ret i32 1
no:
  ret i32 0
}
define i32 @on_sum(i8 %x) {
  %y = add i8 %x, 3
  %t = trunc i8 %y to i1
  br i1 %t, label %yes, label %no
yes:
  ret i32 7
no:
  ret i32 9
}
define i32 @on_select(i8 %x, i64 %k) {
  %c = icmp ugt i64 %k, 4
  %s = select i1 %c, i8 %x, i8 254
  %t = trunc i8 %s to i1
  br i1 %t, label %yes, label %no
yes:
  ret i32 3
no:
  ret i32 4
}
)";
  const std::string driver = R"(#include <stdint.h>
#include <stdio.h>
int32_t on_arg(uint8_t);
int32_t on_sum(uint8_t);
int32_t on_select(uint8_t, int64_t);
int main(void) {
  for (int v = 0; v < 256; ++v)
    printf("%d %d %d %d\n", on_arg((uint8_t)v), on_sum((uint8_t)v), on_select((uint8_t)v, v % 9), on_select((uint8_t)v, 2));
  return 0;
}
)";
  kiln_test::expect_same_as_llvm(ir, driver, 3, "branches on truncations");
}
