// stamp's DWARF: for the functions stamp emits, a compile unit with a subprogram per
// function (name, linkage name, declaration, code range, frame base) and a line table
// made of the stages' instruction offsets and the flat IR's debug locations
// (flat_debug.h), in the DWARF version the module asks for (4 or 5; 2 and 3 are
// written as 4). The ELF writer (stamp_object.h) places the sections and turns the
// relocations below into its own. Data-parallel in shape: each function's part of
// every section depends on that function alone, so they are laid end to end.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "flat_module.h"
#include "stamp_cpu.h"

namespace kiln {

struct StampData;  // stamp_object.h

// A relocation's target: function `target`'s code section when below
// kDwarfSymbolTarget; the symbol the flat module names `target - kDwarfSymbolTarget`
// (a global variable's) when below kDwarfSectionTarget; else debug section
// `target - kDwarfSectionTarget` (its start).
constexpr uint32_t kDwarfSymbolTarget = 0x40000000u;
constexpr uint32_t kDwarfSectionTarget = 0x80000000u;
struct DwarfReloc {
  uint32_t offset = 0;  // in its section
  uint32_t type = 0;    // kReloc64 (addresses) or kReloc32 (offsets into another section)
  uint32_t target = 0;
  int64_t addend = 0;
};

// A section's bytes, in memory from malloc that is grown by realloc and never zeroed:
// a std::string's room is zeroed before it is written (resize), which was a tenth of
// the instructions of writing the sections, and its growth past what was reserved a copy.
class DwarfBytes {
 public:
  DwarfBytes() = default;
  // Takes `bytes` (from malloc, `size` of them written), which it frees.
  DwarfBytes(char* bytes, size_t size) : bytes_(bytes), size_(size) {}
  DwarfBytes(DwarfBytes&& o) noexcept : bytes_(std::exchange(o.bytes_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  DwarfBytes& operator=(DwarfBytes&& o) noexcept {
    std::swap(bytes_, o.bytes_), std::swap(size_, o.size_);
    return *this;
  }
  ~DwarfBytes() { std::free(bytes_); }
  const char* data() const { return bytes_; }
  size_t size() const { return size_; }
  std::string_view view() const { return {bytes_, size_}; }
  bool operator==(const DwarfBytes& o) const { return view() == o.view(); }

 private:
  char* bytes_ = nullptr;
  size_t size_ = 0;
};

struct DwarfSection {
  const char* name = "";
  DwarfBytes bytes;
  std::vector<DwarfReloc> relocs;
  bool strings = false;  // .debug_str: SHF_MERGE | SHF_STRINGS
};

struct StampDwarf {
  std::vector<DwarfSection> sections;  // empty: nothing to write
};

// Throws KilnError(kExitInternal) when `code` does not fit `flat` (instruction offsets
// missing, out of order or past their function's end).
// `data`, where given, is the global data the object defines: the global variables
// (FlatDebugGlobal) whose memory it holds get their DIEs, the others none.
StampDwarf build_stamp_dwarf(const FlatModuleData& flat, const StampOutput& code, const std::string& source_name,
                             const std::vector<StampData>* data = nullptr);

}  // namespace kiln
