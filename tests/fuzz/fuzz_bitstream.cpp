// libFuzzer target: the bitstream container (lib/stamp/bitstream.h), the first layer of
// the LLVM-free bitcode reader. Every input is walked to its end, every record read
// (blobs as views and as operands in turn) and every metadata block skipped, or refused
// with a KilnError; nothing else may happen.
#include <cstdint>
#include <string_view>
#include <vector>

#include "bitstream.h"
#include "error.h"

using namespace kiln;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    BitstreamCursor cursor(bytes, "fuzz.bc");
    std::vector<uint64_t> ops;
    std::string_view blob;
    bool as_view = false;
    for (BitstreamEntry e = cursor.advance(); e.kind != BitstreamEntry::kEndOfStream; e = cursor.advance()) {
      if (e.kind == BitstreamEntry::kEnterBlock && e.id == 15) cursor.skip_block();  // metadata, as the reader will
      if (e.kind != BitstreamEntry::kRecord) continue;
      cursor.read_record(e.id, ops, as_view ? &blob : nullptr);
      as_view = !as_view;
    }
  } catch (const KilnError&) {}
  try {
    bitstream_statistics(bytes, "fuzz.bc");
  } catch (const KilnError&) {}
  return 0;
}
