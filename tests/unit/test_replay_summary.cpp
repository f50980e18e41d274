// kiln-replay's stamp-against-llvm figures: computed over the modules both back ends
// emitted in every round, so that a module that failed on one side only does not make
// the other side's sums cover more (stamp's .text ratio and speed looked better when
// llvm's sums held a module stamp failed on).
#include <catch2/catch.hpp>

#include "replay.h"
#include "replay_summary.h"

using namespace kiln;

namespace {

ModuleEmission emitted(double seconds, uint64_t text, uint64_t instructions) {
  ModuleEmission e;
  e.clone = 0;
  e.codegen = seconds;
  e.stages = seconds / 2;
  e.elf = seconds / 2;
  e.text_bytes = text;
  e.object_bytes = 2 * text;
  e.instructions = instructions;
  e.instructions_stamp = instructions;
  e.functions = e.functions_stamp = 1;
  return e;
}

ModuleEmission failed(double seconds) {
  ModuleEmission e = emitted(seconds, 0, 0);
  e.error = "m: an error";
  return e;
}

}  // namespace

TEST_CASE("stamp against llvm compares the modules both emitted", "[replay]") {
  // Module 0 both emit; module 1 llvm emits (slowly, with much code) and stamp fails
  // on, after spending some time on it.
  std::vector<RoundResult> llvm(3), stamp(3);
  for (int r = 0; r < 3; ++r) {
    llvm[r].round = stamp[r].round = r + 1;
    llvm[r].emissions = {emitted(2.0, 1000, 100), emitted(8.0, 9000, 900)};
    stamp[r].emissions = {emitted(0.1, 1100, 100), failed(0.05)};
  }
  const StampVsLlvm c = compare_stamp_llvm(llvm, stamp);
  CHECK(c.modules_compared == 1);
  CHECK(c.modules_left_out == 1);
  CHECK(c.text_ratio == Approx(1.1));
  CHECK(c.object_ratio == Approx(1.1));
  CHECK(c.end_to_end == Approx(20.0));
  CHECK(c.llvm_rate == Approx(50.0));     // 100 instructions in 2 s
  CHECK(c.stamp_rate == Approx(1000.0));  // 100 in 0.1 s
  REQUIRE(c.llvm_rounds.size() == 3);
  REQUIRE(c.stamp_rounds.size() == 3);
  CHECK(c.llvm_rounds[2].modules == 1);
  CHECK(c.stamp_rounds[2].modules == 1);
  CHECK(c.llvm_rounds[2].codegen == Approx(2.0));

  // A failure in one round only leaves the module out of every round.
  stamp[1].emissions[1] = emitted(0.4, 9900, 900);
  for (auto& r : {0, 2}) stamp[r].emissions[1] = emitted(0.4, 9900, 900);
  llvm[2].emissions[0] = failed(1.0);
  const StampVsLlvm d = compare_stamp_llvm(llvm, stamp);
  CHECK(d.modules_compared == 1);
  CHECK(d.text_ratio == Approx(1.1));  // module 1's: 9900 against 9000
  CHECK(d.end_to_end == Approx(20.0));
}
