// libFuzzer target: the direct bitcode reader and exporter (lib/stamp/direct_export.h):
// both halves of the reader (bitcode_reader.cpp, bitcode_function.cpp), then the export.
// Every input is read into stamp's flat arrays, or declined with a reason, or refused
// with a KilnError; what it exports must pass check_flat_module (the stages read only
// inside the arrays), and its global data must stay inside each global. scripts/fuzz.sh
// runs it with a malloc limit, so that an allocation the input does not justify fails.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "direct_export.h"
#include "error.h"
#include "flat_module.h"

using namespace kiln;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    DirectExport d = export_direct(bytes, "fuzz.bc", "fuzz");
    if (!d.declined.empty()) return 0;
    if (!check_flat_module(d.flat).empty()) std::abort();
    for (const StampData& g : d.data) {
      if (!g.zero && g.bytes.size() != g.size) std::abort();
      for (const auto& r : g.relocations)
        if (r.offset + 8 > g.size) std::abort();
    }
  } catch (const KilnError& e) {
    if (e.code() != kExitBadInput) std::abort();  // kiln's bug, not the input's
  }
  return 0;
}
