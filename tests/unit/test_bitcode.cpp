#include <catch2/catch.hpp>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "bitcode.h"
#include "error.h"
#include "ir_helpers.h"

using namespace kiln;

static std::string parse_error_of(const std::string& bytes) {
  llvm::LLVMContext ctx;
  try {
    parse_bitcode(ctx, bytes, "in.bc");
  } catch (const KilnError& e) {
    CHECK(e.code() == kExitBadInput);
    return e.what();
  }
  return "";
}

TEST_CASE("bitcode reading rejects bad input with one line naming the file", "[bitcode]") {
  CHECK(parse_error_of("") == "in.bc: empty file, not LLVM bitcode");
  CHECK(parse_error_of("\x7f"
                 "ELF\x02\x01\x01rest-of-an-object") == "in.bc: not LLVM bitcode (looks like an ELF file)");
  CHECK(parse_error_of("define void @f() {\n ret void\n}\n").find("LLVM IR text") != std::string::npos);
  std::string good = kiln_test::bitcode_from_ir(kiln_test::kAddIr);
  std::string truncated = good.substr(0, good.size() / 2);
  std::string message = parse_error_of(truncated);
  CHECK(message.rfind("in.bc: truncated or corrupt bitcode: ", 0) == 0);
  CHECK(message.find('\n') == std::string::npos);
  CHECK(parse_error_of(good).empty());
}

TEST_CASE("a file cut short inside the magic number is truncated bitcode, not a text file", "[bitcode]") {
  CHECK(parse_error_of("BC") == "in.bc: truncated bitcode: 2 bytes, shorter than the 4-byte magic number");
  CHECK(parse_error_of("BC\xC0") == "in.bc: truncated bitcode: 3 bytes, shorter than the 4-byte magic number");
  CHECK(parse_error_of("\xDE\xC0\x17") == "in.bc: truncated bitcode: 3 bytes, shorter than the 4-byte magic number");
  CHECK(parse_error_of("BCxx").rfind("in.bc: not LLVM bitcode", 0) == 0);  // not a prefix of the magic
}

TEST_CASE("triples other than x86-64 Linux ELF are named as the problem", "[bitcode]") {
  CHECK(triple_problem("x86_64-unknown-linux-gnu").empty());
  CHECK(triple_problem("aarch64-unknown-linux-gnu").find("not x86-64") != std::string::npos);
  CHECK(triple_problem("x86_64-apple-darwin").find("not Linux") != std::string::npos);
  CHECK(triple_problem("").find("no target triple") != std::string::npos);
}

TEST_CASE("cheap look-ups read the triple and producer without parsing the module", "[bitcode]") {
  std::string bytes = kiln_test::bitcode_from_ir(kiln_test::kAddIr);
  CHECK(bitcode_triple(bytes) == "x86_64-unknown-linux-gnu");
  CHECK(bitcode_producer(bytes).find("LLVM") != std::string::npos);
  CHECK(bitcode_triple("garbage").empty());
}
