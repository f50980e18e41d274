// What the stamp back end hands to the ELF writer: one entry per function it emitted,
// with the machine code, the relocations against named symbols, and the symbol's
// binding. Every stamp function has one of two fixed frame shapes, told apart by its
// prologue's second instruction (stamp_frame_biased), so its unwind information is
// derived, not described:
//   offset 0: push rbp                  (1 byte)   CFA = rsp+16, rbp saved at CFA-16
//   offset 1: mov rbp, rsp              (3 bytes)  CFA = rbp+16
//         or: lea rbp, [rsp - 112]      (5 bytes)  CFA = rbp+128 (a frame of more than
//                                                  128 bytes: kFrameBias, stamp_emit.h)
//   ...     : body; every return is "leave; ret" or "lea rsp, [rbp + 112]; pop rbp;
//             ret", which need no CFI change for an unwinder because the CFA stays
//             rbp-based until the final ret.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stamp_emit.h"  // StampReloc, StampRelocType (kReloc*)

namespace kiln {

struct StampDwarf;  // stamp_dwarf.h

// A relocation that names its symbol, for the self-contained records below (data, and
// functions written without the stages); the stages' StampReloc names it by index.
struct StampNamedReloc {
  uint32_t offset = 0;  // within the function's code
  uint32_t type = kRelocPc32;
  std::string symbol;  // a symbol name (defined in this object or undefined)
  int64_t addend = 0;
};

enum class SymbolBinding : uint8_t { local, global, weak };
enum class SymbolVisibility : uint8_t { default_, hidden, protected_ };

// The alignment of every function's section: a function that asks for more is LLVM's.
constexpr uint64_t kStampFunctionAlign = 16;

struct StampFunction {
  std::string name;
  SymbolBinding binding = SymbolBinding::global;
  SymbolVisibility visibility = SymbolVisibility::default_;
  std::string section;  // e.g. ".text.NAME"; empty: ".text.NAME"
  std::vector<uint8_t> code;
  std::vector<StampNamedReloc> relocations;
  // Functions with exception handling: their personality routine (reached through a
  // hidden DW.ref.<name> pointer, as LLVM does) and their LSDA, which goes into
  // .gcc_except_table. The LSDA holds no relocations (code offsets only).
  std::string personality;
  std::vector<uint8_t> lsda;
  // Where the body after the prologue starts and how big the frame is are fixed by
  // the frame shape above; the FDE covers [0, code.size()).
};

// A global variable: its initializer as bytes with relocations (R_X86_64_64 for
// addresses), or `size` zero bytes (.bss).
struct StampData {
  std::string name;
  SymbolBinding binding = SymbolBinding::global;
  SymbolVisibility visibility = SymbolVisibility::default_;
  std::string section;  // e.g. ".rodata.NAME", ".data.rel.ro.NAME", ".data.NAME", ".bss.NAME"
  uint32_t align = 1;
  uint64_t size = 0;
  bool zero = false;  // SHT_NOBITS
  bool writable = false;
  bool tls = false;  // a thread-local variable: SHF_TLS (.tbss or .tdata), STT_TLS
  // Private in the bitcode, where LLVM gives it no symbol of its own (a .L name). The
  // writer still names it (a split's other half may refer to it); the combiner drops
  // that name from the final object (elf_combine.h).
  bool was_private = false;
  // In llvm.used (__attribute__((retain)), #[used(linker)]): SHF_GNU_RETAIN, as LLVM
  // writes it, so that --gc-sections keeps it.
  bool retain = false;
  std::vector<uint8_t> bytes;
  std::vector<StampNamedReloc> relocations;
};

// Whether LLVM makes a section of this name SHT_NOBITS whatever its globals' kind
// (TargetLoweringObjectFileELF's getELFKindForNamedSection). Zero-initialised data in a
// section of any other name stays SHT_PROGBITS (isSuitableForBSS refuses a global that
// names a section): were stamp's copy NOBITS, ld.bfd would split the section in two
// and __start_/__stop_ would no longer bound every object's entries.
inline bool is_bss_section_name(std::string_view name) {
  for (std::string_view bss : {".bss", ".sbss", ".tbss"})
    if (name == bss || (name.size() > bss.size() && name.substr(0, bss.size()) == bss && name[bss.size()] == '.'))
      return true;
  for (std::string_view prefix : {".gnu.linkonce.b.", ".llvm.linkonce.b.", ".gnu.linkonce.sb.", ".llvm.linkonce.sb.",
                                  ".gnu.linkonce.tb.", ".llvm.linkonce.tb."})
    if (name.substr(0, prefix.size()) == prefix) return true;
  return false;
}

// An undefined symbol that is not a plain reference (a global with default
// visibility): an extern_weak declaration is weak, so that a missing definition
// resolves to 0 instead of failing the link, and a hidden or protected declaration
// keeps its visibility. Local binding means nothing here and is written as global.
struct UndefinedSymbol {
  std::string name;
  SymbolBinding binding = SymbolBinding::global;
  SymbolVisibility visibility = SymbolVisibility::default_;
};

// What the stages produced for a module, as the writer reads it: symbol names by index,
// and per function its name, binding, section and spans of the stages' output arrays
// (code, relocations whose `symbol` indexes `names`, LSDA). No copies and
// no per-relocation strings, so writing costs little next to the stages.
constexpr uint32_t kNoPersonality = 0xFFFFFFFFu;
struct StampObjectView {
  const std::string* names = nullptr;
  uint32_t name_count = 0;
  uint32_t function_count = 0;
  const uint32_t* function_name = nullptr;  // index into names
  const SymbolBinding* binding = nullptr;
  const SymbolVisibility* visibility = nullptr;
  const std::string* section = nullptr;  // empty: ".text.NAME"
  const uint8_t* code = nullptr;
  const uint32_t* code_start = nullptr;
  const uint32_t* code_size = nullptr;
  const StampReloc* relocs = nullptr;
  const uint32_t* reloc_start = nullptr;
  const uint32_t* reloc_count = nullptr;
  const uint32_t* personality = nullptr;  // index into names, or kNoPersonality
  const uint8_t* lsda = nullptr;
  const uint32_t* lsda_start = nullptr;
  const uint32_t* lsda_size = nullptr;
  // Optional: how to write the undefined symbols listed here (by name); every other
  // undefined symbol is a default-visibility global.
  const UndefinedSymbol* undefined = nullptr;
  uint32_t undefined_count = 0;
  // Optional: the DWARF for these functions (stamp_dwarf.h); its relocations' function
  // indexes are this view's.
  const StampDwarf* dwarf = nullptr;
};

// A relocatable x86-64 ELF object: one SHF_ALLOC|SHF_EXECINSTR section per function
// (kStampFunctionAlign), .rela for each, .eh_frame with one CIE and one FDE per function
// (and its .rela.eh_frame), .symtab and .strtab (symbol and section names, as LLVM
// writes them), and an empty .note.GNU-stack.
// Symbols referenced by relocations but not defined here are undefined globals, or
// as the view's `undefined` list says (weak, hidden, protected).
// Deterministic: the same input gives the same bytes.
std::string write_stamp_object(const StampObjectView& view, const std::string& source_file_name,
                               const std::vector<StampData>& data = {});
// The same from self-contained records (tests, and callers without a flat module).
std::string write_stamp_object(const std::vector<StampFunction>& functions, const std::string& source_file_name,
                               const std::vector<StampData>& data = {},
                               const std::vector<UndefinedSymbol>& undefined = {});

}  // namespace kiln
