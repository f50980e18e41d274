// The object contract (lib/contract.h): a split module's stamp object keeps llvm's
// contract, and objects of altered IR (a function made internal, hidden or weak, data
// moved between section kinds, a ".kiln." name, a new undefined reference) give exactly
// the differences the alteration makes.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "backend.h"
#include "contract.h"
#include "error.h"
#include "ir_helpers.h"
#include "test_helpers.h"

using namespace kiln;

namespace {

// Data in every section kind, functions of every binding and visibility, a local
// function that both halves call, and two functions that fall back to LLVM (an i128
// byte swap, which stamp does not compute, a thread-local read): stamp splits the module.
const std::string kContractIr = R"(
target triple = "x86_64-unknown-linux-gnu"

@counter = global i64 0
@limit = constant i64 100
@plain = global i64 5
@tls_slot = thread_local global i64 7
@hidden_data = hidden global i64 3
@weak_data = weak global i64 4
@local_table = internal global i64 9

declare i64 @external_a(i64)
declare ptr @llvm.threadlocal.address.p0(ptr)
declare i128 @llvm.bswap.i128(i128)

define internal i64 @helper(i64 %x) {
  %c = load i64, ptr @local_table
  %r = add i64 %x, %c
  ret i64 %r
}

define i64 @exported(i64 %x) {
  %h = call i64 @helper(i64 %x)
  %c = load i64, ptr @counter
  %l = load i64, ptr @limit
  %s = add i64 %h, %c
  %t = add i64 %s, %l
  %e = call i64 @external_a(i64 %t)
  ret i64 %e
}

define hidden i64 @hidden_fn(i64 %x) {
  %r = add i64 %x, 1
  ret i64 %r
}

define protected i64 @protected_fn(i64 %x) {
  %r = add i64 %x, 2
  ret i64 %r
}

define weak i64 @weak_fn(i64 %x) {
  %r = add i64 %x, 3
  ret i64 %r
}

define i64 @wide(i64 %x) {
  %a = zext i64 %x to i128
  %m = call i128 @llvm.bswap.i128(i128 %a)
  %s = lshr i128 %m, 64
  %r = trunc i128 %s to i64
  %h = call i64 @helper(i64 %r)
  ret i64 %h
}

define i64 @tls_reader() {
  %p = call ptr @llvm.threadlocal.address.p0(ptr @tls_slot)
  %v = load i64, ptr %p
  ret i64 %v
}
)";

std::string object_of(const std::string& ir, const std::string& backend = "llvm") {
  return make_backend(backend, Profile::fast)->emit(kiln_test::bitcode_from_ir(ir), "m.bc").object;
}

// The differences, one rendered line each, for exact comparison.
std::vector<std::string> lines(const std::vector<ContractDifference>& differences) {
  std::vector<std::string> out;
  for (const ContractDifference& d : differences) out.push_back(render_difference(d, "cand"));
  return out;
}

using Lines = std::vector<std::string>;

// The differences of the object that `backend` makes of kContractIr altered (`from`
// replaced by `to`) from llvm's object of kContractIr.
Lines altered(const std::string& from, const std::string& to, const std::string& backend = "llvm") {
  return lines(compare_contract(object_of(kContractIr), object_of(kiln_test::replaced(kContractIr, from, to), backend)));
}

}  // namespace

TEST_CASE("a split module's stamp object keeps llvm's contract, on both of stamp's routes", "[contract]") {
  const std::string bitcode = kiln_test::bitcode_from_ir(kContractIr);
  const std::string reference = make_backend("llvm", Profile::fast)->emit(bitcode, "m.bc").object;
  for (bool verify : {true, false}) {  // without the verifier: the split route of the direct reader
    INFO("verify " << verify);
    BackendOptions options;
    options.verify = verify;
    EmitResult r = make_backend("stamp", Profile::fast, options)->emit(bitcode, "m.bc");
    REQUIRE(r.counts.functions_stamp > 0);
    // wide; tls_reader is stamp's, its variable's definition staying in llvm's half
    REQUIRE(r.counts.functions_llvm == 1);
    CHECK(lines(compare_contract(reference, r.object)) == Lines{});
  }
  CHECK(check_module_contract(bitcode, "m.bc", "stamp", Profile::fast).empty());
  CHECK(lines(compare_contract(reference, reference)) == Lines{});
}

TEST_CASE("a function made internal, hidden or weak breaks the contract", "[contract]") {
  const std::string define = "define i64 @exported";
  for (const char* backend : {"llvm", "stamp"}) {
    INFO(backend);
    CHECK(altered(define, "define internal i64 @exported", backend) ==
          Lines{"exported: missing: llvm GLOBAL FUNC default text, cand LOCAL FUNC default text"});
    CHECK(altered(define, "define hidden i64 @exported", backend) ==
          Lines{"exported: visibility differs: llvm default, cand hidden"});
    CHECK(altered(define, "define weak i64 @exported", backend) ==
          Lines{"exported: binding differs: llvm GLOBAL, cand WEAK"});
  }
  // And the other way round: what the candidate has that llvm's object does not.
  const std::string internal =
      object_of(kiln_test::replaced(kContractIr, "define hidden i64 @hidden_fn", "define internal i64 @hidden_fn"));
  CHECK(lines(compare_contract(internal, object_of(kContractIr))) ==
        Lines{"hidden_fn: extra: llvm LOCAL FUNC default text, cand GLOBAL FUNC hidden text"});
}

TEST_CASE("data moved to another section kind or made thread-local breaks the contract", "[contract]") {
  CHECK(altered("@limit = constant", "@limit = global") ==
        Lines{"limit: section kind differs: llvm rodata, cand data"});
  CHECK(altered("@counter = global i64 0", "@counter = global i64 1") ==
        Lines{"counter: section kind differs: llvm bss, cand data"});
  CHECK(altered("@plain = global", "@plain = thread_local global") ==
        Lines{"plain: type differs: llvm OBJECT, cand TLS", "plain: section kind differs: llvm data, cand tls"});
}

TEST_CASE("a .kiln. name, local or not, and a definition llvm's object only references", "[contract]") {
  const std::string reference = object_of(kContractIr);
  std::string ir = kContractIr +
      "define i64 @\"extra.kiln.0123456789ab\"() {\n  ret i64 1\n}\n"
      "define internal i64 @\"local.kiln.0123456789ab\"() {\n  ret i64 2\n}\n";
  ir = kiln_test::replaced(ir, "declare i64 @external_a(i64)", "define i64 @external_a(i64 %x) {\n  ret i64 %x\n}");
  CHECK(lines(compare_contract(reference, object_of(ir))) ==
        Lines{"external_a: extra: llvm undefined, cand GLOBAL FUNC default text",
              "extra.kiln.0123456789ab: extra: llvm absent, cand GLOBAL FUNC default text",
              // Their sections' names too (as their section symbols have them).
              ".text.extra.kiln.0123456789ab: .kiln. name: llvm absent, cand LOCAL SECTION default text",
              ".text.local.kiln.0123456789ab: .kiln. name: llvm absent, cand LOCAL SECTION default text",
              "extra.kiln.0123456789ab: .kiln. name: llvm absent, cand GLOBAL FUNC default text",
              "local.kiln.0123456789ab: .kiln. name: llvm absent, cand LOCAL FUNC default text"});
}

TEST_CASE("references are not part of the contract; a definition turned into one is", "[contract]") {
  const std::string reference = object_of(kContractIr);
  // external_b is new and external_a no longer referenced: the final link resolves
  // references as it would any other (stamp's memcpy calls, say).
  std::string ir = kiln_test::replaced(kContractIr, "declare i64 @external_a(i64)", "declare i64 @external_b(i64)");
  ir = kiln_test::replaced(ir, "call i64 @external_a", "call i64 @external_b");
  CHECK(lines(compare_contract(reference, object_of(ir))).empty());
  // weak_fn only declared, and called: missing, but the reference resolves as before.
  ir = kiln_test::replaced(
      kContractIr, "define weak i64 @weak_fn(i64 %x) {\n  %r = add i64 %x, 3\n  ret i64 %r\n}",
      "declare i64 @weak_fn(i64)\ndefine i64 @calls_weak() {\n  %r = call i64 @weak_fn(i64 0)\n  ret i64 %r\n}");
  CHECK(lines(compare_contract(reference, object_of(ir))) ==
        Lines{"weak_fn: missing: llvm WEAK FUNC default text, cand undefined",
              "calls_weak: extra: llvm absent, cand GLOBAL FUNC default text"});
}

TEST_CASE("bytes that are not an x86-64 object, and bitcode that is not bitcode, are bad input", "[contract]") {
  const std::string reference = object_of(kContractIr);
  for (const std::string& bad : {std::string("not an object"), reference.substr(0, reference.size() / 3)}) {
    try {
      compare_contract(reference, bad, "m.bc");
      FAIL("expected an error");
    } catch (const KilnError& e) {
      CHECK(e.code() == kExitBadInput);
      CHECK(std::string(e.what()).find("m.bc (the candidate object)") != std::string::npos);
    }
  }
  try {
    check_module_contract("BC\xc0\xde truncated", "broken.bc", "stamp", Profile::fast);
    FAIL("expected an error");
  } catch (const KilnError& e) {
    CHECK(e.code() == kExitBadInput);
    CHECK(std::string(e.what()).rfind("broken.bc", 0) == 0);
  }
}
