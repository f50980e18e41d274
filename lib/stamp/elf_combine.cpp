// The in-process `ld -r` of elf_combine.h. One Combiner per call runs the phases in
// order (run() below); each phase reads only what the earlier ones left. Every read of
// the inputs is bounds-checked: the inputs are our own objects, but a bad one must give
// a reason (and the caller falls back to ld.lld -r), never a crash.
#include "elf_combine.h"

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace kiln {

namespace {

// Section types <elf.h> may not spell.
constexpr uint32_t kShtLlvmAddrsig = 0x6fff4c03;  // SHT_LLVM_ADDRSIG
constexpr uint32_t kShtCrel = 0x40000014;         // SHT_CREL, LLVM's compact relocations

// Where a symbol is defined: a section index, or one of these. The reserved st_shndx
// values are kept apart from section indexes because with extended numbering a real
// section index can equal SHN_ABS or SHN_COMMON.
constexpr uint32_t kUndefined = 0;
constexpr uint32_t kAbsolute = 0xFFFFFFF1u;
constexpr uint32_t kCommon = 0xFFFFFFF2u;
constexpr uint32_t kNoGlobal = 0xFFFFFFFFu;
constexpr uint32_t kDroppedSymbol = 0xFFFFFFFFu;  // symbol_out of a symbol not written
constexpr uint32_t kNoTemporary = 0xFFFFFFFFu;

// Why the combiner gives up: thrown by any phase, caught by combine_relocatable alone.
struct Unsupported {
  std::string reason;
};
[[noreturn]] void give_up(std::string reason) { throw Unsupported{std::move(reason)}; }

template <typename T>
T read_at(std::string_view bytes, uint64_t offset, const std::string& what) {
  if (offset > bytes.size() || sizeof(T) > bytes.size() - offset) give_up(what + " lies outside the file");
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

// The NUL-terminated string at `offset` of a string table, if there is one there.
bool string_at(std::string_view table, uint64_t offset, std::string_view& out) {
  if (offset >= table.size()) return false;
  size_t end = table.find('\0', offset);
  if (end == std::string_view::npos) return false;
  out = table.substr(offset, end - offset);
  return true;
}

uint64_t align_up(uint64_t pos, uint64_t align) { return align > 1 ? (pos + align - 1) / align * align : pos; }

unsigned bind_of(const Elf64_Sym& s) { return ELF64_ST_BIND(s.st_info); }
unsigned type_of(const Elf64_Sym& s) { return ELF64_ST_TYPE(s.st_info); }
uint8_t visibility_of(const Elf64_Sym& s) { return ELF64_ST_VISIBILITY(s.st_other); }

// A linker's rule for a symbol seen with two visibilities: the more constraining one
// (STV_DEFAULT constrains least; among the others the smaller value constrains more).
uint8_t min_visibility(uint8_t a, uint8_t b) {
  if (a == STV_DEFAULT) return b;
  if (b == STV_DEFAULT) return a;
  return a < b ? a : b;
}

// One input object, read and checked.
struct Input {
  std::string_view bytes;
  std::string label;  // "input N", for reasons
  Elf64_Ehdr header{};
  std::vector<Elf64_Shdr> sections;
  std::string_view shstrtab;
  uint32_t shstrndx = 0, symtab = 0, strtab = 0, shndx = 0;
  std::vector<Elf64_Sym> symbols;        // [0] the null symbol
  std::vector<uint32_t> symbol_section;  // per symbol: a section index, kUndefined, kAbsolute or kCommon
  std::string_view names;                // the symbol string table
  uint32_t first_global = 1;
  std::vector<uint32_t> section_out;    // per section: its index in the output, 0 if not copied
  std::vector<uint64_t> section_delta;  // per section: where it starts in that output section
  std::vector<uint32_t> global_of;      // per symbol: its entry in Combiner::globals, or kNoGlobal
  std::vector<uint32_t> symbol_out;     // per symbol: its index in the output symbol table, or kDroppedSymbol
  std::vector<uint32_t> temporary_of;   // per symbol: its Combiner::temporaries_ entry; empty: none

  std::string section_label(uint32_t i) const { return label + " section " + std::to_string(i); }
  std::string symbol_label(uint32_t j) const { return label + " symbol " + std::to_string(j); }
  std::string_view contents(uint32_t i) const {
    const Elf64_Shdr& h = sections[i];
    if (h.sh_type == SHT_NOBITS) return {};
    if (h.sh_offset > bytes.size() || h.sh_size > bytes.size() - h.sh_offset)
      give_up(section_label(i) + " lies outside the file");
    return bytes.substr(h.sh_offset, h.sh_size);
  }
  // Names, read often: the reasons are only made when one is needed.
  std::string_view symbol_name(uint32_t j) const {
    std::string_view name;
    if (!string_at(names, symbols[j].st_name, name)) give_up(symbol_label(j) + ": no NUL-terminated name");
    return name;
  }
  std::string_view section_name(uint32_t i) const {
    std::string_view name;
    if (!string_at(shstrtab, sections[i].sh_name, name)) give_up(section_label(i) + ": no NUL-terminated name");
    return name;
  }
};

// ELF64 little-endian, ET_REL, x86-64, section headers of the expected size.
void read_elf_header(Input& in) {
  if (in.bytes.size() < SELFMAG || std::memcmp(in.bytes.data(), ELFMAG, SELFMAG) != 0)
    give_up(in.label + ": not an ELF file");
  in.header = read_at<Elf64_Ehdr>(in.bytes, 0, in.label + ": the ELF header");
  const Elf64_Ehdr& eh = in.header;
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    give_up(in.label + ": not a little-endian ELF64 file");
  if (eh.e_ident[EI_VERSION] != EV_CURRENT) give_up(in.label + ": unknown ELF version");
  if (eh.e_ident[EI_OSABI] != ELFOSABI_NONE && eh.e_ident[EI_OSABI] != ELFOSABI_GNU)
    give_up(in.label + ": OS ABI " + std::to_string(eh.e_ident[EI_OSABI]));
  if (eh.e_type != ET_REL) give_up(in.label + ": not a relocatable object (ET_REL)");
  if (eh.e_machine != EM_X86_64) give_up(in.label + ": not an x86-64 object");
  if (eh.e_shoff == 0) give_up(in.label + ": no section headers");
  if (eh.e_shentsize != sizeof(Elf64_Shdr)) give_up(in.label + ": section headers of an unknown size");
}

// The section header table, with extended numbering (the count in section 0's sh_size,
// the section name table's index in its sh_link).
void read_section_headers(Input& in) {
  const Elf64_Ehdr& eh = in.header;
  Elf64_Shdr first = read_at<Elf64_Shdr>(in.bytes, eh.e_shoff, in.label + ": the section header table");
  uint64_t count = eh.e_shnum ? eh.e_shnum : first.sh_size;
  if (count == 0 || count > (in.bytes.size() - eh.e_shoff) / sizeof(Elf64_Shdr))
    give_up(in.label + ": the section header table lies outside the file");
  in.sections.resize(count);
  std::memcpy(in.sections.data(), in.bytes.data() + eh.e_shoff, count * sizeof(Elf64_Shdr));
  uint64_t shstrndx = eh.e_shstrndx == SHN_XINDEX ? first.sh_link : eh.e_shstrndx;
  if (shstrndx == 0 || shstrndx >= count || in.sections[shstrndx].sh_type != SHT_STRTAB)
    give_up(in.label + ": no section name table");
  in.shstrndx = static_cast<uint32_t>(shstrndx);
  in.shstrtab = in.contents(in.shstrndx);
}

// The one SHT_SYMTAB (an object may have none), its string table and its
// SHT_SYMTAB_SHNDX, if any.
void find_symbol_table(Input& in) {
  const uint32_t count = static_cast<uint32_t>(in.sections.size());
  for (uint32_t i = 1; i < count; ++i) {
    const Elf64_Shdr& h = in.sections[i];
    if (h.sh_type == SHT_SYMTAB) {
      if (in.symtab) give_up(in.label + ": more than one symbol table");
      in.symtab = i;
    } else if (h.sh_type == SHT_SYMTAB_SHNDX) {
      if (in.shndx) give_up(in.label + ": more than one SHT_SYMTAB_SHNDX section");
      in.shndx = i;
    }
  }
  if (in.shndx && (!in.symtab || in.sections[in.shndx].sh_link != in.symtab))
    give_up(in.label + ": SHT_SYMTAB_SHNDX section for no symbol table");
  if (!in.symtab) return;
  const Elf64_Shdr& h = in.sections[in.symtab];
  if (h.sh_entsize != sizeof(Elf64_Sym) || h.sh_size % sizeof(Elf64_Sym) != 0 || h.sh_size == 0)
    give_up(in.label + ": symbol table of an unknown shape");
  if (h.sh_link == 0 || h.sh_link >= count || in.sections[h.sh_link].sh_type != SHT_STRTAB)
    give_up(in.label + ": symbol table without a string table");
  in.strtab = h.sh_link;
  in.names = in.contents(in.strtab);
}

// A symbol's section: SHN_XINDEX resolved through .symtab_shndx, the reserved values
// this combiner knows mapped to kUndefined, kAbsolute, kCommon.
uint32_t symbol_section(const Input& in, uint32_t j, std::string_view shndx_words) {
  const uint16_t shndx = in.symbols[j].st_shndx;
  if (shndx == SHN_UNDEF) return kUndefined;
  if (shndx == SHN_ABS) return kAbsolute;
  if (shndx == SHN_COMMON) return kCommon;
  uint64_t section = shndx;
  if (shndx == SHN_XINDEX) {
    if (shndx_words.size() / 4 <= j) give_up(in.symbol_label(j) + ": SHN_XINDEX without a .symtab_shndx entry");
    uint32_t word;
    std::memcpy(&word, shndx_words.data() + 4 * uint64_t{j}, 4);
    section = word;
  } else if (shndx >= SHN_LORESERVE) {
    give_up(in.symbol_label(j) + ": special section index " + std::to_string(shndx));
  }
  if (section == 0 || section >= in.sections.size()) give_up(in.symbol_label(j) + ": section index out of range");
  return static_cast<uint32_t>(section);
}

// The symbols, locals strictly before globals (sh_info), each with its section.
void read_symbols(Input& in) {
  if (!in.symtab) {
    in.symbols.assign(1, Elf64_Sym{});
    in.symbol_section.assign(1, kUndefined);
    return;
  }
  std::string_view table = in.contents(in.symtab);
  in.symbols.resize(table.size() / sizeof(Elf64_Sym));
  std::memcpy(in.symbols.data(), table.data(), table.size());
  const uint64_t first_global = in.sections[in.symtab].sh_info;
  if (first_global == 0 || first_global > in.symbols.size()) give_up(in.label + ": symbol table sh_info out of range");
  in.first_global = static_cast<uint32_t>(first_global);
  std::string_view shndx_words = in.shndx ? in.contents(in.shndx) : std::string_view();
  in.symbol_section.resize(in.symbols.size());
  in.symbol_section[0] = kUndefined;
  for (uint32_t j = 1; j < in.symbols.size(); ++j) {
    const unsigned bind = bind_of(in.symbols[j]);
    if ((bind == STB_LOCAL) != (j < in.first_global))
      give_up(in.symbol_label(j) + ": binding " + std::to_string(bind) + " on the wrong side of sh_info");
    if (bind != STB_LOCAL && bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE)
      give_up(in.symbol_label(j) + ": unknown binding " + std::to_string(bind));
    in.symbol_section[j] = symbol_section(in, j, shndx_words);
    if (bind == STB_LOCAL && in.symbol_section[j] == kCommon) give_up(in.symbol_label(j) + ": a local COMMON symbol");
    in.symbol_name(j);  // its name must be readable
  }
}

bool is_eh_frame(const Input& in, uint32_t i) { return in.section_name(i) == ".eh_frame"; }

bool relocates_eh_frame(const Input& in, uint32_t i) {
  return in.sections[i].sh_type == SHT_RELA && is_eh_frame(in, in.sections[i].sh_info);
}

// Whether an .eh_frame's entries end in a zero terminator. Entries that do not tile the
// section are refused: concatenating .eh_frame sections needs whole entries.
bool ends_in_terminator(std::string_view bytes, const std::string& what) {
  uint64_t at = 0;
  while (at < bytes.size()) {
    uint32_t length = read_at<uint32_t>(bytes, at, what);
    if (length == 0) {
      if (at + 4 != bytes.size()) give_up(what + ": a zero terminator inside .eh_frame");
      return true;
    }
    if (length == 0xFFFFFFFFu) give_up(what + ": a 64-bit .eh_frame entry");
    at += 4 + uint64_t{length};
  }
  if (at != bytes.size()) give_up(what + ": .eh_frame entries run past the section");
  return false;
}

// Notes that linkers read once per object, as the first section of their name: GNU ld
// takes an object's stack executability from its .note.GNU-stack, and its x86 feature
// bits (IBT, SHSTK) from its .note.gnu.property.
bool is_object_note(std::string_view name) { return name == ".note.GNU-stack" || name == ".note.gnu.property"; }

bool is_dropped(const Input& in, uint32_t i) {
  // .llvm_addrsig lists the symbols whose address is taken, by symbol index; it only lets
  // lld's --icf=safe fold more functions. An object without one is treated as taking
  // every address, so dropping it is always safe (it costs, at most, some folding).
  const uint32_t type = in.sections[i].sh_type;
  return i == in.symtab || i == in.strtab || i == in.shstrndx || i == in.shndx || type == SHT_NULL ||
      type == kShtLlvmAddrsig;
}

void check_relocation_section(const Input& in, uint32_t i) {
  const Elf64_Shdr& h = in.sections[i];
  if (h.sh_entsize != sizeof(Elf64_Rela) || h.sh_size % sizeof(Elf64_Rela) != 0)
    give_up(in.section_label(i) + ": SHT_RELA of an unknown shape");
  if (!in.symtab || h.sh_link != in.symtab) give_up(in.section_label(i) + ": relocations against no symbol table");
  if (h.sh_info == 0 || h.sh_info >= in.sections.size() || is_dropped(in, h.sh_info))
    give_up(in.section_label(i) + ": relocations for no section");
}

void check_group_section(const Input& in, uint32_t i) {
  const Elf64_Shdr& h = in.sections[i];
  if (h.sh_entsize != 4 || h.sh_size < 4 || h.sh_size % 4 != 0)
    give_up(in.section_label(i) + ": SHT_GROUP of an unknown shape");
  if (!in.symtab || h.sh_link != in.symtab || h.sh_info == 0 || h.sh_info >= in.symbols.size())
    give_up(in.section_label(i) + ": SHT_GROUP without a signature symbol");
  std::string_view words = in.contents(i);
  for (size_t w = 4; w < words.size(); w += 4) {
    uint32_t member;
    std::memcpy(&member, words.data() + w, 4);  // inside: the size is a multiple of 4
    if (member == 0 || member >= in.sections.size() || is_dropped(in, member))
      give_up(in.section_label(i) + ": SHT_GROUP member " + std::to_string(member) + " is not a copied section");
  }
}

// Every section this combiner copies: a type it knows how to carry over, contents inside
// the file, and links it knows how to renumber.
void check_sections(const Input& in) {
  const uint32_t count = static_cast<uint32_t>(in.sections.size());
  for (uint32_t i = 1; i < count; ++i) {
    const Elf64_Shdr& h = in.sections[i];
    in.section_name(i);
    if (is_dropped(in, i)) continue;
    in.contents(i);
    if (h.sh_addralign & (h.sh_addralign - 1)) give_up(in.section_label(i) + ": alignment not a power of two");
    switch (h.sh_type) {
      case SHT_RELA:
        check_relocation_section(in, i);
        continue;
      case SHT_GROUP:
        check_group_section(in, i);
        continue;
      case SHT_REL:
      case SHT_RELR:
      case kShtCrel:
      case SHT_DYNAMIC:
      case SHT_DYNSYM:
      case SHT_HASH:
      case SHT_GNU_HASH:
      case SHT_GNU_versym:
      case SHT_GNU_verdef:
      case SHT_GNU_verneed:
        give_up(in.section_label(i) + ": section type " + std::to_string(h.sh_type));
      default:
        break;
    }
    // sh_link: a section (SHF_LINK_ORDER) or the symbol table (.llvm.call-graph-profile);
    // sh_info: a section (SHF_INFO_LINK). Anything else has a meaning not known here.
    if ((h.sh_flags & SHF_LINK_ORDER) ? (h.sh_link >= count || (h.sh_link && is_dropped(in, h.sh_link)))
                                      : (h.sh_link != 0 && h.sh_link != in.symtab))
      give_up(in.section_label(i) + ": sh_link " + std::to_string(h.sh_link) + " not understood");
    if ((h.sh_flags & SHF_INFO_LINK) ? (h.sh_info == 0 || h.sh_info >= count || is_dropped(in, h.sh_info))
                                     : h.sh_info != 0)
      give_up(in.section_label(i) + ": sh_info " + std::to_string(h.sh_info) + " not understood");
  }
}

// A symbol of the output, one entry per global name.
struct Global {
  std::string_view name;
  Elf64_Sym symbol{};                 // the entry it is written from (the definition's, if any)
  uint32_t input = 0;                 // the input of that entry
  uint32_t section = kUndefined;      // where that input defines it
  bool localize = false;              // a NAME.kiln.TAG symbol that becomes the local NAME
  bool was_private = false;           // and it was private in the bitcode (elf_combine.h)
  uint32_t temporary = kNoTemporary;  // then its Combiner::temporaries_ entry
  uint32_t out = 0;                   // its index in the output symbol table
};

// The definition of a global that was private in the bitcode, which LLVM's object gives
// no symbol: where it lies, and what becomes of its symbol.
constexpr uint64_t kShfLarge = 0x10000000;  // SHF_X86_64_LARGE (x86-64 psABI; not in glibc's elf.h)

struct Temporary {
  uint32_t input = 0, section = 0;  // defined in this section of this input
  uint64_t value = 0;               // at this offset
  std::string_view name;
  bool merge = false;     // in a mergeable section (SHF_MERGE)
  bool large = false;     // in a large-model section (SHF_X86_64_LARGE): its GOT loads stay
  bool drop = true;       // no symbol: references relocate against the section's symbol
  std::string kept_name;  // otherwise named ".LNAME"
  uint32_t out = 0;       // the output symbol references name (the section's, when dropped)
};

// A RIP-relative GOT load of a dropped temporary that becomes a `lea`: the opcode byte
// at `offset` of output section `section` (its relocation becomes R_X86_64_PC32).
struct Relaxation {
  uint32_t temporary = 0, section = 0;
  uint64_t offset = 0;
};

// Whether a relocation computes S + A (or S + A - P, - GOT) from the symbol's address
// alone, so that a section symbol plus the offset serves as well. Not the TLS offsets
// (DTPOFF, TPOFF): linkers give a symbol its offset in the TLS block only when it is
// STT_TLS, never a section symbol (lld then used the plain address, or refused the
// reference in a PIE), so LLVM and gas relocate them against a symbol, as here .LNAME.
bool adds_to_address(uint32_t type) {
  switch (type) {
    case R_X86_64_64:
    case R_X86_64_PC32:
    case R_X86_64_32:
    case R_X86_64_32S:
    case R_X86_64_16:
    case R_X86_64_PC16:
    case R_X86_64_8:
    case R_X86_64_PC8:
    case R_X86_64_PC64:
    case R_X86_64_GOTOFF64:
      return true;
    default:
      return false;
  }
}

// Whether relocation `r` of `code` is `mov reg, [rip + sym@GOTPCREL]` (opcode 0x8b,
// ModRM mod 00 r/m 101, then the 4-byte displacement ending the instruction), which
// becomes `lea reg, [rip + sym]` as a linker relaxes it for a symbol of its own output.
bool is_got_load(const Elf64_Rela& r, std::string_view code) {
  const uint32_t type = ELF64_R_TYPE(r.r_info);
  if (type != R_X86_64_GOTPCRELX && type != R_X86_64_REX_GOTPCRELX) return false;
  const uint64_t before = type == R_X86_64_REX_GOTPCRELX ? 3 : 2;
  if (r.r_addend != -4 || r.r_offset < before || r.r_offset > code.size() || code.size() - r.r_offset < 4) return false;
  const auto byte = [&](uint64_t back) { return static_cast<uint8_t>(code[r.r_offset - back]); };
  if (type == R_X86_64_REX_GOTPCRELX && (byte(3) & 0xF0) != 0x40) return false;
  return byte(2) == 0x8B && (byte(1) & 0xC7) == 0x05;
}

// Where an output section's bytes come from: a section of an input (index 0: a table
// written here), at `offset` in the output section. A relocation piece adds
// `reloc_delta` to its offsets (its target starts there in its output section).
struct Piece {
  uint32_t input = 0;
  uint32_t index = 0;
  uint64_t offset = 0;
  uint64_t reloc_delta = 0;
};

// A section of the output: one input's section, one of the tables written here, or
// (.eh_frame and its relocations) the sections of several inputs end to end.
struct OutSection {
  Elf64_Shdr header{};
  std::string_view name;
  Piece piece;              // the first piece, usually the only one
  std::vector<Piece> more;  // the pieces appended to it
  std::string_view own;     // the contents of a table written here
};

class Combiner {
 public:
  Combiner(const std::vector<std::string_view>& objects, std::string_view tag,
           const std::vector<std::string>& temporaries)
      : suffix_(tag.empty() ? std::string() : ".kiln." + std::string(tag)),
        temporary_names_(temporaries.begin(), temporaries.end()) {
    if (objects.empty()) give_up("no objects to combine");
    inputs_.resize(objects.size());
    for (size_t k = 0; k < objects.size(); ++k) {
      inputs_[k].bytes = objects[k];
      inputs_[k].label = "input " + std::to_string(k);
    }
  }

  std::string run() {
    read_inputs();
    plan_sections();
    set_relocation_deltas();
    merge_globals();
    localize_renamed();
    find_temporaries();
    plan_temporaries();
    number_symbols();
    finish_section_headers();
    plan_tables();
    lay_out();
    return write();
  }

  size_t localized() const { return localized_; }
  size_t dropped() const { return dropped_; }

 private:
  std::string suffix_;  // ".kiln.TAG", or empty: no symbol is made local
  std::unordered_set<std::string_view> temporary_names_;
  std::vector<Temporary> temporaries_;
  std::vector<Relaxation> relaxations_;
  std::vector<Input> inputs_;
  std::vector<OutSection> sections_;
  std::vector<Global> globals_;
  uint8_t osabi_ = ELFOSABI_NONE;
  bool need_shndx_ = false;
  uint32_t symtab_ = 0, shndx_ = 0, strtab_ = 0;
  uint32_t eh_frame_ = 0, eh_rela_ = 0;  // the output .eh_frame and its relocations
  std::vector<Piece> notes_;             // the per-object notes kept (is_object_note)
  std::vector<Elf64_Sym> symbols_;
  std::vector<uint32_t> shndx_words_;
  std::string strtab_bytes_;  // symbol names; then, from plan_tables, section names too
  uint32_t first_global_ = 0;
  uint64_t shoff_ = 0, size_ = 0;
  size_t localized_ = 0, dropped_ = 0;

  void read_inputs() {
    for (Input& in : inputs_) {
      read_elf_header(in);
      read_section_headers(in);
      find_symbol_table(in);
      read_symbols(in);
      check_sections(in);
      if (in.header.e_flags != inputs_[0].header.e_flags) give_up(in.label + ": e_flags differ from input 0's");
      if (in.header.e_ident[EI_OSABI] == ELFOSABI_GNU) osabi_ = ELFOSABI_GNU;
    }
  }

  // Every input's copied sections, in input order, get their output index, except that
  // the inputs' .eh_frame sections become one, as do their relocations: GNU ld marks
  // the FDEs of one .eh_frame per object for --gc-sections, and keeps everything any
  // other .eh_frame of that object refers to, which would keep every function of the
  // other part alive. The symbol and string tables come after them (plan_tables).
  void plan_sections() {
    size_t total = 1;
    for (const Input& in : inputs_) total += in.sections.size();
    sections_.reserve(total + 4);
    sections_.emplace_back();
    for (uint32_t k = 0; k < inputs_.size(); ++k) {
      Input& in = inputs_[k];
      in.section_out.assign(in.sections.size(), 0);
      in.section_delta.assign(in.sections.size(), 0);
      for (uint32_t i = 1; i < in.sections.size(); ++i) {
        if (is_dropped(in, i)) continue;
        const bool eh_frame = is_eh_frame(in, i), eh_rela = relocates_eh_frame(in, i);
        if (is_object_note(in.section_name(i)) && !first_note(k, i)) continue;
        if (eh_frame && eh_frame_) {
          append_eh_frame(k, i);
          continue;
        }
        if (eh_rela && eh_rela_) {
          append_eh_relocations(k, i);
          continue;
        }
        in.section_out[i] = static_cast<uint32_t>(sections_.size());
        sections_.push_back(OutSection{in.sections[i], in.section_name(i), Piece{k, i, 0, 0}, {}, {}});
        if (eh_frame) eh_frame_ = in.section_out[i];
        if (eh_rela) eh_rela_ = in.section_out[i];
      }
    }
    check_notes_everywhere();
    // Section indexes from SHN_LORESERVE up do not fit st_shndx: such objects need a
    // .symtab_shndx (and extended numbering in the ELF header, write_header).
    need_shndx_ = sections_.size() - 1 >= SHN_LORESERVE;  // the highest index a symbol names
    symtab_ = static_cast<uint32_t>(sections_.size());    // the tables follow the copied sections
  }

  // Whether input k's note i is the first of its name, to be kept. A later one must say
  // what the first says (a linker would read only the first of the combined object).
  bool first_note(uint32_t k, uint32_t i) {
    const Input& in = inputs_[k];
    for (const Piece& kept : notes_) {
      const Input& first = inputs_[kept.input];
      if (first.section_name(kept.index) != in.section_name(i)) continue;
      const Elf64_Shdr &a = first.sections[kept.index], &b = in.sections[i];
      if (a.sh_type != b.sh_type || a.sh_flags != b.sh_flags || first.contents(kept.index) != in.contents(i))
        give_up(in.section_label(i) + ": " + std::string(in.section_name(i)) + " unlike " + first.label + "'s");
      return false;
    }
    notes_.push_back(Piece{k, i, 0, 0});
    return true;
  }

  // An input without a note another input has would lose what its absence says (for
  // .note.GNU-stack: an executable stack; for .note.gnu.property: no IBT or SHSTK).
  void check_notes_everywhere() const {
    for (const Piece& kept : notes_) {
      std::string_view name = inputs_[kept.input].section_name(kept.index);
      for (const Input& in : inputs_) {
        bool found = false;
        for (uint32_t i = 1; i < in.sections.size() && !found; ++i) found = in.section_name(i) == name;
        if (!found) give_up(in.label + ": no " + std::string(name) + " where another input has one");
      }
    }
  }

  // Input k's .eh_frame i goes after the .eh_frame so far. ld -r does the same: the
  // entries stay whole, and an FDE's pointer to its CIE is relative, so it still holds.
  void append_eh_frame(uint32_t k, uint32_t i) {
    const Input& in = inputs_[k];
    OutSection& out = sections_[eh_frame_];
    const Elf64_Shdr& h = in.sections[i];
    const uint64_t align = h.sh_addralign ? h.sh_addralign : 1;
    if (h.sh_type != out.header.sh_type || h.sh_flags != out.header.sh_flags || (h.sh_flags & SHF_GROUP))
      give_up(in.section_label(i) + ": an .eh_frame unlike the first input's");
    if (out.header.sh_size % align != 0) give_up(in.section_label(i) + ": .eh_frame would need padding");
    // A zero terminator would end the whole section for the linkers' parsers.
    const Piece& last = out.more.empty() ? out.piece : out.more.back();
    const Input& before = inputs_[last.input];
    if (ends_in_terminator(before.contents(last.index), before.section_label(last.index)))
      give_up(before.section_label(last.index) + ": an .eh_frame terminator before another .eh_frame");
    ends_in_terminator(in.contents(i), in.section_label(i));  // whole entries
    inputs_[k].section_out[i] = eh_frame_;
    inputs_[k].section_delta[i] = out.header.sh_size;
    out.more.push_back(Piece{k, i, out.header.sh_size, 0});
    out.header.sh_size += h.sh_size;
    if (align > out.header.sh_addralign) out.header.sh_addralign = align;
  }

  // Input k's relocations i (of an .eh_frame) go after the .eh_frame relocations so far.
  void append_eh_relocations(uint32_t k, uint32_t i) {
    const Input& in = inputs_[k];
    OutSection& out = sections_[eh_rela_];
    if (in.sections[i].sh_flags != out.header.sh_flags)
      give_up(in.section_label(i) + ": .eh_frame relocations unlike the first input's");
    inputs_[k].section_out[i] = eh_rela_;
    inputs_[k].section_delta[i] = out.header.sh_size;
    out.more.push_back(Piece{k, i, out.header.sh_size, 0});
    out.header.sh_size += in.sections[i].sh_size;
  }

  // A relocation piece's offsets move by where its target starts in the output.
  void set_relocation_deltas() {
    for (OutSection& out : sections_) {
      if (out.header.sh_type != SHT_RELA) continue;
      out.piece.reloc_delta = inputs_[out.piece.input].section_delta[out.header.sh_info];
      for (Piece& p : out.more) {
        const Input& in = inputs_[p.input];
        p.reloc_delta = in.section_delta[in.sections[p.index].sh_info];
      }
    }
  }

  // One entry per global name, as a linker resolves them.
  void merge_globals() {
    std::unordered_map<std::string_view, uint32_t> by_name;
    size_t total = 0;
    for (const Input& in : inputs_) total += in.symbols.size() - in.first_global;
    by_name.reserve(total);
    globals_.reserve(total);
    for (uint32_t k = 0; k < inputs_.size(); ++k) {
      Input& in = inputs_[k];
      in.global_of.assign(in.symbols.size(), kNoGlobal);
      for (uint32_t j = in.first_global; j < in.symbols.size(); ++j) {
        std::string_view name = in.symbol_name(j);
        if (name.empty()) give_up(in.symbol_label(j) + ": a global symbol without a name");
        auto [it, fresh] = by_name.try_emplace(name, static_cast<uint32_t>(globals_.size()));
        if (fresh) globals_.push_back(Global{name, in.symbols[j], k, in.symbol_section[j]});
        else merge_into(globals_[it->second], k, j);
        in.global_of[j] = it->second;
      }
    }
  }

  // Symbol j of input k meets the entry of its name: the definition wins over undefined
  // references, a strong definition over a weak one; the visibility is the most
  // constraining of all (as a linker does).
  void merge_into(Global& g, uint32_t k, uint32_t j) {
    const Input& in = inputs_[k];
    const Elf64_Sym& s = in.symbols[j];
    const uint32_t section = in.symbol_section[j];
    if ((type_of(g.symbol) == STT_TLS) != (type_of(s) == STT_TLS) && type_of(g.symbol) != STT_NOTYPE &&
        type_of(s) != STT_NOTYPE)
      give_up(std::string(g.name) + " is TLS in one input and not in another");
    const uint8_t visibility = min_visibility(visibility_of(g.symbol), visibility_of(s));
    const bool g_defined = g.section != kUndefined, s_defined = section != kUndefined;
    if (g_defined && s_defined) {
      if (g.section == kCommon || section == kCommon)
        give_up("COMMON symbol " + std::string(g.name) + " meets another definition in " + in.label);
      const bool g_weak = bind_of(g.symbol) == STB_WEAK, s_weak = bind_of(s) == STB_WEAK;
      if (!g_weak && !s_weak)
        give_up("duplicate definition of " + std::string(g.name) + " in " + inputs_[g.input].label + " and " +
                in.label);
      if (g_weak && !s_weak) g.symbol = s, g.input = k, g.section = section;
    } else if (s_defined) {
      g.symbol = s, g.input = k, g.section = section;
    } else if (!g_defined) {
      // Undefined in both: one strong reference makes the symbol required.
      unsigned bind = bind_of(g.symbol) == STB_WEAK ? bind_of(s) : bind_of(g.symbol);
      unsigned type = type_of(g.symbol) == STT_NOTYPE ? type_of(s) : type_of(g.symbol);
      g.symbol.st_info = static_cast<unsigned char>(ELF64_ST_INFO(bind, type));
    }
    g.symbol.st_other = static_cast<unsigned char>((g.symbol.st_other & ~3u) | visibility);
  }

  // The split renamed the module's local symbols NAME to hidden NAME.kiln.TAG so that
  // the two parts could refer to each other. Once combined, nothing outside needs them:
  // those the result defines become local NAME again, so that backtraces, profilers
  // and nm show the native names. Ones still undefined stay as they are (the final
  // link reports them under the name it would have reported before).
  void localize_renamed() {
    for (Global& g : globals_) {
      if (!renamed(g.name)) continue;
      if (g.section == kUndefined || g.section == kCommon || visibility_of(g.symbol) != STV_HIDDEN) continue;
      g.localize = true;
      g.was_private = temporary_names_.count(g.name) != 0;
      g.name.remove_suffix(suffix_.size());
      ++localized_;
    }
  }

  // The definitions of temporaries: the renamed ones the result defines (marked by
  // localize_renamed), and the locals of the names given (a module stamp wrote whole
  // without renaming, having no functions).
  void find_temporaries() {
    if (temporary_names_.empty()) return;
    for (Global& g : globals_)
      if (g.was_private) g.temporary = add_temporary(g.input, g.section, g.symbol, g.name);
    for (uint32_t k = 0; k < inputs_.size(); ++k) {
      Input& in = inputs_[k];
      in.temporary_of.assign(in.symbols.size(), kNoTemporary);
      for (uint32_t j = 1; j < in.first_global; ++j)
        if (temporary_names_.count(in.symbol_name(j)))
          in.temporary_of[j] = add_temporary(k, in.symbol_section[j], in.symbols[j], in.symbol_name(j));
      for (uint32_t j = in.first_global; j < in.symbols.size(); ++j)
        in.temporary_of[j] = globals_[in.global_of[j]].temporary;
    }
  }

  uint32_t add_temporary(uint32_t k, uint32_t section, const Elf64_Sym& s, std::string_view name) {
    const Input& in = inputs_[k];
    const unsigned type = type_of(s);
    if (type != STT_OBJECT && type != STT_NOTYPE && type != STT_TLS) return kNoTemporary;
    if (section == kUndefined || section >= in.sections.size()) return kNoTemporary;  // kAbsolute, kCommon too
    Temporary t;
    t.input = k, t.section = section, t.value = s.st_value, t.name = name;
    t.merge = (in.sections[section].sh_flags & SHF_MERGE) != 0;
    t.large = (in.sections[section].sh_flags & kShfLarge) != 0;
    // A section appended to another (.eh_frame) has no symbol of its own.
    t.drop = in.section_delta[section] == 0 && in.section_out[section] != 0;
    temporaries_.push_back(t);
    return static_cast<uint32_t>(temporaries_.size() - 1);
  }

  // Which temporaries lose their symbol: those that sign no group and whose every
  // reference a section symbol plus the offset serves (adds_to_address, or a GOT load
  // that becomes a lea). The others keep a symbol, named .LNAME.
  void plan_temporaries() {
    if (temporaries_.empty()) return;
    for (uint32_t k = 0; k < inputs_.size(); ++k) {
      const Input& in = inputs_[k];
      for (uint32_t i = 1; i < in.sections.size(); ++i) {
        if (is_dropped(in, i)) continue;
        if (in.sections[i].sh_type == SHT_RELA) check_references(k, i);
        const uint32_t signature = in.sections[i].sh_info;
        if (in.sections[i].sh_type == SHT_GROUP && in.temporary_of[signature] != kNoTemporary)
          temporaries_[in.temporary_of[signature]].drop = false;
      }
    }
    std::erase_if(relaxations_, [&](const Relaxation& x) { return !temporaries_[x.temporary].drop; });
    for (Temporary& t : temporaries_) {
      if (t.drop) ++dropped_;
      else t.kept_name = ".L" + std::string(t.name);
    }
    for (Global& g : globals_)
      if (g.temporary != kNoTemporary && !temporaries_[g.temporary].drop) g.name = temporaries_[g.temporary].kept_name;
  }

  void check_references(uint32_t k, uint32_t i) {
    const Input& in = inputs_[k];
    const uint32_t target = in.sections[i].sh_info;
    std::string_view from = in.contents(i), code = in.contents(target);
    for (size_t at = 0; at < from.size(); at += sizeof(Elf64_Rela)) {
      Elf64_Rela r;
      std::memcpy(&r, from.data() + at, sizeof r);
      const uint64_t symbol = ELF64_R_SYM(r.r_info);
      if (symbol >= in.symbols.size() || in.temporary_of[symbol] == kNoTemporary) continue;
      const uint32_t t = in.temporary_of[symbol];
      Temporary& temporary = temporaries_[t];
      // In a mergeable section a linker finds the piece that a section-relative reference
      // means by its addend: one with an addend of its own (a RIP-relative one's -4)
      // would land in another piece. LLVM keeps a .L symbol for those too.
      if (!temporary.drop || (adds_to_address(ELF64_R_TYPE(r.r_info)) && (!temporary.merge || r.r_addend == 0)))
        continue;
      // A large section may lie more than 2 GiB from the code, out of a lea's reach:
      // linkers relax such a GOT load only where the distance fits, which only they know.
      if (!temporary.merge && !temporary.large && is_got_load(r, code))
        relaxations_.push_back(Relaxation{t, in.section_out[target], in.section_delta[target] + r.r_offset - 2});
      else temporary.drop = false;
    }
  }

  bool dropped_temporary(const Input& in, uint32_t j) const {
    return !in.temporary_of.empty() && in.temporary_of[j] != kNoTemporary && temporaries_[in.temporary_of[j]].drop;
  }

  // Input k's dropped temporaries name their section's symbol: the input's own, or one
  // added here (LLVM writes one only for a section something relocates against).
  void name_sections_of_temporaries(uint32_t k) {
    Input& in = inputs_[k];
    std::unordered_map<uint32_t, uint32_t> section_symbol;  // input section -> output symbol
    for (uint32_t j = 1; j < in.first_global; ++j)
      if (type_of(in.symbols[j]) == STT_SECTION && in.symbol_out[j] != 0 && in.symbol_out[j] != kDroppedSymbol)
        section_symbol.emplace(in.symbol_section[j], in.symbol_out[j]);
    for (Temporary& t : temporaries_) {
      if (t.input != k || !t.drop) continue;
      auto [it, fresh] = section_symbol.try_emplace(t.section, 0);
      if (fresh) {
        Elf64_Sym s{};
        s.st_info = static_cast<unsigned char>(ELF64_ST_INFO(STB_LOCAL, STT_SECTION));
        it->second = add_symbol({}, s, place(in, t.section, s));
      }
      t.out = it->second;
    }
    for (uint32_t j = 1; j < in.first_global; ++j)
      if (dropped_temporary(in, j)) in.symbol_out[j] = temporaries_[in.temporary_of[j]].out;
  }

  bool renamed(std::string_view name) const {
    return !suffix_.empty() && name.size() > suffix_.size() && name.substr(name.size() - suffix_.size()) == suffix_;
  }

  // The output section of a symbol defined in `section` of `in`; its value moves with
  // where that section starts in the output section (an appended .eh_frame).
  uint32_t place(const Input& in, uint32_t section, Elf64_Sym& s) const {
    if (section == kUndefined || section == kAbsolute || section == kCommon) return section;
    if (in.section_out[section] == 0) give_up(in.section_label(section) + ": symbols defined in a section not copied");
    s.st_value += in.section_delta[section];
    return in.section_out[section];
  }

  // A local symbol of input k, or kDroppedSymbol for the section symbol of an appended
  // .eh_frame (a section symbol stands for the start of its section; nothing refers to
  // this one, and write_relocations makes sure of it).
  uint32_t add_local(const Input& in, uint32_t j) {
    const uint32_t section = in.symbol_section[j];
    Elf64_Sym s = in.symbols[j];
    if (type_of(s) == STT_SECTION && section != kUndefined && section < in.sections.size() &&
        in.section_delta[section] != 0)
      return kDroppedSymbol;
    uint32_t out = place(in, section, s);
    // A temporary that keeps its symbol keeps it as .LNAME (plan_temporaries).
    const bool kept = !in.temporary_of.empty() && in.temporary_of[j] != kNoTemporary;
    return add_symbol(kept ? std::string_view(temporaries_[in.temporary_of[j]].kept_name) : in.symbol_name(j), s, out);
  }

  uint32_t add_symbol(std::string_view name, Elf64_Sym s, uint32_t section) {
    s.st_name = 0;
    if (!name.empty()) {
      s.st_name = static_cast<uint32_t>(strtab_bytes_.size());
      strtab_bytes_.append(name);
      strtab_bytes_.push_back('\0');
    }
    uint32_t xindex = 0;
    if (section == kUndefined) s.st_shndx = SHN_UNDEF;
    else if (section == kAbsolute) s.st_shndx = SHN_ABS;
    else if (section == kCommon) s.st_shndx = SHN_COMMON;
    else if (section >= SHN_LORESERVE) s.st_shndx = SHN_XINDEX, xindex = section;
    else s.st_shndx = static_cast<uint16_t>(section);
    if (need_shndx_) shndx_words_.push_back(xindex);
    symbols_.push_back(s);
    return static_cast<uint32_t>(symbols_.size() - 1);
  }

  // The output symbol table: the null symbol; per input its locals, then the symbols it
  // defines that became local; then the globals in first-seen order.
  void number_symbols() {
    size_t total = 1, names = 1;
    for (const Input& in : inputs_) total += in.symbols.size(), names += in.names.size();
    symbols_.reserve(total);
    strtab_bytes_.reserve(names);
    strtab_bytes_.assign(1, '\0');
    add_symbol({}, Elf64_Sym{}, kUndefined);
    for (uint32_t k = 0; k < inputs_.size(); ++k) {
      Input& in = inputs_[k];
      in.symbol_out.assign(in.symbols.size(), 0);
      for (uint32_t j = 1; j < in.first_global; ++j)
        if (!dropped_temporary(in, j)) in.symbol_out[j] = add_local(in, j);
      for (Global& g : globals_) {
        if (!g.localize || g.input != k || (g.temporary != kNoTemporary && temporaries_[g.temporary].drop)) continue;
        Elf64_Sym s = g.symbol;
        s.st_info = static_cast<unsigned char>(ELF64_ST_INFO(STB_LOCAL, type_of(s)));
        s.st_other = static_cast<unsigned char>(s.st_other & ~3u);  // default visibility: a local has no other
        uint32_t out = place(in, g.section, s);
        g.out = add_symbol(g.name, s, out);
      }
      if (!temporaries_.empty()) name_sections_of_temporaries(k);
    }
    for (Global& g : globals_)
      if (g.temporary != kNoTemporary && temporaries_[g.temporary].drop) g.out = temporaries_[g.temporary].out;
    first_global_ = static_cast<uint32_t>(symbols_.size());
    for (Global& g : globals_) {
      if (g.localize) continue;
      Elf64_Sym s = g.symbol;
      uint32_t out = place(inputs_[g.input], g.section, s);
      g.out = add_symbol(g.name, s, out);
    }
    for (Input& in : inputs_)
      for (uint32_t j = in.first_global; j < in.symbols.size(); ++j) in.symbol_out[j] = globals_[in.global_of[j]].out;
  }

  // Links between sections, renumbered (the symbol table's index is known: it follows the
  // copied sections).
  void finish_section_headers() {
    for (size_t s = 1; s < sections_.size(); ++s) {
      OutSection& out = sections_[s];
      const Input& in = inputs_[out.piece.input];
      Elf64_Shdr& h = out.header;
      if (h.sh_type == SHT_RELA) {
        h.sh_link = symtab_;
        h.sh_info = in.section_out[h.sh_info];  // an appended target: set_relocation_deltas
        if (h.sh_info == 0) give_up(in.section_label(out.piece.index) + ": relocations for a section not copied");
      } else if (h.sh_type == SHT_GROUP) {
        h.sh_link = symtab_;
        h.sh_info = in.symbol_out[h.sh_info];  // the signature: its name, now maybe local
        if (h.sh_info == kDroppedSymbol)
          give_up(in.section_label(out.piece.index) + ": signed by a symbol not written");
      } else {
        if (h.sh_flags & SHF_LINK_ORDER) h.sh_link = whole_section(in, h.sh_link);
        else if (h.sh_link != 0) h.sh_link = symtab_;
        if (h.sh_flags & SHF_INFO_LINK) h.sh_info = whole_section(in, h.sh_info);
      }
    }
  }

  // The output index of a section that a link names as a whole: one appended to
  // another output section cannot be named so.
  uint32_t whole_section(const Input& in, uint32_t section) const {
    if (in.section_delta[section] != 0) give_up(in.section_label(section) + ": appended, yet named as a whole");
    if (section != 0 && in.section_out[section] == 0) give_up(in.section_label(section) + ": named, yet not copied");
    return in.section_out[section];
  }

  uint32_t add_table(std::string_view name, uint32_t type, uint64_t align, uint64_t entsize, std::string_view bytes) {
    OutSection s;  // piece.index 0: written from `own`
    s.name = name;
    s.header.sh_type = type;
    s.header.sh_addralign = align;
    s.header.sh_entsize = entsize;
    s.header.sh_size = bytes.size();
    s.own = bytes;
    sections_.push_back(s);
    return static_cast<uint32_t>(sections_.size() - 1);
  }

  // .symtab, .symtab_shndx and .strtab, named last of all.
  void plan_tables() {
    std::string_view symbols(reinterpret_cast<const char*>(symbols_.data()), symbols_.size() * sizeof(Elf64_Sym));
    if (add_table(".symtab", SHT_SYMTAB, 8, sizeof(Elf64_Sym), symbols) != symtab_)
      give_up("internal: .symtab misplaced");
    if (need_shndx_) {
      std::string_view words(reinterpret_cast<const char*>(shndx_words_.data()), shndx_words_.size() * 4);
      shndx_ = add_table(".symtab_shndx", SHT_SYMTAB_SHNDX, 4, 4, words);
    }
    strtab_ = add_table(".strtab", SHT_STRTAB, 1, 0, {});
    sections_[symtab_].header.sh_link = strtab_;
    sections_[symtab_].header.sh_info = first_global_;
    if (need_shndx_) sections_[shndx_].header.sh_link = symtab_;
    name_sections_and_symbols();
  }

  // A section's name as written. LLVM names a symbol's own section after it
  // (.text.NAME.kiln.TAG, and its .rela): those take the native name too. Only the name
  // changes: linkers group sections by their prefix (.text., .data.rel.ro., ...), which stays.
  std::string_view section_name(size_t s) const {
    std::string_view name = sections_[s].name;
    if (renamed(name)) name.remove_suffix(suffix_.size());
    return name;
  }

  // One table for section and symbol names, as LLVM writes it: the section names first,
  // ".rela.X" holding "X" in its tail; then each symbol's name, in the tail of its own
  // section's name where that ends with it (".text.NAME" holds NAME), else appended.
  void name_sections_and_symbols() {
    std::string table;
    size_t names = strtab_bytes_.size() + 1;
    for (const OutSection& s : sections_) names += s.name.size() + 1;
    table.reserve(names);
    table.assign(1, '\0');
    auto append = [&table](std::string_view name) {
      const uint32_t at = static_cast<uint32_t>(table.size());
      table.append(name);
      table.push_back('\0');
      return at;
    };
    for (OutSection& s : sections_) s.header.sh_name = 0;  // an input's offsets until now
    for (size_t s = 1; s < sections_.size(); ++s) {
      Elf64_Shdr& h = sections_[s].header;
      if (h.sh_type != SHT_RELA) continue;
      const std::string_view name = section_name(s), target = section_name(h.sh_info);
      h.sh_name = append(name);
      Elf64_Shdr& t = sections_[h.sh_info].header;
      if (t.sh_name == 0 && name.size() == target.size() + 5 && name.substr(5) == target) t.sh_name = h.sh_name + 5;
    }
    for (size_t s = 1; s < sections_.size(); ++s)
      if (sections_[s].header.sh_name == 0) sections_[s].header.sh_name = append(section_name(s));
    for (size_t i = 1; i < symbols_.size(); ++i) {
      Elf64_Sym& sym = symbols_[i];
      if (sym.st_name == 0) continue;
      const std::string_view name(strtab_bytes_.data() + sym.st_name);
      const size_t section = sym.st_shndx == SHN_XINDEX ? shndx_words_[i] : sym.st_shndx;
      const bool own = section != SHN_UNDEF && section < sections_.size() &&
                       (sym.st_shndx == SHN_XINDEX || sym.st_shndx < SHN_LORESERVE);
      if (own) {
        const uint32_t at = sections_[section].header.sh_name;
        const std::string_view holder(table.data() + at);
        if (holder.size() >= name.size() && holder.substr(holder.size() - name.size()) == name) {
          sym.st_name = at + static_cast<uint32_t>(holder.size() - name.size());
          continue;
        }
      }
      sym.st_name = append(name);
    }
    strtab_bytes_ = std::move(table);
    sections_[strtab_].own = strtab_bytes_;
    sections_[strtab_].header.sh_size = strtab_bytes_.size();
  }

  // File offsets: the contents in section order, each at its alignment (SHT_NOBITS
  // takes no room), then the section header table.
  void lay_out() {
    uint64_t pos = sizeof(Elf64_Ehdr), padding = 0, budget = 1 << 20;
    for (const Input& in : inputs_) budget += in.bytes.size();
    for (size_t s = 1; s < sections_.size(); ++s) {
      Elf64_Shdr& h = sections_[s].header;
      if (h.sh_type != SHT_NOBITS) {
        uint64_t aligned = align_up(pos, h.sh_addralign);
        padding += aligned - pos;
        if (padding > budget) give_up("alignment padding larger than the inputs");
        pos = aligned;
      }
      h.sh_offset = pos;
      if (h.sh_type != SHT_NOBITS) pos += h.sh_size;
    }
    shoff_ = align_up(pos, 8);
    size_ = shoff_ + sections_.size() * sizeof(Elf64_Shdr);
  }

  void write_relocations(const Piece& p, char* to) const {
    const Input& in = inputs_[p.input];
    std::string_view from = in.contents(p.index);
    for (size_t at = 0; at < from.size(); at += sizeof(Elf64_Rela)) {
      Elf64_Rela r;
      std::memcpy(&r, from.data() + at, sizeof r);
      uint64_t symbol = ELF64_R_SYM(r.r_info);
      if (symbol >= in.symbols.size() || in.symbol_out[symbol] == kDroppedSymbol)
        give_up(in.section_label(p.index) + ": relocation against symbol " + std::to_string(symbol) +
                ", out of range or not written");
      r.r_offset += p.reloc_delta;
      uint32_t type = ELF64_R_TYPE(r.r_info);
      if (dropped_temporary(in, static_cast<uint32_t>(symbol))) {
        // Against the section's symbol, the temporary's offset added (a GOT load is a lea now).
        r.r_addend += static_cast<int64_t>(temporaries_[in.temporary_of[symbol]].value);
        if (type == R_X86_64_GOTPCRELX || type == R_X86_64_REX_GOTPCRELX) type = R_X86_64_PC32;
      }
      r.r_info = ELF64_R_INFO(static_cast<uint64_t>(in.symbol_out[symbol]), type);
      std::memcpy(to + at, &r, sizeof r);
    }
  }

  // The flag word stays; the members are renumbered (check_group_section read them).
  void write_group(const Piece& p, char* to) const {
    const Input& in = inputs_[p.input];
    std::string_view from = in.contents(p.index);
    std::memcpy(to, from.data(), 4);
    for (size_t at = 4; at < from.size(); at += 4) {
      uint32_t member;
      std::memcpy(&member, from.data() + at, 4);
      member = whole_section(in, member);
      std::memcpy(to + at, &member, 4);
    }
  }

  void write_piece(const OutSection& s, const Piece& p, char* to) const {
    if (p.index == 0) {
      if (!s.own.empty()) std::memcpy(to, s.own.data(), s.own.size());
    } else if (s.header.sh_type == SHT_RELA) {
      write_relocations(p, to);
    } else if (s.header.sh_type == SHT_GROUP) {
      write_group(p, to);
    } else {
      std::string_view from = inputs_[p.input].contents(p.index);
      if (!from.empty()) std::memcpy(to, from.data(), from.size());
    }
  }

  void write_section(const OutSection& s, char* to) const {
    if (s.header.sh_type == SHT_NOBITS) return;
    write_piece(s, s.piece, to + s.piece.offset);
    for (const Piece& p : s.more) write_piece(s, p, to + p.offset);
  }

  // The ELF header, with extended numbering where the counts do not fit: the real
  // section count in the null section's sh_size, .strtab's index in its sh_link.
  void write_header(std::string& out) {
    const size_t count = sections_.size();
    if (count >= SHN_LORESERVE) sections_[0].header.sh_size = count;
    if (strtab_ >= SHN_LORESERVE) sections_[0].header.sh_link = strtab_;
    Elf64_Ehdr eh{};
    std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_ident[EI_OSABI] = osabi_;
    eh.e_type = ET_REL;
    eh.e_machine = EM_X86_64;
    eh.e_version = EV_CURRENT;
    eh.e_flags = inputs_[0].header.e_flags;
    eh.e_shoff = shoff_;
    eh.e_ehsize = sizeof(Elf64_Ehdr);
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = count >= SHN_LORESERVE ? 0 : static_cast<uint16_t>(count);
    eh.e_shstrndx = strtab_ >= SHN_LORESERVE ? static_cast<uint16_t>(SHN_XINDEX) : static_cast<uint16_t>(strtab_);
    std::memcpy(&out[0], &eh, sizeof eh);
  }

  std::string write() {
    std::string out(size_, '\0');
    for (size_t s = 1; s < sections_.size(); ++s) write_section(sections_[s], &out[sections_[s].header.sh_offset]);
    for (const Relaxation& x : relaxations_) out[sections_[x.section].header.sh_offset + x.offset] = '\x8d';  // lea
    write_header(out);
    for (size_t s = 0; s < sections_.size(); ++s)
      std::memcpy(&out[shoff_ + s * sizeof(Elf64_Shdr)], &sections_[s].header, sizeof(Elf64_Shdr));
    return out;
  }
};

}  // namespace

CombineResult combine_relocatable(const std::vector<std::string_view>& objects, std::string_view tag,
                                  const std::vector<std::string>& temporaries) {
  CombineResult result;
  try {
    Combiner combiner(objects, tag, temporaries);
    result.object = combiner.run();
    result.localized = combiner.localized();
    result.dropped = combiner.dropped();
  } catch (const Unsupported& u) {
    result.object.clear();
    result.unsupported = "unsupported: " + u.reason;
  } catch (const std::bad_alloc&) {
    result.object.clear();
    result.unsupported = "unsupported: out of memory";
  } catch (const std::length_error&) {
    result.object.clear();
    result.unsupported = "unsupported: too large";
  }
  return result;
}

}  // namespace kiln
