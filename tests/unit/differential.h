// Shared by the differential tests (test_stamp_differential.cpp, test_stamp_float.cpp):
// a module emitted by one back end, linked with a C driver and run; the first line
// where two runs' outputs differ.
#pragma once
#include <catch2/catch.hpp>

#include <sstream>
#include <string>

#include "backend.h"
#include "fs.h"
#include "ir_helpers.h"
#include "process.h"
#include "reader_check.h"

namespace kiln_test {

using namespace kiln;

// The bitcode emitted by `backend` (its counts into *counts), linked with driver_o
// (and libm) in `dir`, run; its standard output.
inline std::string run_with(const std::string& backend, const std::string& bitcode, const std::string& driver_o,
                     const std::string& dir, EmitCounts* counts) {
  auto b = make_backend(backend, Profile::fast);
  EmitResult r = b->emit(bitcode, backend + ".bc");
  if (counts) *counts = r.counts;
  write_file_atomic(dir + "/" + backend + ".o", r.object);
  ProcessOptions quiet;
  quiet.quiet = true;
  REQUIRE(run_process({"cc", "-o", dir + "/" + backend, driver_o, dir + "/" + backend + ".o", "-lm"}, quiet).exit_code == 0);
  ProcessOptions capture;
  capture.capture_stdout = true;
  ProcessResult run = run_process({dir + "/" + backend}, capture);
  REQUIRE(run.exit_code == 0);
  return run.captured_stdout;
}


// The first line where two program outputs differ (both printed, with its number), or
// "" when they are the same: outputs of thousands of lines are not worth printing whole.
inline std::string first_difference(const std::string& expected, const std::string& actual) {
  std::istringstream e(expected), a(actual);
  std::string le, la;
  for (int line = 1;; ++line) {
    bool more_e = static_cast<bool>(std::getline(e, le)), more_a = static_cast<bool>(std::getline(a, la));
    if (!more_e && !more_a) return "";
    if (!more_e || !more_a || le != la)
      return "line " + std::to_string(line) + ": llvm '" + (more_e ? le : "<end>") + "', stamp '" +
             (more_a ? la : "<end>") + "'";
  }
}

// A hand-written differential test from end to end: `driver_c` compiled and linked with
// the module's object from llvm and from stamp, both run; their outputs must be the same
// line for line, stamp must take all `stamp_functions` functions, and the direct
// reader's output must equal LLVM's parser's plus the exporter's, the module whole.
inline void expect_same_as_llvm(const std::string& ir, const std::string& driver_c, size_t stamp_functions,
                                const std::string& label) {
  ScratchDir dir;
  write_file_atomic(dir.path + "/driver.c", driver_c);
  ProcessOptions quiet;
  quiet.quiet = true;
  REQUIRE(run_process({"cc", "-c", "-o", dir.path + "/driver.o", dir.path + "/driver.c"}, quiet).exit_code == 0);
  std::string bitcode = bitcode_from_ir(ir);
  std::string expected = run_with("llvm", bitcode, dir.path + "/driver.o", dir.path, nullptr);
  EmitCounts counts;
  std::string actual = run_with("stamp", bitcode, dir.path + "/driver.o", dir.path, &counts);
  CHECK(counts.functions_stamp == stamp_functions);
  CHECK(counts.functions_llvm == 0);
  REQUIRE(expected.size() > 0);
  CHECK(first_difference(expected, actual) == "");
  ReaderComparison reader = compare_reader(bitcode, label);
  INFO(outcome_name(reader.outcome) << ": " << reader.detail);
  CHECK(reader.outcome == ReaderComparison::kIdentical);
  CHECK(reader.whole);
}

}  // namespace kiln_test
