// libFuzzer target: the stamp service's answers (encode_stamp_output's wire form), what
// a compiler wrapper reads from the service's socket. Bytes are either refused with a
// KilnError or decoded into an output whose every function range lies inside its
// arrays, and which encodes back to exactly the same bytes.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "error.h"
#include "stamp_service.h"

using namespace kiln;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  StampOutput code;
  try {
    code = decode_stamp_output(bytes, "fuzz");
  } catch (const KilnError&) {
    return 0;
  }
  for (size_t f = 0; f < code.code_start.size(); ++f)
    if (uint64_t(code.code_start[f]) + code.code_size[f] > code.code.size()) std::abort();
  if (encode_stamp_output(code) != bytes) std::abort();
  return 0;
}
