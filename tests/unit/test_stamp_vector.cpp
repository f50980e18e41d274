// Differential tests of stamp's vectors against llvm: lane-by-lane integer arithmetic,
// shifts, compares to masks, casts between lane widths, masks to integers (the
// movemask pattern of core::arch), element extraction and insertion, shuffles (splats,
// byte rotations, picks from both operands and undef lanes), vector bitcasts and
// reductions, and pshufb, on vectors of i8, i16, i32 and i64 lanes of 64, 128 and 256 bits. One
// module, compiled by both back ends and linked with one C driver that feeds every
// function every pair of 12 vectors of edge lanes and prints each result's bytes.
#include <catch2/catch.hpp>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "census.h"
#include "differential.h"

using namespace kiln;

namespace {

struct VectorType {
  int lanes, bits;
  std::string ir() const { return "<" + std::to_string(lanes) + " x i" + std::to_string(bits) + ">"; }
  std::string lane() const { return "i" + std::to_string(bits); }
  std::string name() const { return "v" + std::to_string(lanes) + "i" + std::to_string(bits); }
  int bytes() const { return lanes * bits / 8; }
  // A constant vector of `value` in every lane, written out (a ConstantDataVector).
  std::string splat(long long value) const {
    std::string s = "<";
    for (int k = 0; k < lanes; ++k) s += (k ? ", " : "") + lane() + " " + std::to_string(value);
    return s + ">";
  }
};
const VectorType kTypes[] = {{16, 8}, {8, 16}, {4, 32}, {2, 64}, {32, 8}, {8, 8}, {4, 64}};

// Function kinds the driver calls: f(a, b, out) writing `out_bytes`, or g(a, b)
// returning a 64-bit integer.
struct Function {
  std::string name;
  int out_bytes;      // 0: returns an integer
  std::string guard;  // the CPU feature llvm's code needs to run ("": none): checked by the driver
};

// void NAME(ptr %pa, ptr %pb, ptr %po): loads a and b of type T, runs BODY (which
// defines %r of type R), stores %r.
void vector_function(std::ostringstream& ir, std::vector<Function>& fns, const std::string& name,
                     const VectorType& t, const std::string& body, const std::string& result, int out_bytes) {
  ir << "define void @" << name << "(ptr %pa, ptr %pb, ptr %po) {\n  %a = load " << t.ir() << ", ptr %pa, align 1\n"
     << "  %b = load " << t.ir() << ", ptr %pb, align 1\n"
     << body << "  store " << result << " %r, ptr %po, align 1\n  ret void\n}\n";
  fns.push_back({name, out_bytes, ""});
}
// i64 NAME(ptr %pa, ptr %pb): the same with a scalar %r of type R, zero-extended.
void scalar_function(std::ostringstream& ir, std::vector<Function>& fns, const std::string& name,
                     const VectorType& t, const std::string& body, const std::string& result) {
  ir << "define i64 @" << name << "(ptr %pa, ptr %pb) {\n  %a = load " << t.ir() << ", ptr %pa, align 1\n"
     << "  %b = load " << t.ir() << ", ptr %pb, align 1\n" << body;
  if (result == "i64") ir << "  ret i64 %r\n}\n";
  else ir << "  %z = zext " << result << " %r to i64\n  ret i64 %z\n}\n";
  fns.push_back({name, 0, ""});
}

void byte_shuffles(std::ostringstream& ir, std::vector<Function>& fns);

std::string vector_module(std::vector<Function>& fns) {
  std::ostringstream ir;
  ir << "target triple = \"x86_64-unknown-linux-gnu\"\n";
  const char* const predicates[] = {"eq", "ne", "ugt", "uge", "ult", "ule", "sgt", "sge", "slt", "sle"};
  for (const VectorType& t : kTypes) {
    const std::string T = t.ir(), N = t.name(), M = "<" + std::to_string(t.lanes) + " x i1>";
    for (const char* op : {"add", "sub", "mul", "and", "or", "xor"})
      vector_function(ir, fns, std::string(op) + "_" + N, t, "  %r = " + std::string(op) + " " + T + " %a, %b\n", T,
                      t.bytes());
    // Shift amounts below the lane width (wider ones are poison): b masked by a
    // constant vector, which both back ends load from constant data.
    for (const char* op : {"shl", "lshr", "ashr"})
      vector_function(ir, fns, std::string(op) + "_" + N, t,
                      "  %s = and " + T + " %b, " + t.splat(t.bits - 1) + "\n  %r = " + op + " " + T + " %a, %s\n", T,
                      t.bytes());
    for (const char* p : predicates)
      vector_function(ir, fns, std::string("icmp_") + p + "_" + N, t,
                      "  %m = icmp " + std::string(p) + " " + T + " %a, %b\n  %r = sext " + M + " %m to " + T + "\n",
                      T, t.bytes());
    // Masks: zext, a mask's and/or/xor, select-free blends, reductions and the integer.
    vector_function(ir, fns, "mask_zext_" + N, t,
                    "  %m = icmp ult " + T + " %a, %b\n  %n = icmp eq " + T + " %a, zeroinitializer\n"
                    "  %x = xor " + M + " %m, %n\n  %o = or " + M + " %x, %n\n  %p = and " + M + " %o, %m\n"
                    "  %r = zext " + M + " %p to " + T + "\n",
                    T, t.bytes());
    scalar_function(ir, fns, "all_eq_" + N, t,
                    "  %m = icmp eq " + T + " %a, %b\n  %r = call i1 @llvm.vector.reduce.and.v" +
                        std::to_string(t.lanes) + "i1(" + M + " %m)\n",
                    "i1");
    scalar_function(ir, fns, "any_lt_" + N, t,
                    "  %m = icmp slt " + T + " %a, %b\n  %r = call i1 @llvm.vector.reduce.or.v" +
                        std::to_string(t.lanes) + "i1(" + M + " %m)\n",
                    "i1");
    scalar_function(ir, fns, "sum_" + N, t,
                    "  %r = call " + t.lane() + " @llvm.vector.reduce.add." + N + "(" + T + " %a)\n", t.lane());
    scalar_function(ir, fns, "product_" + N, t,
                    "  %r = call " + t.lane() + " @llvm.vector.reduce.mul." + N + "(" + T + " %b)\n", t.lane());
    scalar_function(ir, fns, "parity_" + N, t,
                    "  %x = xor " + T + " %a, %b\n  %r = call " + t.lane() + " @llvm.vector.reduce.xor." + N + "(" + T +
                        " %x)\n",
                    t.lane());
    if (t.lanes >= 8) {  // an integer stamp keeps in a slot: i8 to i64
      const std::string I = "i" + std::to_string(t.lanes);
      scalar_function(ir, fns, "movemask_" + N, t,
                      "  %m = icmp slt " + T + " %a, zeroinitializer\n  %s = sext " + M + " %m to " + T +
                          "\n  %h = lshr " + T + " %s, " + t.splat(t.bits - 1) + "\n  %l = trunc " + T + " %h to " + M +
                          "\n  %r = bitcast " + M + " %l to " + I + "\n",
                      I);
    }
    // Elements: the last lane out, lane 1 replaced by a's lane 0 plus 1, a splat.
    scalar_function(ir, fns, "extract_" + N, t,
                    "  %r = extractelement " + T + " %a, i32 " + std::to_string(t.lanes - 1) + "\n", t.lane());
    vector_function(ir, fns, "insert_" + N, t,
                    "  %e = extractelement " + T + " %a, i64 0\n  %f = add " + t.lane() + " %e, 1\n  %r = insertelement " +
                        T + " %b, " + t.lane() + " %f, i64 1\n",
                    T, t.bytes());
    vector_function(ir, fns, "splat_" + N, t,
                    "  %e = extractelement " + T + " %b, i32 1\n  %i = insertelement " + T + " poison, " + t.lane() +
                        " %e, i64 0\n  %r = shufflevector " + T + " %i, " + T + " poison, <" +
                        std::to_string(t.lanes) + " x i32> zeroinitializer\n",
                    T, t.bytes());
    // A rotation across a and b (as alignr), with lane 0 undef (then set: an undef
    // lane may hold anything).
    std::string mask = "<";
    for (int k = 0; k < t.lanes; ++k)
      mask += std::string(k ? ", " : "") + (k == 0 ? "i32 poison" : "i32 " + std::to_string(k + t.lanes / 2));
    vector_function(ir, fns, "rotate_" + N, t,
                    "  %q = shufflevector " + T + " %a, " + T + " %b, <" + std::to_string(t.lanes) + " x i32> " + mask +
                        ">\n  %r = insertelement " + T + " %q, " + t.lane() + " 0, i32 0\n",
                    T, t.bytes());
    // Casts between lane widths of the same lane count.
    if (t.bits > 8) {
      const std::string narrow = "<" + std::to_string(t.lanes) + " x i8>";
      vector_function(ir, fns, "trunc_" + N, t, "  %r = trunc " + T + " %a to " + narrow + "\n", narrow, t.lanes);
    }
    if (t.bits < 64 && t.lanes <= 8) {
      const std::string wide = "<" + std::to_string(t.lanes) + " x i64>";
      vector_function(ir, fns, "zext_" + N, t, "  %r = zext " + T + " %a to " + wide + "\n", wide, t.lanes * 8);
      vector_function(ir, fns, "sext_" + N, t, "  %r = sext " + T + " %b to " + wide + "\n", wide, t.lanes * 8);
    }
    // A bitcast to bytes, then byte arithmetic.
    const std::string bytes = "<" + std::to_string(t.bytes()) + " x i8>";
    vector_function(ir, fns, "bytes_" + N, t,
                    "  %c = bitcast " + T + " %a to " + bytes + "\n  %r = add " + bytes + " %c, " +
                        VectorType{t.bytes(), 8}.splat(3) + "\n",
                    bytes, t.bytes());
  }
  byte_shuffles(ir, fns);
  return ir.str();
}

// pshufb, as core::arch's _mm_shuffle_epi8 and _mm256_shuffle_epi8 call it: on variable
// tables and selectors (every pair of the edge vectors: bytes with bit 7 set, small and
// large indices), a constant selector (loaded from constant data) and a zero table.
// llvm's code is the instruction itself, so each function carries the target feature,
// and the driver calls it only on a CPU that has it.
void byte_shuffles(std::ostringstream& ir, std::vector<Function>& fns) {
  const struct {
    int lanes;
    const char *intrinsic, *feature, *attributes;
  } kShuffles[] = {{16, "llvm.x86.ssse3.pshuf.b.128", "ssse3", "#100"}, {32, "llvm.x86.avx2.pshuf.b", "avx2", "#101"}};
  for (const auto& s : kShuffles) {
    const VectorType t{s.lanes, 8};
    const std::string T = t.ir(), N = t.name(), call = "call " + T + " @" + s.intrinsic + "(";
    std::string selectors = "<";
    for (int k = 0; k < t.lanes; ++k)
      selectors += std::string(k ? ", " : "") + "i8 " + std::to_string(k % 3 == 0 ? -128 + k : (k * 7) % 19);
    selectors += ">";
    const std::pair<std::string, std::string> bodies[] = {
        {"pshufb_", "  %r = " + call + T + " %a, " + T + " %b)\n"},
        {"pshufb_const_", "  %r = " + call + T + " %a, " + T + " " + selectors + ")\n"},
        {"pshufb_zero_", "  %r = " + call + T + " zeroinitializer, " + T + " %b)\n"}};
    for (const auto& [prefix, body] : bodies) {
      ir << "define void @" << prefix << N << "(ptr %pa, ptr %pb, ptr %po) " << s.attributes << " {\n"
         << "  %a = load " << T << ", ptr %pa, align 1\n  %b = load " << T << ", ptr %pb, align 1\n"
         << body << "  store " << T << " %r, ptr %po, align 1\n  ret void\n}\n";
      fns.push_back({prefix + N, t.bytes(), s.feature});
    }
    ir << "declare " << T << " @" << s.intrinsic << "(" << T << ", " << T << ")\n";
  }
  ir << "attributes #100 = { \"target-features\"=\"+ssse3\" }\n"
     << "attributes #101 = { \"target-features\"=\"+avx2\" }\n";
}

std::string vector_driver(const std::vector<Function>& fns) {
  std::ostringstream c;
  c << "#include <stdint.h>\n#include <stdio.h>\n#include <string.h>\n";
  for (const Function& f : fns) {
    if (f.out_bytes) c << "void " << f.name << "(const void*, const void*, void*);\n";
    else c << "uint64_t " << f.name << "(const void*, const void*);\n";
  }
  // 12 vectors of 32 bytes: every lane width reads its lanes from the same bytes.
  c << R"(static uint8_t inputs[12][32];
static void fill(void) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int v = 0; v < 12; ++v)
    for (int i = 0; i < 32; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      uint8_t b = (uint8_t)(x >> 56);
      switch (v) {
        case 0: b = 0; break;
        case 1: b = 0xFF; break;
        case 2: b = (i % 8 == 7) ? 0x80 : 0; break;   /* each lane's minimum */
        case 3: b = (i % 8 == 7) ? 0x7F : 0xFF; break; /* each lane's maximum */
        case 4: b = 1; break;
        case 5: b = (uint8_t)i; break;
        case 6: b = (uint8_t)(0x80 + i); break;
        default: break;
      }
      inputs[v][i] = b;
    }
}
static void print(const char* name, int a, int b, const uint8_t* out, int n) {
  printf("%s %d %d", name, a, b);
  for (int i = 0; i < n; ++i) printf(" %02x", out[i]);
  printf("\n");
}
int main(void) {
  fill();
  uint8_t out[64];
  for (int a = 0; a < 12; ++a)
    for (int b = 0; b < 12; ++b) {
)";
  for (const Function& f : fns) {
    // A function llvm compiled for a CPU feature runs where the CPU has it (both runs
    // are on the same machine, so both skip it alike).
    c << "      if (" << (f.guard.empty() ? "1" : "__builtin_cpu_supports(\"" + f.guard + "\")") << ") { ";
    if (f.out_bytes)
      c << "memset(out, 0xAA, sizeof out); " << f.name << "(inputs[a], inputs[b], out); print(\"" << f.name
        << "\", a, b, out, " << f.out_bytes << "); }\n";
    else
      c << "printf(\"" << f.name << " %d %d %llx\\n\", a, b, (unsigned long long)" << f.name
        << "(inputs[a], inputs[b])); }\n";
  }
  c << "    }\n  return 0;\n}\n";
  return c.str();
}

}  // namespace

TEST_CASE("vectors: lane arithmetic, masks, elements, shuffles and reductions come out the same as llvm's",
          "[stamp][differential][vector]") {
  std::vector<Function> fns;
  std::string ir = vector_module(fns);
  // The reductions' declarations, once each.
  std::ostringstream declarations;
  for (const VectorType& t : kTypes) {
    const std::string M = "<" + std::to_string(t.lanes) + " x i1>", L = std::to_string(t.lanes);
    for (const char* op : {"and", "or"}) {
      std::string d = "declare i1 @llvm.vector.reduce." + std::string(op) + ".v" + L + "i1(" + M + ")\n";
      if (declarations.str().find(d) == std::string::npos) declarations << d;
    }
    for (const char* op : {"add", "mul", "xor"})
      declarations << "declare " << t.lane() << " @llvm.vector.reduce." << op << "." << t.name() << "(" << t.ir()
                   << ")\n";
  }
  ir += declarations.str();
  INFO(fns.size() << " functions");
  if (!__builtin_cpu_supports("ssse3")) WARN("this CPU has no SSSE3: pshufb on 16 bytes is not run");
  if (!__builtin_cpu_supports("avx2")) WARN("this CPU has no AVX2: pshufb on 32 bytes is not run");
  kiln_test::expect_same_as_llvm(ir, vector_driver(fns), fns.size(), "vector");
}

namespace {

// Vector arguments in xmm and ymm registers, both ways across the C convention: C
// (compiled by cc) calls stamp's functions with vectors, doubles and integers mixed,
// and stamp's functions call C's and each other's with them. Each writes or has
// written its arguments' bytes, which the driver prints.
struct ArgVector {
  VectorType t;
  std::string c_type() const { return "v" + std::to_string(t.bytes()) + "b"; }
  bool avx() const { return t.bytes() == 32; }
};
const ArgVector kArgTypes[] = {{{16, 8}}, {{8, 16}}, {{4, 32}}, {{2, 64}}, {{32, 8}}, {{4, 64}}};

std::string vector_arg_module() {
  std::ostringstream ir;
  ir << "target triple = \"x86_64-unknown-linux-gnu\"\n";
  for (const ArgVector& v : kArgTypes) {
    const std::string T = v.t.ir(), N = v.t.name(), B = std::to_string(v.t.bytes()),
                      B2 = std::to_string(2 * v.t.bytes()), attrs = v.avx() ? " #101" : "";
    // recv: its arguments' bytes in order: a + b, a, k, d (so both vectors and the
    // registers between them are checked).
    ir << "define void @recv_" << N << "(ptr %po, i64 %k, " << T << " %a, double %d, " << T << " %b)" << attrs
       << " {\n  %s = add " << T << " %a, %b\n  store " << T << " %s, ptr %po, align 1\n"
       << "  %p1 = getelementptr i8, ptr %po, i64 " << B << "\n  store " << T << " %a, ptr %p1, align 1\n"
       << "  %p2 = getelementptr i8, ptr %po, i64 " << B2 << "\n  store i64 %k, ptr %p2, align 1\n"
       << "  %p3 = getelementptr i8, ptr %po, i64 " << B2 << "\n  %p4 = getelementptr i8, ptr %p3, i64 8\n"
       << "  store double %d, ptr %p4, align 1\n  ret void\n}\n";
    // send: loads, and calls C's sink with a computed vector, a loaded one and a zero one.
    ir << "declare void @sink_" << N << "(ptr, i64, " << T << ", double, " << T << ", " << T << ")" << attrs << "\n"
       << "define void @send_" << N << "(ptr %pa, ptr %pb, ptr %po)" << attrs << " {\n  %a = load " << T
       << ", ptr %pa, align 1\n  %b = load " << T << ", ptr %pb, align 1\n  %x = xor " << T << " %a, %b\n"
       << "  call void @sink_" << N << "(ptr %po, i64 7, " << T << " %x, double 2.5, " << T << " %b, " << T
       << " zeroinitializer)\n  ret void\n}\n";
    // Returns in xmm0 or ymm0: a computed vector, zero, an argument as it came; and
    // callret, which takes C's twice's and then stamp's ret's.
    ir << "define " << T << " @ret_" << N << "(" << T << " %a, " << T << " %b)" << attrs << " {\n  %s = sub " << T
       << " %a, %b\n  ret " << T << " %s\n}\n"
       << "define " << T << " @ret_zero_" << N << "()" << attrs << " {\n  ret " << T << " zeroinitializer\n}\n"
       << "define " << T << " @ret_arg_" << N << "(i64 %k, double %d, " << T << " %a)" << attrs << " {\n  ret " << T
       << " %a\n}\n"
       << "declare " << T << " @twice_" << N << "(" << T << ")" << attrs << "\n"
       << "define void @callret_" << N << "(ptr %pa, ptr %pb, ptr %po)" << attrs << " {\n  %a = load " << T
       << ", ptr %pa, align 1\n  %b = load " << T << ", ptr %pb, align 1\n  %r = call " << T << " @twice_" << N
       << "(" << T << " %a)\n  %q = call " << T << " @ret_" << N << "(" << T << " %r, " << T << " %b)\n  store "
       << T << " %q, ptr %po, align 1\n  ret void\n}\n";
    // relay: its vector arguments passed on swapped, to stamp's recv.
    ir << "define void @relay_" << N << "(ptr %po, i64 %k, " << T << " %a, double %d, " << T << " %b)" << attrs
       << " {\n  call void @recv_" << N << "(ptr %po, i64 %k, " << T << " %b, double %d, " << T << " %a)\n"
       << "  ret void\n}\n";
  }
  // Eight vector registers: doubles and vectors alternating, the integers between.
  ir << "define void @many_v2i64(ptr %po, double %d0, <2 x i64> %a, i64 %k, double %d1, <2 x i64> %b, double %d2, "
        "<2 x i64> %c, double %d3, <2 x i64> %e) {\n"
     << "  %s1 = add <2 x i64> %a, %b\n  %s2 = add <2 x i64> %s1, %c\n  %s3 = sub <2 x i64> %s2, %e\n"
     << "  store <2 x i64> %s3, ptr %po, align 1\n"
     << "  %f1 = fadd double %d0, %d1\n  %f2 = fadd double %f1, %d2\n  %f3 = fmul double %f2, %d3\n"
     << "  %p1 = getelementptr i8, ptr %po, i64 16\n  store double %f3, ptr %p1, align 1\n"
     << "  %p2 = getelementptr i8, ptr %po, i64 24\n  store i64 %k, ptr %p2, align 1\n"
     << "  %p3 = getelementptr i8, ptr %po, i64 32\n  store <2 x i64> %e, ptr %p3, align 1\n  ret void\n}\n";
  ir << "attributes #101 = { \"target-features\"=\"+avx2\" }\n";
  return ir.str();
}

std::string vector_arg_driver(size_t& functions) {
  std::ostringstream c;
  c << "#include <stdint.h>\n#include <stdio.h>\n#include <string.h>\n"
    << "typedef long long v16b __attribute__((vector_size(16)));\n"
    << "typedef long long v32b __attribute__((vector_size(32)));\n"
    << "static uint8_t inputs[12][32];\n"
    << "static void print(const char* name, int a, int b, const uint8_t* out, int n) {\n"
    << "  printf(\"%s %d %d\", name, a, b);\n  for (int i = 0; i < n; ++i) printf(\" %02x\", out[i]);\n"
    << "  printf(\"\\n\");\n}\n";
  functions = 0;
  std::ostringstream calls;
  for (const ArgVector& v : kArgTypes) {
    const std::string N = v.t.name(), V = v.c_type(), B = std::to_string(v.t.bytes()),
                      target = v.avx() ? "__attribute__((target(\"avx2\"))) " : "";
    const std::string out_bytes = std::to_string(2 * v.t.bytes() + 16);
    c << "void recv_" << N << "(void*, long, " << V << ", double, " << V << ");\n"
      << "void send_" << N << "(const void*, const void*, void*);\n"
      << "void relay_" << N << "(void*, long, " << V << ", double, " << V << ");\n"
      << V << " ret_" << N << "(" << V << ", " << V << ");\n" << V << " ret_zero_" << N << "(void);\n"
      << V << " ret_arg_" << N << "(long, double, " << V << ");\n"
      << "void callret_" << N << "(const void*, const void*, void*);\n"
      << target << V << " twice_" << N << "(" << V << " x) { return x + x; }\n"
      // C's sink writes what it was passed: x, b, k, d, then the zero vector.
      << target << "void sink_" << N << "(uint8_t* o, long k, " << V << " x, double d, " << V << " b, " << V
      << " z) {\n  memcpy(o, &x, " << B << "); memcpy(o + " << B << ", &b, " << B << "); memcpy(o + 2 * " << B
      << ", &k, 8); memcpy(o + 2 * " << B << " + 8, &d, 8); memcpy(o + 2 * " << B << " + 16, &z, " << B << ");\n}\n"
      << target << "static void run_" << N << "(int a, int b) {\n  uint8_t out[128];\n  " << V << " va, vb;\n"
      << "  memcpy(&va, inputs[a], " << B << "); memcpy(&vb, inputs[b], " << B << ");\n"
      << "  memset(out, 0xAA, sizeof out); recv_" << N << "(out, 1000 * a + b, va, 0.5 * a - b, vb); print(\"recv_"
      << N << "\", a, b, out, " << out_bytes << ");\n"
      << "  memset(out, 0xAA, sizeof out); send_" << N << "(inputs[a], inputs[b], out); print(\"send_" << N
      << "\", a, b, out, " << 3 * v.t.bytes() + 16 << ");\n"
      << "  memset(out, 0xAA, sizeof out); relay_" << N << "(out, a - 1000 * b, va, 1.0 / (a + 1), vb); print(\"relay_"
      << N << "\", a, b, out, " << out_bytes << ");\n"
      << "  " << V << " r = ret_" << N << "(va, vb); memcpy(out, &r, " << B << ");\n"
      << "  r = ret_zero_" << N << "(); memcpy(out + " << B << ", &r, " << B << ");\n"
      << "  r = ret_arg_" << N << "(a, b, vb); memcpy(out + 2 * " << B << ", &r, " << B << ");\n"
      << "  print(\"ret_" << N << "\", a, b, out, 3 * " << B << ");\n"
      << "  memset(out, 0xAA, sizeof out); callret_" << N << "(inputs[a], inputs[b], out); print(\"callret_" << N
      << "\", a, b, out, " << B << ");\n}\n";
    calls << "      if (" << (v.avx() ? "__builtin_cpu_supports(\"avx2\")" : "1") << ") run_" << N << "(a, b);\n";
    functions += 7;
  }
  c << "void many_v2i64(void*, double, v16b, long, double, v16b, double, v16b, double, v16b);\n"
    << "int main(void) {\n  uint64_t x = 0x9E3779B97F4A7C15ull;\n"
    << "  for (int v = 0; v < 12; ++v)\n    for (int i = 0; i < 32; ++i) {\n"
    << "      x = x * 6364136223846793005ull + 1442695040888963407ull;\n"
    << "      inputs[v][i] = v == 0 ? 0 : v == 1 ? 0xFF : v == 2 ? (uint8_t)i : (uint8_t)(x >> 56);\n    }\n"
    << "  for (int a = 0; a < 12; ++a)\n    for (int b = 0; b < 12; ++b) {\n"
    << calls.str()
    << "      uint8_t out[64]; v16b p, q, r, s;\n      memcpy(&p, inputs[a], 16); memcpy(&q, inputs[b], 16);\n"
    << "      memcpy(&r, inputs[a] + 16, 16); memcpy(&s, inputs[b] + 16, 16);\n"
    << "      memset(out, 0xAA, sizeof out); many_v2i64(out, a, p, a * b, 1.5, q, -b, r, 0.25, s);\n"
    << "      print(\"many_v2i64\", a, b, out, 48);\n    }\n  return 0;\n}\n";
  functions += 1;
  return c.str();
}

}  // namespace

TEST_CASE("vectors: arguments in xmm and ymm registers, to and from C and between stamp's functions, come out the "
          "same as llvm's",
          "[stamp][differential][vector]") {
  size_t functions = 0;
  const std::string driver = vector_arg_driver(functions);
  if (!__builtin_cpu_supports("avx2")) WARN("this CPU has no AVX2: 32-byte vector arguments are not run");
  kiln_test::expect_same_as_llvm(vector_arg_module(), driver, functions, "vector arguments");
}

TEST_CASE("vectors: arguments and returns LLVM would not pass in registers fall back with their reason, alike in "
          "both exporters",
          "[stamp][vector]") {
  const std::string ir = R"(target triple = "x86_64-unknown-linux-gnu"
declare void @ext(<4 x i64>)
define void @wide_no_avx(<4 x i64> %a) {
  ret void
}
define <4 x i64> @ret_no_avx() {
  ret <4 x i64> zeroinitializer
}
define void @avx_taken_back(<4 x i64> %a) #0 {
  ret void
}
define void @nine(<2 x i64> %a, <2 x i64> %b, <2 x i64> %c, <2 x i64> %d, <2 x i64> %e, <2 x i64> %f, <2 x i64> %g, <2 x i64> %h, <2 x i64> %i) {
  ret void
}
define void @eight_and_a_double(double %x, <2 x i64> %a, <2 x i64> %b, <2 x i64> %c, <2 x i64> %d, <2 x i64> %e, <2 x i64> %f, <2 x i64> %g, <2 x i64> %h) {
  ret void
}
define void @mask(<16 x i1> %m) {
  ret void
}
define void @call_no_avx(ptr %p) {
  %v = load <4 x i64>, ptr %p, align 1
  call void @ext(<4 x i64> %v)
  ret void
}
define void @eight(<2 x i64> %a, <2 x i64> %b, <2 x i64> %c, <2 x i64> %d, <2 x i64> %e, <2 x i64> %f, <2 x i64> %g, <2 x i64> %h) {
  ret void
}
attributes #0 = { "target-features"="+avx2,-avx" }
)";
  const std::string bitcode = kiln_test::bitcode_from_ir(ir);
  ModuleCensus c = census_of_bytes(bitcode, "v", "vector-abi.bc");
  std::map<std::string, std::string> why;
  for (const FunctionVerdict& f : c.function_verdicts) why[f.name] = f.reasons.empty() ? "" : f.reasons[0];
  CHECK(why["wide_no_avx"] == "argument type <4 x i64>");  // LLVM passes it on the stack without AVX
  CHECK(why["ret_no_avx"] == "return type <4 x i64>");
  CHECK(why["avx_taken_back"] == "argument type <4 x i64>");
  CHECK(why["nine"] == "vector argument past xmm7 or after the 16th argument");
  CHECK(why["eight_and_a_double"] == "vector argument past xmm7 or after the 16th argument");
  CHECK(why["mask"] == "argument type <16 x i1>");
  CHECK(why["call_no_avx"] == "call argument type <4 x i64>");
  CHECK(why["eight"] == "");  // eight vector registers are stamp's
  CHECK(c.verdicts[1].functions_stamp == 1);
  ReaderComparison reader = compare_reader(bitcode, "vector-abi.bc");
  INFO(outcome_name(reader.outcome) << ": " << reader.detail);
  CHECK(reader.outcome == ReaderComparison::kIdentical);
}

// Copies of 16 bytes and more go 16 at a time through xmm15 (copy_frame, copy_memory),
// and zero stores of as many clear it first (zero_frame): between the frame and memory
// both ways, within the frame, and a zero store right after a copy has left other
// bytes in xmm15.
TEST_CASE("aggregate copies and zero stores of 16 bytes and more come out the same as llvm's",
          "[stamp][differential][vector]") {
  std::string bytes;
  for (int k = 0; k < 40; ++k) bytes += "\\" + std::string(1, "0123456789ABCDEF"[(k * 7 + 3) >> 4 & 15]) +
                                        std::string(1, "0123456789ABCDEF"[(k * 7 + 3) & 15]);
  const std::string ir = "target triple = \"x86_64-unknown-linux-gnu\"\n"
                         "@src = private constant [40 x i8] c\"" + bytes + "\"\n"
                         "define void @copies(ptr %out) {\n"
                         "  %a = alloca [40 x i8], align 8\n"
                         "  %b = alloca [40 x i8], align 8\n"
                         "  %v = load [40 x i8], ptr @src\n"             // memory -> slot
                         "  store [40 x i8] %v, ptr %a\n"                // slot -> frame
                         "  %w = load [40 x i8], ptr %a\n"               // frame -> slot
                         "  store [40 x i8] %w, ptr %out\n"              // slot -> memory
                         "  store [40 x i8] zeroinitializer, ptr %b\n"   // zeros in the frame, after a copy
                         "  %z = load [40 x i8], ptr %b\n"
                         "  %o1 = getelementptr i8, ptr %out, i64 40\n"
                         "  store [40 x i8] %z, ptr %o1\n"
                         "  %p = load { i64, i64, i8 }, ptr @src\n"      // 17 bytes and padding (undef)
                         "  %o2 = getelementptr i8, ptr %out, i64 80\n"
                         "  store { i64, i64, i8 } %p, ptr %o2\n"
                         "  ret void\n}\n";
  const std::string driver = "#include <stdio.h>\nvoid copies(unsigned char *out);\n"
                             "int main(void) {\n  unsigned char out[104];\n"
                             "  for (int k = 0; k < 104; ++k) out[k] = 0xAA;\n  copies(out);\n"
                             "  for (int k = 0; k < 97; ++k) printf(\"%d %d\\n\", k, out[k]);\n  return 0;\n}\n";
  kiln_test::expect_same_as_llvm(ir, driver, 1, "copies");
}
