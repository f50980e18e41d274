// libFuzzer target: bitcode as kiln reads it. The cheap look-ups that the capture
// wrappers run in their own process (magic, triple, producer) must never crash; the
// full LLVM path (parse, verify, census, stamp's flat export) runs in an isolated
// worker, where a crash of LLVM's reader must come back as a KilnError naming the
// file. (kiln's own bitcode reader has its target: fuzz_bitcode_reader.cpp.)
#include <cstdint>
#include <string>

#include "bitcode.h"
#include "census.h"
#include "error.h"
#include "isolate.h"

using namespace kiln;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    check_bitcode_magic(bytes, "fuzz.bc");
  } catch (const KilnError&) {
    return 0;
  }
  triple_problem(bitcode_triple(bytes));
  bitcode_producer(bytes);
  try {
    run_isolated_one("fuzz.bc", [&] {
      ModuleCensus c = census_of_bytes(bytes, "fuzz", "fuzz.bc");
      return c.to_json();
    });
  } catch (const KilnError&) {}
  return 0;
}
