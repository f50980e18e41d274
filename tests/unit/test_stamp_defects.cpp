// Regression tests for stamp/emission defects found by hostile testing (issue 8):
// x32 targets, constants wider than 64 bits, aliases of stamp's functions, and
// extern_weak declarations. Where a program is involved, it is built with both back
// ends, linked with the system linker, run, and must behave the same.
#include <catch2/catch.hpp>

#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>

#include <string>
#include <vector>

#include "backend.h"
#include "bitcode.h"
#include "census.h"
#include "error.h"
#include "fs.h"
#include "ir_helpers.h"
#include "process.h"

using namespace kiln;

namespace {

// The module's stamp verdict in the census, and its per-function reasons.
const Verdict& stamp_verdict(const ModuleCensus& c) {
  for (const auto& v : c.verdicts)
    if (v.backend == "stamp") return v;
  throw std::runtime_error("no stamp verdict");
}

std::vector<std::string> reasons_of(const ModuleCensus& c, const std::string& fn) {
  for (const auto& f : c.stamp_functions)
    if (f.name == fn) return f.reasons;
  throw std::runtime_error("no function " + fn);
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v)
    if (x == s) return true;
  return false;
}

struct Run {
  int exit_code = -1;
  std::string out;
};

// Emits `bitcode` with `backend`, links it (with `extra` objects or sources) into a
// program with cc and runs it.
Run build_and_run(const std::string& backend, const std::string& bitcode, const std::string& dir,
                  const std::vector<std::string>& extra = {}, EmitCounts* counts = nullptr) {
  auto b = make_backend(backend, Profile::fast);
  EmitResult r = b->emit(bitcode, backend + ".bc");
  if (counts) *counts = r.counts;
  std::string object = dir + "/" + backend + ".o", program = dir + "/" + backend;
  write_file_atomic(object, r.object);
  std::vector<std::string> argv = {"cc", "-o", program, object};
  argv.insert(argv.end(), extra.begin(), extra.end());
  ProcessOptions quiet;
  quiet.quiet = true;
  REQUIRE(run_process(argv, quiet).exit_code == 0);
  ProcessOptions capture;
  capture.capture_stdout = true;
  ProcessResult run = run_process({program}, capture);
  return {run.exit_code, run.captured_stdout};
}

struct SymbolFacts {
  bool found = false, defined = false;
  uint8_t binding = 0, visibility = 0;
};

// The symbol table entry named `name` in an ELF64 relocatable object.
SymbolFacts symbol_in(const std::string& object, const std::string& name) {
  auto buffer = llvm::MemoryBuffer::getMemBuffer(llvm::StringRef(object.data(), object.size()), "o", false);
  auto file = llvm::object::ObjectFile::createObjectFile(buffer->getMemBufferRef());
  if (!file) throw std::runtime_error(llvm::toString(file.takeError()));
  auto* elf = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(file->get());
  if (!elf) throw std::runtime_error("not ELF64");
  SymbolFacts facts;
  for (const llvm::object::ELFSymbolRef& s : elf->symbols()) {
    auto n = s.getName();
    if (!n) {
      llvm::consumeError(n.takeError());
      continue;
    }
    if (*n != name) continue;
    facts.found = true;
    facts.binding = s.getBinding();
    facts.visibility = s.getOther() & 0x3;
    auto section = s.getSection();
    if (!section) llvm::consumeError(section.takeError());
    else facts.defined = *section != elf->section_end();
  }
  return facts;
}

const char* kX32Ir = R"(
target datalayout = "e-m:e-p:32:32-p270:32:32-p271:32:32-p272:64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnux32"
define i32 @f(i32 %a) {
  %s = add i32 %a, 1
  ret i32 %s
}
)";

}  // namespace

// Defect 11: x32 bitcode (64-bit code, 32-bit pointers, ELF32) was emitted as ELF64.
TEST_CASE("x32 triples are refused by every back end and by the census", "[stamp_defects]") {
  CHECK(triple_problem("x86_64-unknown-linux-gnux32").find("x32") != std::string::npos);
  CHECK(triple_problem("x86_64-linux-muslx32").find("x32") != std::string::npos);
  CHECK(triple_problem("x86_64-unknown-linux-gnu").empty());
  std::string bitcode = kiln_test::bitcode_from_ir(kX32Ir);
  for (const char* backend : {"llvm", "stamp"}) {
    INFO(backend);
    auto b = make_backend(backend, Profile::fast);
    try {
      b->emit(bitcode, "x32.bc");
      FAIL("x32 bitcode was emitted");
    } catch (const KilnError& e) {
      CHECK(e.code() == kExitBadInput);
      CHECK(std::string(e.what()).find("x32") != std::string::npos);
    }
  }
  ModuleCensus c = census_of_bytes(bitcode, "id", "x32.bc");
  for (const auto& v : c.verdicts) {
    INFO(v.backend);
    CHECK(v.verdict == "rejected");
    REQUIRE(!v.reasons.empty());
    CHECK(v.reasons.front().find("target: ") != std::string::npos);
    CHECK(v.reasons.front().find("x32") != std::string::npos);
  }
}
