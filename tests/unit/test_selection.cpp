// kiln-selection(5) and KILN_TEST_FAULT: the file's parser and matcher, and stamp
// honouring both (kiln-bisect's interface).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <optional>

#include <xxhash.h>

#include "backend.h"
#include "census.h"
#include "emit.h"
#include "error.h"
#include "fs.h"
#include "hash.h"
#include "ir_helpers.h"
#include "process.h"
#include "selection.h"
#include "test_helpers.h"

using namespace kiln;
using kiln_test::ScratchDir;
using kiln_test::ScopedEnv;

namespace {

const std::string kIdA(32, 'a'), kIdB(32, 'b');

Selection parsed(const std::string& body) { return parse_selection("# kiln-selection 1\n" + body, "sel.txt"); }

// The error parse_selection gives for `text` (which must be bad).
std::string selection_error_of(const std::string& text) {
  try {
    parse_selection(text, "sel.txt");
  } catch (const KilnError& e) {
    CHECK(e.code() == kExitBadInput);
    return e.what();
  }
  FAIL("accepted: " << text);
  return "";
}

// The lowest `n` bits of h, as a hash line writes them (lowest bit last).
std::string low_bits(uint64_t h, int n) {
  std::string bits;
  for (int i = n - 1; i >= 0; --i) bits.push_back(((h >> i) & 1) ? '1' : '0');
  return bits;
}

}  // namespace

TEST_CASE("a selection file: lines, comments and what they select", "[selection]") {
  Selection s = parsed("\n# a comment\nmodule " + kIdA + "\nfunction " + kIdB + "\tfoo\nfunction * bar\n");
  CHECK(s.selects_module(kIdA));
  CHECK(s.selects_module(kIdB));
  CHECK(s.selects(kIdA, "anything"));
  CHECK(s.selects(kIdB, "foo"));
  CHECK_FALSE(s.selects(kIdB, "baz"));
  CHECK(s.selects(kIdB, "bar"));
  CHECK(s.selects(std::string(32, 'c'), "bar"));
  CHECK(s.by_name());
  Selection narrow = parsed("function " + kIdB + " foo\n");
  CHECK_FALSE(narrow.by_name());
  CHECK_FALSE(narrow.selects_module(kIdA));
  CHECK_FALSE(narrow.selects(kIdA, "foo"));
  Selection empty = parsed("");
  CHECK_FALSE(empty.selects_module(kIdA));
  CHECK_FALSE(empty.selects(kIdA, "foo"));
}

TEST_CASE("a selection's hash lines match the low bits of the name's xxh3-64", "[selection]") {
  const uint64_t h = xxh3_64("_ZN4core3fmt5write17h0123456789abcdefE");
  CHECK(h == XXH3_64bits("_ZN4core3fmt5write17h0123456789abcdefE", 38));
  for (int n : {1, 5, 17, 64}) {
    CHECK(parsed("hash " + low_bits(h, n) + "\n").selects(kIdA, "_ZN4core3fmt5write17h0123456789abcdefE"));
    CHECK_FALSE(parsed("hash " + low_bits(h ^ 1, n) + "\n").selects(kIdA, "_ZN4core3fmt5write17h0123456789abcdefE"));
  }
  CHECK(parsed("hash 1\n").selects(kIdA, "x") == ((xxh3_64("x") & 1) == 1));
}

TEST_CASE("a selection's digest covers exactly the lines that can affect the module", "[selection]") {
  const std::string base = "module " + kIdA + "\nfunction " + kIdB + " foo\n";
  Selection s = parsed(base);
  CHECK(s.digest_for(kIdA).size() == 16);
  CHECK(s.digest_for(kIdA) != s.digest_for(kIdB));
  // Lines about other modules, and the order of lines, leave a module's digest alone.
  Selection other = parsed("function " + kIdB + " foo\nfunction " + kIdB + " more\nmodule " + kIdA + "\n");
  CHECK(other.digest_for(kIdA) == s.digest_for(kIdA));
  CHECK(other.digest_for(kIdB) != s.digest_for(kIdB));
  CHECK(parsed("# a comment\n" + base + "\n").digest_for(kIdA) == s.digest_for(kIdA));
  // Lines that reach every module change every digest.
  Selection every = parsed(base + "function * bar\n");
  CHECK(every.digest_for(kIdA) != s.digest_for(kIdA));
  CHECK(parsed(base + "hash 01\n").digest_for(kIdB) != s.digest_for(kIdB));
  CHECK(parsed(base + "hash 01\n").digest_for(kIdB) != every.digest_for(kIdB));
}

TEST_CASE("a bad selection file is one error naming FILE:LINE and why", "[selection]") {
  CHECK_THAT(selection_error_of(""), Catch::Contains("sel.txt:1: the first line must be '# kiln-selection 1'"));
  CHECK_THAT(selection_error_of("# kiln-selection 2\n"), Catch::Contains("sel.txt:1:"));
  CHECK_THAT(selection_error_of("module " + kIdA + "\n"), Catch::Contains("sel.txt:1:"));
  const std::string h = "# kiln-selection 1\n";
  CHECK_THAT(selection_error_of(h + "\nmodules " + kIdA + "\n"), Catch::Contains("sel.txt:3: unknown keyword 'modules'"));
  CHECK_THAT(selection_error_of(h + "module ABC\n"), Catch::Contains("sel.txt:2: 'ABC' is not a module id"));
  CHECK_THAT(selection_error_of(h + "module " + std::string(32, 'A') + "\n"), Catch::Contains("sel.txt:2:"));
  CHECK_THAT(selection_error_of(h + "function xyz foo\n"), Catch::Contains("sel.txt:2: 'xyz' is not a module id"));
  CHECK_THAT(selection_error_of(h + "function * \n"), Catch::Contains("sel.txt:2: empty field"));
  CHECK_THAT(selection_error_of(h + "function *  foo\n"), Catch::Contains("sel.txt:2: empty field"));
  CHECK_THAT(selection_error_of(h + "function foo\n"), Catch::Contains("sel.txt:2: 'function' takes 2 fields"));
  CHECK_THAT(selection_error_of(h + "hash 012\n"), Catch::Contains("sel.txt:2: '012' is not 1 to 64 binary digits"));
  CHECK_THAT(selection_error_of(h + "hash " + std::string(65, '1') + "\n"), Catch::Contains("sel.txt:2:"));
  CHECK_THAT(selection_error_of(h + "hash\n"), Catch::Contains("sel.txt:2: 'hash' takes 1 field"));
}

TEST_CASE("selection files on disk: missing, --candidate-hash, KILN_SELECTION", "[selection]") {
  ScratchDir dir;
  try {
    load_selection(dir.path + "/none.txt");
    FAIL("a missing file was read");
  } catch (const KilnError& e) {
    CHECK(e.code() == kExitIo);
  }
  const std::string path = selection_file_for_hash("0110", dir.path + "/corpus");
  CHECK(path == dir.path + "/corpus/selection-hash-0110.txt");
  CHECK(read_file(path) == "# kiln-selection 1\nhash 0110\n");
  CHECK_THROWS_AS(selection_file_for_hash("012", dir.path), KilnError);
  {
    ScopedEnv env(kEnvSelection, "");
    CHECK(active_selection() == nullptr);
    use_selection_file(path);
    REQUIRE(active_selection() != nullptr);
    CHECK(active_selection()->path() == path);
    CHECK(selection_digest(kIdA) == load_selection(path).digest_for(kIdA));
  }
}

namespace {

// Two functions: `pick` branches, `add` does not. main.c prints what they return.
const char* kPickIr = R"(
target triple = "x86_64-unknown-linux-gnu"
define i64 @pick(i64 %a) {
entry:
  %big = icmp sgt i64 %a, 10
  br i1 %big, label %yes, label %no
yes:
  ret i64 1
no:
  ret i64 2
}
define i64 @add(i64 %a, i64 %b) {
  %s = add i64 %a, %b
  ret i64 %s
}
)";
const char* kPickMain =
    "#include <stdio.h>\nlong pick(long);\nlong add(long, long);\n"
    "int main(void) { printf(\"%ld %ld %ld\\n\", pick(20), pick(3), add(40, 2)); return 0; }\n";

// Emits pick.bc with stamp, links it with main.c and returns what the program prints.
std::string run_pick(const ScratchDir& dir, EmitFileResult* out) {
  *out = emit_file(dir.path + "/pick.bc", dir.path + "/pick.o", "stamp", Profile::fast);
  ProcessOptions quiet;
  quiet.capture_stdout = true;
  REQUIRE(run_process({"cc", "-o", dir.path + "/prog", dir.path + "/main.c", dir.path + "/pick.o"}, quiet).exit_code ==
          0);
  ProcessResult run = run_process({dir.path + "/prog"}, quiet);
  REQUIRE(run.exit_code == 0);
  return run.captured_stdout;
}

}  // namespace

TEST_CASE("stamp under a selection: the rest is llvm's, and the object still runs", "[selection][emit]") {
  ScratchDir dir;
  const std::string bc = kiln_test::bitcode_from_ir(kPickIr), id = xxh3_128_hex(bc);
  write_file_atomic(dir.path + "/pick.bc", bc);
  write_file_atomic(dir.path + "/main.c", kPickMain);
  write_file_atomic(dir.path + "/sel.txt", "# kiln-selection 1\nfunction " + id + " pick\n");
  ScopedEnv selection(kEnvSelection, dir.path + "/sel.txt");
  for (const char* verify : {"1", "0"}) {  // LLVM's route, and the direct reader's split route
    ScopedEnv env("KILN_VERIFY", verify);
    EmitFileResult r;
    CHECK(run_pick(dir, &r) == "1 2 42\n");
    CHECK(r.result.counts.functions_stamp == 1);
    CHECK(r.result.counts.functions_llvm == 1);
    CHECK_THAT(r.receipt, Catch::Contains("\"selection\":\"" + load_selection(dir.path + "/sel.txt").digest_for(id)));
    CHECK_THAT(r.receipt, !Catch::Contains("test_fault"));
  }
  ModuleCensus c = census_of_bytes(bc, id, "pick.bc");
  REQUIRE(c.function_verdicts.size() == 2);
  CHECK(c.function_verdicts[0].stamp());
  CHECK(c.function_verdicts[1].reasons == std::vector<std::string>{"not selected"});
  CHECK_THAT(census_explain(c), Catch::Contains("fallback add (2 instructions): [not selected]"));
  CHECK_THAT(census_explain(c), Catch::Contains("selection: " + dir.path + "/sel.txt (digest "));
  CHECK_THAT(census_explain(c), Catch::Contains("1 of 2 functions selected"));
}

TEST_CASE("KILN_TEST_FAULT miscompiles stamp's functions of that name, and only those", "[selection][emit]") {
  ScratchDir dir;
  const std::string bc = kiln_test::bitcode_from_ir(kPickIr), id = xxh3_128_hex(bc);
  write_file_atomic(dir.path + "/pick.bc", bc);
  write_file_atomic(dir.path + "/main.c", kPickMain);
  write_file_atomic(dir.path + "/all.txt", "# kiln-selection 1\nmodule " + id + "\n");
  write_file_atomic(dir.path + "/add.txt", "# kiln-selection 1\nfunction * add\n");
  EmitFileResult r;
  CHECK(run_pick(dir, &r) == "1 2 42\n");  // without the fault: correct
  ScopedEnv fault(kEnvTestFault, "other,pick");
  for (const char* verify : {"1", "0"}) {  // both readers' routes
    ScopedEnv env("KILN_VERIFY", verify);
    {
      ScopedEnv selection(kEnvSelection, dir.path + "/all.txt");
      CHECK(run_pick(dir, &r) == "2 1 42\n");  // pick's branch goes the wrong way
      CHECK(r.result.test_faults == std::vector<std::string>{"pick"});
      CHECK_THAT(r.receipt, Catch::Contains("\"test_fault\":[\"pick\"]"));
    }
    ScopedEnv selection(kEnvSelection, dir.path + "/add.txt");
    CHECK(run_pick(dir, &r) == "1 2 42\n");  // pick is llvm's: correct
    CHECK(r.result.test_faults.empty());
    CHECK(r.result.counts.functions_llvm == 1);
  }
}

TEST_CASE("cmd: back ends under a selection take whole modules", "[selection][emit]") {
  ScratchDir dir;
  write_file_atomic(dir.path + "/name.txt", "# kiln-selection 1\nfunction * pick\n");
  {
    ScopedEnv selection(kEnvSelection, dir.path + "/name.txt");
    try {
      make_backend("cmd:cp {in} {out}", Profile::fast);
      FAIL("a selection by name was taken for cmd:");
    } catch (const KilnError& e) {
      CHECK(e.code() == kExitUsage);
      CHECK_THAT(e.what(), Catch::Contains("selection by function name needs stamp"));
    }
  }
  const std::string bc = kiln_test::bitcode_from_ir(kPickIr);
  write_file_atomic(dir.path + "/other.txt", "# kiln-selection 1\nmodule " + std::string(32, '0') + "\n");
  ScopedEnv selection(kEnvSelection, dir.path + "/other.txt");
  // Not selected: llvm emits it, and the tool (which would fail) never runs.
  EmitResult r = make_backend("cmd:false {in} {out}", Profile::fast)->emit(bc, "pick.bc");
  CHECK(object_problem(r.object).empty());
  CHECK(r.selection.size() == 16);
}
