// libFuzzer target: kiln's own bitcode reader, the module half (lib/stamp/bitcode_reader.cpp)
// and whatever function-body half is linked. Every input is read to a BcModule or
// refused with KilnError(kExitBadInput); any other exception, and any crash, is a bug.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "bitcode_ir.h"
#include "error.h"

using namespace kiln;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    bc::BcModule m = bc::read_bitcode(bytes, "fuzz.bc");
    // What a reader's user does first: follow every module value to its entry.
    for (uint32_t id = 0; id < m.module_value_count; ++id) bc::value_ref(m, bc::kNone, id);
  } catch (const KilnError& e) {
    if (e.code() != kExitBadInput) std::abort();
  }
  return 0;
}
