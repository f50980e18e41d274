#include <catch2/catch.hpp>

#include "census.h"
#include "error.h"
#include "hash.h"
#include "ir_helpers.h"

using namespace kiln;

static const char* kRichIr = R"(
target triple = "x86_64-unknown-linux-gnu"
@counter = global i64 0
@tls = thread_local global i32 7
@table = internal constant [2 x ptr] [ptr @counter, ptr @callee]
@alias = alias i64, ptr @counter

declare i32 @__gxx_personality_v0(...)
declare void @callee()
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

define i64 @loop(i64 %n) {
entry:
  br label %head
head:
  %i = phi i64 [ 0, %entry ], [ %next, %head ]
  %next = add i64 %i, 1
  %done = icmp uge i64 %next, %n
  br i1 %done, label %exit, label %head
exit:
  ret i64 %next
}

define void @eh(ptr %dst, ptr %src) personality ptr @__gxx_personality_v0 {
entry:
  call void @llvm.memcpy.p0.p0.i64(ptr %dst, ptr %src, i64 16, i1 false)
  invoke void @callee() to label %ok unwind label %lp
ok:
  %old = atomicrmw umax ptr @counter, i64 1 seq_cst
  %v = load <4 x i32>, ptr %src
  store <4 x i32> %v, ptr %dst
  call void asm sideeffect "nop", ""()
  ret void
lp:
  %l = landingpad { ptr, i32 } cleanup
  resume { ptr, i32 } %l
}

define coldcc void @cold() {
  ret void
}
)";

TEST_CASE("census counts functions, blocks, opcodes, intrinsics and features", "[census]") {
  std::string bytes = kiln_test::bitcode_from_ir(kRichIr);
  ModuleCensus c = census_of_bytes(bytes, xxh3_128_hex(bytes), "rich.bc");
  const ModuleFacts& f = c.facts;
  CHECK(f.bytes == bytes.size());
  CHECK(f.functions_defined == 3);
  CHECK(f.functions_declared == 3);  // personality, callee, memcpy
  CHECK(f.blocks == 3 + 3 + 1);
  CHECK(f.instructions == 6 + 9 + 1);
  CHECK(f.opcodes.at("phi") == 1);
  CHECK(f.opcodes.at("invoke") == 1);
  CHECK(f.opcodes.at("landingpad") == 1);
  CHECK(f.intrinsics.at("llvm.memcpy.p0.p0.i64") == 1);
  CHECK(f.calling_conventions.at("c") == 2);
  CHECK(f.calling_conventions.at("cold") == 1);
  CHECK(f.globals == 3);
  CHECK(f.tls_globals == 1);
  CHECK(f.aliases == 1);
  CHECK(f.invokes == 1);
  CHECK(f.landingpads == 1);
  CHECK(f.personalities == 1);
  CHECK(f.inline_asm_calls == 1);
  CHECK(f.atomic_instructions == 1);
  CHECK(f.vector_instructions == 2);
  CHECK_FALSE(f.debug_info);
}

TEST_CASE("verdicts list every reason; stamp decides per function", "[census]") {
  std::string good = kiln_test::bitcode_from_ir(kiln_test::kAddIr);
  ModuleCensus ok = census_of_bytes(good, "id", "good.bc");
  REQUIRE(ok.verdicts.size() == 2);
  CHECK(ok.verdicts[0].backend == "llvm");
  CHECK(ok.verdicts[0].verdict == "eligible");
  CHECK(ok.verdicts[0].reasons.empty());
  CHECK(ok.verdicts[1].backend == "stamp");
  CHECK(ok.verdicts[1].verdict == "eligible");
  CHECK(ok.verdicts[1].functions_stamp == 1);

  // The rich module: @loop is stamp's; @eh has inline asm, vectors and atomics, and
  // @cold a calling convention that is not C's (coldcc): all reasons are listed.
  std::string rich = kiln_test::bitcode_from_ir(kRichIr);
  ModuleCensus partial = census_of_bytes(rich, "r", "rich.bc");
  const Verdict& sv = partial.verdicts[1];
  CHECK(sv.verdict == "partial");
  CHECK(sv.functions_stamp == 1);
  CHECK(sv.functions_fallback == 2);
  auto has = [&](const std::string& text) {
    for (const auto& r : sv.reasons)
      if (r.find(text) != std::string::npos) return true;
    return false;
  };
  CHECK(has("inline asm (1 functions)"));
  CHECK_FALSE(has("vectors"));                          // vectors that are only loaded and stored are moved as bytes
  CHECK(has("atomics: atomicrmw umax (1 functions)"));  // add, sub, xchg, and, or, xor, nand are stamp's
  CHECK(has("calling convention 9 (1 functions)"));
  REQUIRE(partial.function_verdicts.size() == 3);
  CHECK(partial.function_verdicts[0].reasons.empty());  // @loop

  std::string arm = kiln_test::bitcode_from_ir(R"(
target triple = "aarch64-unknown-linux-gnu"
define void @f() {
  ret void
}
)");
  ModuleCensus bad = census_of_bytes(arm, "id2", "arm.bc");
  CHECK(bad.verdicts[0].verdict == "rejected");
  REQUIRE(bad.verdicts[0].reasons.size() == 1);
  CHECK(bad.verdicts[0].reasons[0].find("target: ") == 0);

  ModuleCensus garbage = census_of_bytes("not bitcode at all", "id3", "junk.bc");
  CHECK(garbage.verdicts[0].verdict == "rejected");
  CHECK(garbage.verdicts[0].reasons.at(0).rfind("read: ", 0) == 0);
}

TEST_CASE("the census summary counts modules per verdict and first reason", "[census]") {
  std::string good = kiln_test::bitcode_from_ir(kiln_test::kAddIr);
  std::vector<ModuleCensus> all = {census_of_bytes(good, "a", "a.bc"), census_of_bytes(good, "b", "b.bc"),
                                   census_of_bytes("junk", "c", "c.bc")};
  std::string json = census_summary_json(all);
  CHECK(json.find("\"modules\":3") != std::string::npos);
  CHECK(json.find("\"eligible\":{\"modules\":2,\"functions\":2,\"instructions\":4}") != std::string::npos);
  CHECK(json.find("\"read\":{\"modules\":1") != std::string::npos);
  std::string table = census_summary_table(all);
  CHECK(table.find("back end llvm") != std::string::npos);
  CHECK(table.find("add") != std::string::npos);
}

TEST_CASE("a census record read back gives the same record and the same summary", "[census]") {
  // Several functions with reasons (@eh: inline asm, atomics; @cold: its calling
  // convention), a name and a label that are not UTF-8, a module llvm rejects and one
  // that is not bitcode.
  std::string rich = kiln_test::bitcode_from_ir(std::string(kRichIr) + R"(
define void @"odd\FFname"() {
  %p = alloca i64
  %old = atomicrmw umax ptr %p, i64 1 seq_cst
  ret void
}
)");
  std::string arm =
      kiln_test::bitcode_from_ir("target triple = \"aarch64-unknown-linux-gnu\"\ndefine void @f() {\n  ret void\n}\n");
  std::vector<ModuleCensus> all = {census_of_bytes(rich, xxh3_128_hex(rich), "dir\xff/rich.bc"),
                                   census_of_bytes(kiln_test::bitcode_from_ir(kiln_test::kAddIr), "a", "a.bc"),
                                   census_of_bytes(arm, "b", "arm.bc"), census_of_bytes("junk", "c", "c.bc")};
  all[0].crate = "crate \"quoted\"\n";
  REQUIRE(all[0].verdicts[1].reasons.size() >= 3);
  std::vector<ModuleCensus> back;
  for (const auto& c : all) {
    std::string json = c.to_json();
    back.push_back(census_from_json(json, "census.jsonl"));
    CHECK(back.back().to_json() == json);
  }
  CHECK(back[0].label == "dir\xff/rich.bc");
  CHECK(back[0].function_verdicts.size() == 3);  // the ones that fall back
  CHECK(census_summary_table(back) == census_summary_table(all));
  CHECK(census_summary_json(back) == census_summary_json(all));
  CHECK(census_explain(back[0]) == census_explain(all[0]));
}

TEST_CASE("a record that is not a census record is a KilnError", "[census]") {
  std::string good = census_of_bytes(kiln_test::bitcode_from_ir(kiln_test::kAddIr), "a", "a.bc").to_json();
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    REQUIRE(s.find(from) != std::string::npos);
    return s.replace(s.find(from), from.size(), to);
  };
  for (const std::string& bad :
       {std::string("not json"), std::string("[]"), std::string("{}"), good.substr(0, good.size() / 2),
        replaced("\"v\":2", "\"v\":3"), replaced("\"blocks\":", "\"blocks\":\"3\",\"x\":"),
        replaced("\"blocks\":", "\"blocks\":-1,\"x\":"), replaced("\"opcodes\":{", "\"opcodes\":{\"add\":\"1\","),
        replaced("\"reasons\":[]", "\"reasons\":[7]"),
        replaced("\"stamp_fallback_functions\":[]", "\"stamp_fallback_functions\":{}"),
        replaced(",\"functions_stamp\":1", ""), replaced("\"id\":\"a\",", ""),
        replaced("\"reader\":{", "\"reader_\":{"),
        replaced("\"functions_declined\":", "\"functions_declined\":true,\"x\":")}) {
    INFO(bad);
    try {
      census_from_json(bad, "census.jsonl");
      FAIL("read as a census record");
    } catch (const KilnError& e) {
      CHECK(std::string(e.what()).rfind("census.jsonl: ", 0) == 0);
    }
  }
}

namespace {
// A record with the reader's view set by hand: the census of a real module depends on
// what the reader reads, these tests on the record alone.
ModuleCensus with_reader(std::string id, uint64_t functions, bool read, bool direct, std::string reason,
                         uint64_t declined) {
  ModuleCensus c = census_of_bytes(kiln_test::bitcode_from_ir(kiln_test::kAddIr), id, id + ".bc");
  c.facts.functions_defined = functions;
  c.reader = {read, direct, std::move(reason), declined};
  return c;
}
std::vector<ModuleCensus> reader_corpus() {
  return {with_reader("a", 4, true, true, "", 0), with_reader("b", 3, true, false, "functions fall back to llvm", 0),
          with_reader("c", 5, false, false, "reader: instruction 99", 2),
          with_reader("d", 2, false, false, "reader: instruction 99", 1),
          with_reader("e", 6, false, false, "reader: not LLVM bitcode", 6)};
}
}  // namespace

TEST_CASE("the reader record is written and read back byte for byte", "[census]") {
  for (const auto& c : reader_corpus()) {
    std::string json = c.to_json();
    INFO(json);
    CHECK(json.find("\"reader\":{\"read\":") != std::string::npos);
    ModuleCensus back = census_from_json(json, "census.jsonl");
    CHECK(back.reader.read == c.reader.read);
    CHECK(back.reader.direct == c.reader.direct);
    CHECK(back.reader.reason == c.reader.reason);
    CHECK(back.reader.functions_declined == c.reader.functions_declined);
    CHECK(back.to_json() == json);
  }
  std::string json = reader_corpus()[2].to_json();
  CHECK(json.find("\"reader\":{\"read\":false,\"direct\":false,\"reason\":\"reader: instruction 99\","
                  "\"functions_declined\":2}") != std::string::npos);
}

TEST_CASE("a census record of another version or with an impossible reader record is refused", "[census]") {
  std::string good = reader_corpus()[0].to_json();
  auto refused = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    REQUIRE(s.find(from) != std::string::npos);
    s.replace(s.find(from), from.size(), to);
    try {
      census_from_json(s, "census.jsonl");
    } catch (const KilnError& e) {
      CHECK(e.code() == kExitBadInput);
      return std::string(e.what());
    }
    FAIL("read as a census record: " << s);
    return std::string();
  };
  // A version 1 record has no reader record: it is refused, never read as "not read".
  CHECK(refused("\"v\":2", "\"v\":1") == "census.jsonl: not a census record: version 1, this kiln reads 2");
  CHECK(refused("\"read\":true", "\"read\":false").find("direct but not read") != std::string::npos);
  CHECK(refused("\"direct\":true", "\"direct\":false").find("a reason exactly when") != std::string::npos);
  CHECK(refused("\"reason\":\"\"", "\"reason\":7").find("'reason'") != std::string::npos);
}

TEST_CASE("the census summary counts what the reader read and every reason it gave", "[census]") {
  std::vector<ModuleCensus> all = reader_corpus();
  std::string table = census_summary_table(all);
  INFO(table);
  // Read: a and b; functions read: 4 + 3 + (5 - 2) + (2 - 1) + 0 of 20; direct: a.
  CHECK(table.find("direct reader\n") != std::string::npos);
  CHECK(table.find("  modules read directly                         2 of 5 (40.0%)\n") != std::string::npos);
  CHECK(table.find("  functions read directly                      11 of 20 (55.0%)\n") != std::string::npos);
  CHECK(table.find("  modules that take the direct route            1 of 5 (20.0%)\n") != std::string::npos);
  // Every reason, most modules first; ties in the order of the reasons.
  size_t twice = table.find("         2  reader: instruction 99\n");
  size_t fall_back = table.find("         1  functions fall back to llvm\n");
  size_t not_bitcode = table.find("         1  reader: not LLVM bitcode\n");
  CHECK(twice != std::string::npos);
  CHECK(fall_back != std::string::npos);
  CHECK(not_bitcode != std::string::npos);
  CHECK(twice < fall_back);
  CHECK(fall_back < not_bitcode);

  std::string json = census_summary_json(all);
  CHECK(json.find("\"v\":2") != std::string::npos);
  CHECK(json.find("\"reader\":{\"modules\":5,\"modules_read\":2,\"modules_direct\":1,\"functions\":20,"
                  "\"functions_read\":11,\"reasons\":[{\"reason\":\"reader: instruction 99\",\"modules\":2},"
                  "{\"reason\":\"functions fall back to llvm\",\"modules\":1},"
                  "{\"reason\":\"reader: not LLVM bitcode\",\"modules\":1}]}") != std::string::npos);

  // Read back from records, the same summary.
  std::vector<ModuleCensus> back;
  for (const auto& c : all) back.push_back(census_from_json(c.to_json(), "census.jsonl"));
  CHECK(census_summary_table(back) == table);
  CHECK(census_summary_json(back) == json);
}

TEST_CASE("a module's explanation says what the reader made of it", "[census]") {
  std::vector<ModuleCensus> all = reader_corpus();
  CHECK(census_explain(all[0]).find("\n  reader: direct (read whole: stamp emits it without llvm)\n") !=
        std::string::npos);
  CHECK(census_explain(all[1]).find("\n  reader: read, not direct: functions fall back to llvm\n") !=
        std::string::npos);
  CHECK(census_explain(all[2]).find("\n  reader: not read: reader: instruction 99 (2 functions declined)\n") !=
        std::string::npos);
}

TEST_CASE("the census reads a module with the direct reader", "[census]") {
  // Corrupt for the reader as for LLVM: not read, the reason without the file's name.
  ModuleCensus junk = census_of_bytes("not bitcode at all", "j", "junk.bc");
  CHECK_FALSE(junk.reader.read);
  CHECK_FALSE(junk.reader.direct);
  CHECK(junk.reader.reason.rfind("reader: ", 0) == 0);
  CHECK(junk.reader.reason.find("junk.bc") == std::string::npos);
  CHECK(junk.reader.functions_declined == 0);  // LLVM found no functions either

  ModuleCensus add = census_of_bytes(kiln_test::bitcode_from_ir(kiln_test::kAddIr), "a", "add.bc");
  INFO(add.reader.reason);
  CHECK(add.reader.read);
  CHECK(add.reader.direct);
  CHECK(add.reader.reason.empty());
  CHECK(add.reader.functions_declined == 0);
  CHECK(census_explain(add).find("\n  reader: direct (") != std::string::npos);

  // Read whole, but the back end refuses its target there: it never takes the direct route.
  ModuleCensus arm =
      census_of_bytes(kiln_test::bitcode_from_ir(
                          "target triple = \"aarch64-unknown-linux-gnu\"\ndefine void @f() {\n  ret void\n}\n"),
                      "b", "arm.bc");
  CHECK(arm.reader.read);
  CHECK_FALSE(arm.reader.direct);
  CHECK(arm.reader.reason == "target: aarch64-unknown-linux-gnu is not x86-64");

  // Read, but @asm falls back to llvm: not direct, for a reason that is not the reader's.
  std::string asm_ir = kiln_test::bitcode_from_ir(R"(
target triple = "x86_64-unknown-linux-gnu"
define void @asm() {
  call void asm sideeffect "nop", ""()
  ret void
}
define i64 @id(i64 %a) {
  ret i64 %a
}
)");
  ModuleCensus partial = census_of_bytes(asm_ir, xxh3_128_hex(asm_ir), "asm.bc");
  INFO(partial.reader.reason);
  CHECK(partial.reader.read);
  CHECK_FALSE(partial.reader.direct);
  CHECK(partial.reader.reason == "functions fall back to llvm");
  CHECK(partial.reader.functions_declined == 0);
  CHECK(census_explain(partial).find("\n  reader: read, not direct: functions fall back to llvm\n") !=
        std::string::npos);
  CHECK(census_from_json(partial.to_json(), "census.jsonl").to_json() == partial.to_json());
}
