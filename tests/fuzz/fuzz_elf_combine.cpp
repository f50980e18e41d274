// libFuzzer target: the in-process combiner of relocatable objects (lib/stamp/elf_combine.h).
// An input is two objects: a 4-byte little-endian length, that many bytes of the first
// object (as many as there are), the rest the second. Every input is combined or refused
// with a reason, never a crash; and what the combiner writes it must read back itself,
// also when some symbols are to get none (private globals).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "elf_combine.h"

using namespace kiln;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  uint32_t first = 0;
  for (size_t i = 0; i < 4 && i < bytes.size(); ++i) first |= uint32_t{data[i]} << (8 * i);
  bytes.remove_prefix(bytes.size() < 4 ? bytes.size() : 4);
  std::string_view a = bytes.substr(0, first), b = bytes.substr(a.size());
  CombineResult both = combine_relocatable({a, b}, "0123456789ab");
  if (both.ok() != both.unsupported.empty()) std::abort();
  if (both.ok() && !combine_relocatable({both.object}).ok()) std::abort();  // its own output
  combine_relocatable({a});
  // With names of the seeds' symbols given as private in the bitcode (@g and @f of
  // scripts/fuzz.sh's module, renamed or not): their references move to section symbols.
  static const std::vector<std::string> kTemporaries = {"g.kiln.0123456789ab", "g", "f.kiln.0123456789ab", "f"};
  CombineResult dropped = combine_relocatable({a, b}, "0123456789ab", kTemporaries);
  if (dropped.ok() && !combine_relocatable({dropped.object}).ok()) std::abort();
  return 0;
}
