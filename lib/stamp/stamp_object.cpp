// The stamp back end's object writer: a relocatable x86-64 ELF64 object written by
// hand (see stamp_object.h for what goes in it). Everything is laid out in input order
// with no hash-ordered containers, so the same input always gives the same bytes.
#include <elf.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <string>
#include <vector>

#include "error.h"
#include "stamp_eh_frame.h"
#include "stamp_object.h"
#include "string_hash.h"

#include "stamp_dwarf.h"

namespace kiln {

using namespace std::string_view_literals;

// The relocation types are spelled once, in kernels/stamp_emit.h (a leaf without
// <elf.h>); here they are checked against the system's.
static_assert(kReloc64 == R_X86_64_64);
static_assert(kRelocPc32 == R_X86_64_PC32);
static_assert(kReloc32 == R_X86_64_32);
static_assert(kRelocPlt32 == R_X86_64_PLT32);
static_assert(kRelocGotPcRelX == R_X86_64_GOTPCRELX);
static_assert(kRelocRexGotPcRelX == R_X86_64_REX_GOTPCRELX);
static_assert(kRelocTlsGd == R_X86_64_TLSGD);
static_assert(kRelocDtpOff64 == R_X86_64_DTPOFF64);

namespace {

// DWARF call frame constants (not in <elf.h>).
constexpr uint8_t kCfaNop = 0x00;
constexpr uint8_t kCfaAdvanceLoc = 0x40;      // low 6 bits: delta
constexpr uint8_t kCfaOffset = 0x80;          // low 6 bits: register; ULEB factored offset
constexpr uint8_t kCfaDefCfa = 0x0c;          // ULEB register, ULEB offset
constexpr uint8_t kCfaDefCfaRegister = 0x0d;  // ULEB register
constexpr uint8_t kCfaDefCfaOffset = 0x0e;    // ULEB offset
constexpr uint8_t kEhPePcrelSdata4 = 0x1b;    // DW_EH_PE_pcrel | DW_EH_PE_sdata4
constexpr uint8_t kDwarfRbp = 6, kDwarfRsp = 7, kDwarfRip = 16;
constexpr uint32_t kShtX8664Unwind = 0x70000001;  // SHT_X86_64_UNWIND

void put8(std::string& out, uint8_t v) { out.push_back(static_cast<char>(v)); }
void put32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void set32(std::string& out, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
void pad_to(std::string& out, size_t alignment, char fill) {
  while (out.size() % alignment != 0) out.push_back(fill);
}
template <typename T>
void put_struct(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

// How many bytes a relocation of this type patches; 0 for types this writer refuses.
// Read from a table, not a switch: every relocation is checked against it.
struct RelocationFieldSizes {
  uint8_t bytes[64] = {};
};
constexpr RelocationFieldSizes relocation_field_sizes() {
  RelocationFieldSizes t;
  for (uint32_t type : {R_X86_64_64, R_X86_64_PC64}) t.bytes[type] = 8;
  for (uint32_t type : {R_X86_64_PC32, R_X86_64_PLT32, R_X86_64_32, R_X86_64_32S, R_X86_64_GOTPCREL, R_X86_64_GOTPCRELX,
                        R_X86_64_REX_GOTPCRELX, R_X86_64_TLSGD})
    t.bytes[type] = 4;
  return t;
}
constexpr RelocationFieldSizes kRelocationFieldSizes = relocation_field_sizes();
inline uint32_t relocation_field_size(uint32_t type) { return type < 64 ? kRelocationFieldSizes.bytes[type] : 0; }

uint8_t st_other_for(SymbolVisibility v) {
  switch (v) {
    case SymbolVisibility::hidden:
      return STV_HIDDEN;
    case SymbolVisibility::protected_:
      return STV_PROTECTED;
    case SymbolVisibility::default_:
      break;
  }
  return STV_DEFAULT;
}

unsigned char st_bind_for(SymbolBinding b) {
  switch (b) {
    case SymbolBinding::local:
      return STB_LOCAL;
    case SymbolBinding::weak:
      return STB_WEAK;
    case SymbolBinding::global:
      break;
  }
  return STB_GLOBAL;
}

}  // namespace

namespace {

// Where build_eh_frame left fields that need relocations.
struct EhFrameFixups {
  std::vector<uint32_t> pc_begin;             // per function
  std::vector<uint32_t> lsda_pointer;         // per function; meaningful with a personality
  std::vector<uint32_t> personality_pointer;  // per distinct personality (CIE field)
};

void put_cie_body(std::string& out, bool with_personality, uint32_t* personality_field) {
  put32(out, 0);  // CIE id
  put8(out, 1);   // version
  out += with_personality ? "zPLR" : "zR";
  put8(out, 0);
  put8(out, 1);          // code alignment factor (ULEB)
  put8(out, 0x78);       // data alignment factor -8 (SLEB)
  put8(out, kDwarfRip);  // return address register (a byte in version 1)
  if (with_personality) {
    put8(out, 7);     // augmentation data length
    put8(out, 0x9b);  // personality: indirect | pcrel | sdata4 (through DW.ref.NAME)
    *personality_field = static_cast<uint32_t>(out.size());
    put32(out, 0);
    put8(out, kEhPePcrelSdata4);  // LSDA encoding
    put8(out, kEhPePcrelSdata4);  // FDE pointer encoding
  } else {
    put8(out, 1);                 // augmentation data length
    put8(out, kEhPePcrelSdata4);  // FDE pointer encoding
  }
  put8(out, kCfaDefCfa);  // CFA = rsp + 8
  put8(out, kDwarfRsp);
  put8(out, 8);
  put8(out, kCfaOffset | kDwarfRip);  // rip at CFA - 8
  put8(out, 1);
}

// An FDE's bytes, the same for every function of one frame shape with or without an
// LSDA pointer but for its CIE pointer and pc_range: 32 bytes each way (31 at most,
// padded with DW_CFA_nop, so that every FDE after the 8-aligned CIEs starts
// 8-aligned). Copied whole, where made byte by byte the FDEs were most of
// build_eh_frame's work.
constexpr uint32_t kFdeSize = 32;
constexpr uint32_t kFdeCiePointer = 4, kFdePcBegin = 8, kFdePcRange = 12, kFdeLsdaPointer = 17;
struct FdeTemplate {
  uint8_t bytes[kFdeSize] = {};  // DW_CFA_nop is 0: the padding
};
constexpr FdeTemplate fde_template(bool lsda, bool biased) {
  FdeTemplate t;
  t.bytes[0] = kFdeSize - 4;  // length; the CIE pointer, pc_begin (relocated) and pc_range are 0
  uint32_t n = kFdePcRange + 4;
  auto put8 = [&](uint8_t v) { t.bytes[n++] = v; };  // past the end: not a constant expression
  if (lsda) {
    put8(4);  // augmentation data: the LSDA pointer (relocated)
    n += 4;
  } else {
    put8(0);  // augmentation data length
  }
  put8(kCfaAdvanceLoc | 1);  // after push rbp
  put8(kCfaDefCfaOffset);    //   CFA = rsp + 16
  put8(16);
  put8(kCfaOffset | kDwarfRbp);  //   rbp at CFA - 16
  put8(2);
  if (biased) {
    put8(kCfaAdvanceLoc | 5);  // after lea rbp, [rsp - kFrameBias]
    put8(kCfaDefCfa);          //   CFA = rbp + kFrameBias + 16
    put8(kDwarfRbp);
    static_assert(kFrameBias + 16 >= 128 && kFrameBias + 16 < 16384, "the offset's ULEB takes two bytes");
    put8(((kFrameBias + 16) & 0x7f) | 0x80);
    put8((kFrameBias + 16) >> 7);
  } else {
    put8(kCfaAdvanceLoc | 3);  // after mov rbp, rsp
    put8(kCfaDefCfaRegister);  //   CFA = rbp + 16
    put8(kDwarfRbp);
  }
  return t;
}
constexpr FdeTemplate kFdeTemplates[2][2] = {{fde_template(false, false), fde_template(false, true)},
                                             {fde_template(true, false), fde_template(true, true)}};

// One CIE without personality, one per distinct personality, and an FDE per function.
void build_eh_frame(const std::vector<uint32_t>& code_sizes, const std::vector<uint8_t>& biased,
                    const std::vector<int>& personality_of, size_t personality_count, EhFrameFixups& fix,
                    std::string& out) {
  out.clear();
  out.reserve(40 * (personality_count + 1) + kFdeSize * code_sizes.size());
  fix.pc_begin.resize(code_sizes.size());
  fix.lsda_pointer.assign(code_sizes.size(), 0);
  fix.personality_pointer.assign(personality_count, 0);
  std::vector<uint32_t> cie_offset(personality_count + 1);
  for (size_t c = 0; c <= personality_count; ++c) {
    if (c > 0 && personality_count == 0) break;
    size_t start = out.size();
    cie_offset[c] = static_cast<uint32_t>(start);
    put32(out, 0);  // length, patched below
    put_cie_body(out, c > 0, c > 0 ? &fix.personality_pointer[c - 1] : nullptr);
    pad_to(out, 8, static_cast<char>(kCfaNop));
    set32(out, start, static_cast<uint32_t>(out.size() - start - 4));
  }
  size_t start = out.size();
  out.resize(start + kFdeSize * code_sizes.size());
  for (size_t i = 0; i < code_sizes.size(); ++i, start += kFdeSize) {
    const int p = personality_of.empty() ? -1 : personality_of[i];
    char* fde = &out[start];
    std::memcpy(fde, kFdeTemplates[p >= 0][biased[i] != 0].bytes, kFdeSize);
    const uint32_t cie_pointer = static_cast<uint32_t>(start + kFdeCiePointer) - cie_offset[static_cast<size_t>(p + 1)];
    std::memcpy(fde + kFdeCiePointer, &cie_pointer, 4);  // back to its CIE
    std::memcpy(fde + kFdePcRange, &code_sizes[i], 4);
    fix.pc_begin[i] = static_cast<uint32_t>(start + kFdePcBegin);
    if (p >= 0) fix.lsda_pointer[i] = static_cast<uint32_t>(start + kFdeLsdaPointer);
  }
}

}  // namespace

bool stamp_frame_biased(const uint8_t* code, uint32_t size) {
  static const uint8_t kBiasedPrologue[] = {0x55, 0x48, 0x8D, 0x6C, 0x24};  // push rbp; lea rbp, [rsp + disp8]
  return size >= sizeof kBiasedPrologue + 1 && std::memcmp(code, kBiasedPrologue, sizeof kBiasedPrologue) == 0 &&
      static_cast<int8_t>(code[sizeof kBiasedPrologue]) == -kFrameBias;
}

std::string build_stamp_eh_frame(const std::vector<uint32_t>& code_sizes, const std::vector<uint8_t>& biased,
                                 std::vector<uint32_t>& pc_begin_offsets) {
  EhFrameFixups fix;
  std::string out;
  build_eh_frame(code_sizes, biased, {}, 0, fix, out);
  pc_begin_offsets = fix.pc_begin;
  return out;
}

namespace {

// What a section holds, for its name in .strtab: a function's code, a global's
// bytes, a personality's DW.ref pointer or its COMDAT group, or one of the object's
// own sections. A relocation section is named after the section it applies to.
class SectionOwner {
 public:
  enum class Kind : uint8_t {
    none,         // the null section
    relocations,  // .rela.TARGET (the target is the header's sh_info)
    function,     // index: the function
    data,         // index: the global
    dwref,        // index: the personality; .data.DW.ref.NAME
    dwref_group,  // index: the personality; its .group
    lsda_table,   // .gcc_except_table: every function's LSDA
    eh_frame,
    note,   // .note.GNU-stack
    debug,  // index: the StampDwarf section
    symtab,
    symtab_shndx,
    strtab,  // symbol and section names both, as LLVM writes them
  };
  static SectionOwner none() { return {Kind::none, 0}; }
  static SectionOwner relocations() { return {Kind::relocations, 0}; }
  static SectionOwner function(uint32_t i) { return {Kind::function, i}; }
  static SectionOwner data(size_t d) { return {Kind::data, d}; }
  static SectionOwner dwref(size_t personality) { return {Kind::dwref, personality}; }
  static SectionOwner dwref_group(size_t personality) { return {Kind::dwref_group, personality}; }
  static SectionOwner debug(size_t k) { return {Kind::debug, k}; }
  static SectionOwner of(Kind kind) { return {kind, 0}; }  // the object's own sections
  Kind kind() const { return kind_; }
  size_t index() const { return index_; }

 private:
  SectionOwner(Kind kind, size_t index) : kind_(kind), index_(index) {}
  Kind kind_;
  size_t index_;
};

// A section as laid out: its header, where its bytes come from (written straight
// into the output, never copied into a buffer of its own first), and what it holds.
struct PlannedSection {
  Elf64_Shdr header{};
  const uint8_t* bytes = nullptr;  // contents to copy, or nullptr (built in place)
  SectionOwner owner = SectionOwner::none();
};

void put_rela_at(std::string& out, size_t at, uint64_t offset, uint32_t symbol, uint32_t type, int64_t addend) {
  Elf64_Rela r{};
  r.r_offset = offset;
  r.r_info = ELF64_R_INFO(static_cast<uint64_t>(symbol), static_cast<uint64_t>(type));
  r.r_addend = addend;
  std::memcpy(&out[at], &r, sizeof r);
}

const uint8_t kZeros[8] = {};                                     // a DW.ref pointer before relocation
constexpr size_t kAbsolute = std::numeric_limits<size_t>::max();  // a symbol's section: SHN_ABS

// What the phases of one write_stamp_object call (ObjectWriter, below) leave for the
// next in tables: kept per thread from one object to the next, cleared but not freed,
// so that an object's tables take no allocations once a thread has written one as big
// (allocated, grown and freed for each object, with first touches of new pages, they
// cost about a twentieth of the writer's time).
struct WriterTables {
  // index_names: one index per distinct string (the first of equal ones), data names
  // and undefined symbols' names after the view's.
  std::vector<std::string_view> names;
  StringIndex index_of_name;
  std::vector<uint32_t> canon;                       // name -> its canonical name
  std::vector<const UndefinedSymbol*> undefined_of;  // canonical name -> how to write it undefined
  // check_input
  std::vector<uint32_t> code_sizes;
  std::vector<uint8_t> frame_biased;  // per function: its prologue sets a biased rbp (stamp_frame_biased)
  std::vector<uint8_t> defined;       // canonical name -> defined here
  std::vector<uint32_t> data_name;    // per global: canonical name
  // find_personalities: distinct personalities in first-use order (canonical names),
  // and per function its personality's position there, or -1.
  std::vector<uint32_t> personalities;
  std::vector<int> personality_of;
  // plan_* : section headers in file order
  std::vector<PlannedSection> sections;
  std::vector<size_t> code_index, rela_index, data_index, data_rela_index;
  std::vector<uint32_t> lsda_offset;  // per function: within .gcc_except_table
  std::string lsda_bytes;             // .gcc_except_table
  std::vector<size_t> dwref_group, dwref_data, dwref_rela;
  std::vector<uint32_t> group_words;
  EhFrameFixups eh_fix;
  std::string eh_frame;
  std::vector<size_t> debug_index, debug_rela_index;  // per StampDwarf section
  // name_sections, then add_symbols: one table for section and symbol names, where a
  // symbol's name is the tail of its section's (".rela.text.NAME" holds ".text.NAME"
  // and NAME), as in LLVM's objects; apart, the names were a third of the bytes of
  // regex's objects.
  std::string strtab;
  std::vector<Elf64_Sym> symbols;
  std::vector<uint32_t> shndx_words;
  std::vector<uint32_t> symbol_of_name;     // canonical name -> symbol (0: none yet)
  std::vector<uint32_t> section_symbol;     // per function
  std::vector<uint32_t> debug_symbol;       // per StampDwarf section: its section symbol
  std::vector<uint32_t> dwref_symbol;       // per personality

  // Empties every table, keeping its memory (the name index is reset by index_names).
  void clear() {
    for (auto* t : {&canon, &code_sizes, &data_name, &personalities, &lsda_offset, &group_words, &eh_fix.pc_begin,
                    &eh_fix.lsda_pointer, &eh_fix.personality_pointer, &shndx_words, &symbol_of_name, &section_symbol,
                    &debug_symbol, &dwref_symbol})
      t->clear();
    for (auto* t : {&code_index, &rela_index, &data_index, &data_rela_index, &dwref_group, &dwref_data, &dwref_rela,
                    &debug_index, &debug_rela_index})
      t->clear();
    for (auto* t : {&frame_biased, &defined}) t->clear();
    for (auto* t : {&lsda_bytes, &eh_frame}) t->clear();  // strtab: see strtab_room
    names.clear(), undefined_of.clear(), personality_of.clear(), sections.clear(), symbols.clear();
  }
  // Whether to keep the tables for the next object: not those of a huge one, whose
  // memory the thread would hold for good.
  bool worth_keeping() const {
    return names.capacity() <= (1u << 16) && sections.capacity() <= (1u << 17) && strtab.size() <= (1u << 22);
  }
};

// One write_stamp_object call: its input, the tables each phase leaves for the next,
// and the sections' places. The phases run in order (write() below); each reads only
// what earlier ones set.
struct ObjectWriter : WriterTables {
  const StampObjectView& v;
  const std::string& source_file_name;
  const std::vector<StampData>& data;
  const uint32_t F;

  size_t lsda_index = 0;  // 0: no .gcc_except_table
  size_t eh_frame_index = 0, eh_rela_index = 0, note_index = 0, symtab_index = 0, shndx_index = 0, strtab_index = 0;
  bool need_shndx = false;
  uint32_t lsda_symbol = 0;
  size_t strtab_bound = 0;  // what name_sections reserved for .strtab
  size_t strtab_size = 0;   // .strtab's bytes written
  // lay_out_contents and after
  std::string out;

  ObjectWriter(const StampObjectView& view, const std::string& file, const std::vector<StampData>& globals,
               WriterTables&& tables)
      : WriterTables(std::move(tables)), v(view), source_file_name(file), data(globals), F(view.function_count) {
    clear();
  }

  [[noreturn]] void fail(const std::string& reason) const { throw KilnError(kExitInternal, source_file_name, reason); }

  std::string write() {
    index_names();
    check_input();
    find_personalities();
    // Room for every section: each function's, global's and DWARF section's with its
    // relocations, three per personality, and the object's own.
    const size_t debug_sections = v.dwarf ? v.dwarf->sections.size() : 0;
    sections.reserve(2 * (F + data.size() + debug_sections) + 3 * personalities.size() + 8);
    sections.resize(1);
    plan_code_and_data();
    plan_lsda_table();
    plan_dwrefs();
    plan_eh_frame_and_tables();
    name_sections();
    add_symbols();
    lay_out_contents();
    write_function_and_data_relocations();
    write_eh_relocations();
    write_debug_relocations();
    write_tables();
    write_header();
    return std::move(out);
  }

  uint32_t name_index(std::string_view name) {
    bool inserted = false;
    const uint32_t id = index_of_name.insert(name, static_cast<uint32_t>(names.size()), &inserted);
    if (inserted) names.push_back(name), canon.push_back(id);
    return id;
  }

  // Names: the view's, then those of undefined symbols that are weak or not of default
  // visibility (by canonical name).
  void index_names() {
    names.assign(v.names, v.names + v.name_count);
    index_of_name.reset(names.size() + data.size());
    canon.resize(names.size());
    for (uint32_t n = 0; n < names.size(); ++n) canon[n] = index_of_name.insert(names[n], n);
    undefined_of.assign(names.size(), nullptr);
    for (uint32_t u = 0; v.undefined && u < v.undefined_count; ++u) {
      if (v.undefined[u].name.empty()) continue;
      uint32_t c = name_index(v.undefined[u].name);
      if (undefined_of.size() < names.size()) undefined_of.resize(names.size(), nullptr);
      undefined_of[c] = &v.undefined[u];
    }
  }

  void check_function_relocations(uint32_t i, const std::string& name) const {
    const StampReloc* r = v.relocs + v.reloc_start[i];
    for (uint32_t k = 0; k < v.reloc_count[i]; ++k) {
      uint32_t field = relocation_field_size(r[k].type);
      if (field == 0) fail("function '" + name + "': unsupported relocation type " + std::to_string(r[k].type));
      if (r[k].symbol >= v.name_count || v.names[r[k].symbol].empty())
        fail("function '" + name + "': relocation at offset " + std::to_string(r[k].offset) + " names no symbol");
      if (static_cast<uint64_t>(r[k].offset) + field > v.code_size[i])
        fail("function '" + name + "': relocation at offset " + std::to_string(r[k].offset) +
             " runs past the end of its " + std::to_string(v.code_size[i]) + " bytes of code");
    }
  }

  // Check the input: every function and global named and defined once, relocations
  // of known types inside their code. The relocations are checked as they are written
  // (write_function_and_data_relocations): a walk of their own here was a tenth of the
  // writer. Where anything is wrong, the whole check runs again in its own order, so
  // that the first fault found is the one it reports.
  void check_input() {
    try {
      check_functions_and_data(false);
    } catch (const KilnError&) {
      check_functions_and_data(true);
      throw;
    }
  }

  void check_functions_and_data(bool with_relocations) {
    code_sizes.resize(F);
    frame_biased.resize(F);
    defined.assign(names.size() + data.size(), 0);
    for (uint32_t i = 0; i < F; ++i) {
      if (v.function_name[i] >= v.name_count) fail("stamp function " + std::to_string(i) + " names no symbol");
      const std::string& name = v.names[v.function_name[i]];
      if (name.empty()) fail("stamp function " + std::to_string(i) + " has no name");
      uint32_t c = canon[v.function_name[i]];
      if (defined[c]) fail("function '" + name + "' is defined twice");
      defined[c] = 1;
      if (v.code_size[i] > static_cast<uint32_t>(std::numeric_limits<int32_t>::max()))
        fail("function '" + name + "' is too large for an sdata4 FDE range");
      if (with_relocations) check_function_relocations(i, name);
      if (v.personality && v.personality[i] != kNoPersonality && v.personality[i] >= v.name_count)
        fail("function '" + name + "': personality names no symbol");
      code_sizes[i] = v.code_size[i];
      frame_biased[i] = stamp_frame_biased(v.code + v.code_start[i], v.code_size[i]);
    }
    data_name.resize(data.size());
    for (size_t d = 0; d < data.size(); ++d) {
      if (data[d].name.empty()) fail("global variable " + std::to_string(d) + " has no name");
      data_name[d] = name_index(data[d].name);
      if (defined.size() < names.size()) defined.resize(names.size(), 0);
      if (defined[data_name[d]]) fail("'" + data[d].name + "' is defined twice");
      defined[data_name[d]] = 1;
    }
  }

  // A relocation failed its check: the whole check again, in its order, throws.
  [[noreturn, gnu::noinline, gnu::cold]] void fail_checking_relocations() {
    check_functions_and_data(true);
    fail("a relocation failed its check");  // not reached: the check above throws
  }

  // Distinct personalities, in first-use order; each gets a CIE and a DW.ref pointer.
  void find_personalities() {
    personality_of.assign(F, -1);
    for (uint32_t i = 0; i < F; ++i) {
      if (!v.personality || v.personality[i] == kNoPersonality) continue;
      uint32_t c = canon[v.personality[i]];
      auto it = std::find(personalities.begin(), personalities.end(), c);
      personality_of[i] = static_cast<int>(it - personalities.begin());
      if (it == personalities.end()) personalities.push_back(c);
    }
  }

  // A section appended with the vector's growth inlined (flatten): emplace_back, out
  // of line, was a call per section.
  [[gnu::flatten]] static PlannedSection& new_section(std::vector<PlannedSection>& sections) {
    return sections.emplace_back();
  }
  // Inlined: a call per section, its six arguments spilled, was half of planning them.
  [[gnu::always_inline]] size_t add_section(SectionOwner owner, uint32_t type, uint64_t flags, uint64_t align,
                                            uint64_t size, const uint8_t* bytes) {
    PlannedSection& s = new_section(sections);
    s.header.sh_type = type;
    s.header.sh_flags = flags;
    s.header.sh_addralign = align;
    s.header.sh_size = size;
    s.bytes = bytes;
    s.owner = owner;
    return sections.size() - 1;
  }
  size_t add_rela(size_t target, uint64_t count, uint64_t extra_flags) {
    size_t r = add_section(SectionOwner::relocations(), SHT_RELA, SHF_INFO_LINK | extra_flags, 8,
                           count * sizeof(Elf64_Rela), nullptr);
    sections[r].header.sh_info = static_cast<uint32_t>(target);
    sections[r].header.sh_entsize = sizeof(Elf64_Rela);
    return r;
  }

  // Section headers, in file order (names go into .strtab afterwards): each
  // function's code and its relocations, then each global's.
  void plan_code_and_data() {
    code_index.resize(F);
    rela_index.assign(F, 0);
    for (uint32_t i = 0; i < F; ++i) {
      code_index[i] = add_section(SectionOwner::function(i), SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR,
                                  kStampFunctionAlign, v.code_size[i], v.code + v.code_start[i]);
      if (v.reloc_count[i]) rela_index[i] = add_rela(code_index[i], v.reloc_count[i], 0);
    }
    data_index.resize(data.size());
    data_rela_index.assign(data.size(), 0);
    for (size_t d = 0; d < data.size(); ++d) {
      const StampData& g = data[d];
      data_index[d] = add_section(SectionOwner::data(d), g.zero ? SHT_NOBITS : SHT_PROGBITS,
                                  SHF_ALLOC | (g.writable ? SHF_WRITE : 0) | (g.tls ? SHF_TLS : 0) |
                                      (g.retain ? SHF_GNU_RETAIN : 0),
                                  g.align ? g.align : 1, g.zero ? g.size : g.bytes.size(), g.bytes.data());
      if (!g.relocations.empty()) data_rela_index[d] = add_rela(data_index[d], g.relocations.size(), 0);
    }
  }

  // Every LSDA in one .gcc_except_table, each 4-byte aligned.
  void plan_lsda_table() {
    lsda_offset.assign(F, 0);
    if (personalities.empty()) return;
    for (uint32_t i = 0; i < F; ++i) {
      if (personality_of[i] < 0) continue;
      pad_to(lsda_bytes, 4, '\0');
      lsda_offset[i] = static_cast<uint32_t>(lsda_bytes.size());
      lsda_bytes.append(reinterpret_cast<const char*>(v.lsda + v.lsda_start[i]), v.lsda_size[i]);
    }
    lsda_index = add_section(SectionOwner::of(SectionOwner::Kind::lsda_table), SHT_PROGBITS, SHF_ALLOC, 4,
                             lsda_bytes.size(), reinterpret_cast<const uint8_t*>(lsda_bytes.data()));
  }

  // DW.ref.NAME: a hidden pointer to each personality, in its own COMDAT group so that
  // every object that needs it can carry it (the group comes before its members).
  void plan_dwrefs() {
    const size_t P = personalities.size();
    dwref_group.resize(P), dwref_data.resize(P), dwref_rela.resize(P);
    group_words.resize(3 * P);  // sized once: the group sections point into it
    for (size_t p = 0; p < P; ++p) {
      dwref_group[p] = add_section(SectionOwner::dwref_group(p), SHT_GROUP, 0, 4, 12,
                                   reinterpret_cast<const uint8_t*>(&group_words[3 * p]));
      sections[dwref_group[p]].header.sh_entsize = 4;
      dwref_data[p] =
          add_section(SectionOwner::dwref(p), SHT_PROGBITS, SHF_ALLOC | SHF_WRITE | SHF_GROUP, 8, 8, kZeros);
      dwref_rela[p] = add_rela(dwref_data[p], 1, SHF_GROUP);
      group_words[3 * p] = GRP_COMDAT;
      group_words[3 * p + 1] = static_cast<uint32_t>(dwref_data[p]);
      group_words[3 * p + 2] = static_cast<uint32_t>(dwref_rela[p]);
    }
  }

  // .eh_frame and its relocations, .note.GNU-stack, then the tables (filled in last).
  void plan_eh_frame_and_tables() {
    build_eh_frame(code_sizes, frame_biased, personality_of, personalities.size(), eh_fix, eh_frame);
    eh_frame_index = add_section(SectionOwner::of(SectionOwner::Kind::eh_frame), kShtX8664Unwind, SHF_ALLOC, 8,
                                 eh_frame.size(), reinterpret_cast<const uint8_t*>(eh_frame.data()));
    uint64_t eh_relocs = personalities.size() + F;
    for (uint32_t i = 0; i < F; ++i) eh_relocs += personality_of[i] >= 0;
    if (F) eh_rela_index = add_rela(eh_frame_index, eh_relocs, 0);
    note_index = add_section(SectionOwner::of(SectionOwner::Kind::note), SHT_PROGBITS, 0, 1, 0, nullptr);
    plan_debug_sections();
    symtab_index = add_section(SectionOwner::of(SectionOwner::Kind::symtab), SHT_SYMTAB, 0, 8, 0, nullptr);
    // Section indexes from SHN_LORESERVE up do not fit st_shndx: such objects need a
    // .symtab_shndx section (and extended numbering in the ELF header, below).
    need_shndx = std::max(eh_frame_index, debug_index.empty() ? 0 : debug_index.back()) >=
        SHN_LORESERVE;  // the highest index a symbol names
    if (need_shndx)
      shndx_index = add_section(SectionOwner::of(SectionOwner::Kind::symtab_shndx), SHT_SYMTAB_SHNDX, 0, 4, 0, nullptr);
    strtab_index = add_section(SectionOwner::of(SectionOwner::Kind::strtab), SHT_STRTAB, 0, 1, 0, nullptr);
  }

  // The DWARF sections (non-allocated, so a link without -g can drop them), each with
  // its relocations.
  void plan_debug_sections() {
    if (!v.dwarf) return;
    const size_t K = v.dwarf->sections.size();
    debug_index.resize(K), debug_rela_index.assign(K, 0);
    for (size_t k = 0; k < K; ++k) {
      const DwarfSection& d = v.dwarf->sections[k];
      debug_index[k] = add_section(SectionOwner::debug(k), SHT_PROGBITS, d.strings ? SHF_MERGE | SHF_STRINGS : 0, 1,
                                   d.bytes.size(), reinterpret_cast<const uint8_t*>(d.bytes.data()));
      if (d.strings) sections[debug_index[k]].header.sh_entsize = 1;
      if (!d.relocs.empty()) debug_rela_index[k] = add_rela(debug_index[k], d.relocs.size(), 0);
    }
  }

  // .strtab is sized ahead and written through a cursor (strtab_size): appends to the
  // std::string, each with its capacity check and a terminator stored, were half of
  // naming the sections. Its size is kept from one object to the next (what is past
  // the cursor is stale), so that it is not zeroed again for each.
  [[gnu::always_inline]] char* strtab_room(size_t n) {
    if (n > strtab.size() - strtab_size) [[unlikely]]
      strtab.resize(std::max(2 * strtab.size(), strtab_size + n), '\0');
    char* at = strtab.data() + strtab_size;
    strtab_size += n;
    return at;
  }
  [[gnu::always_inline]] void strtab_put(std::string_view s) {
    if (!s.empty()) std::memcpy(strtab_room(s.size()), s.data(), s.size());
  }
  void strtab_end_name() { *strtab_room(1) = '\0'; }

  // Appends section i's name (without ".rela") to .strtab.
  void append_name(size_t i) {
    const SectionOwner& owner = sections[i].owner;
    using Kind = SectionOwner::Kind;
    switch (owner.kind()) {
      case Kind::function: {
        const std::string& sec = v.section[owner.index()];
        if (sec.empty()) strtab_put(".text."sv), strtab_put(v.names[v.function_name[owner.index()]]);
        else strtab_put(sec);
        return;
      }
      case Kind::data:
        strtab_put(data[owner.index()].section);
        return;
      case Kind::dwref:
        strtab_put(".data.DW.ref."sv);
        strtab_put(names[personalities[owner.index()]]);
        return;
      case Kind::dwref_group:
        strtab_put(".group"sv);
        return;
      case Kind::eh_frame:
        strtab_put(".eh_frame"sv);
        return;
      case Kind::lsda_table:
        strtab_put(".gcc_except_table"sv);
        return;
      case Kind::note:
        strtab_put(".note.GNU-stack"sv);
        return;
      case Kind::debug:
        strtab_put(v.dwarf->sections[owner.index()].name);
        return;
      case Kind::symtab:
        strtab_put(".symtab"sv);
        return;
      case Kind::symtab_shndx:
        strtab_put(".symtab_shndx"sv);
        return;
      case Kind::strtab:
        strtab_put(".strtab"sv);
        return;
      case Kind::none:
      case Kind::relocations:
        return;  // named by name_sections itself
    }
  }

  // Section names: ".rela.X" first so that "X" can point into its tail.
  void name_sections() {
    // Every name at most once, each with its terminator (Rust's names are long: a
    // guess per function grew the table many times over): a function's section name
    // and ".rela" before it hold its symbol's name too.
    size_t name_bytes = source_file_name.size() + 64 + 24 * sections.size();
    for (std::string_view n : names) name_bytes += n.size() + 1;
    for (const StampData& d : data) name_bytes += d.name.size() + d.section.size() + 1;
    if (strtab.size() < name_bytes) strtab.resize(name_bytes);
    strtab[0] = '\0';
    strtab_size = 1;
    strtab_bound = name_bytes;
    for (size_t i = 1; i < sections.size(); ++i) {
      Elf64_Shdr& h = sections[i].header;
      if (h.sh_type != SHT_RELA) continue;
      h.sh_name = static_cast<uint32_t>(strtab_size);
      strtab_put(".rela"sv);
      append_name(h.sh_info);
      strtab_end_name();
      sections[h.sh_info].header.sh_name = h.sh_name + 5;
    }
    for (size_t i = 1; i < sections.size(); ++i) {
      Elf64_Shdr& h = sections[i].header;
      if (h.sh_name != 0) continue;
      h.sh_name = static_cast<uint32_t>(strtab_size);
      append_name(i);
      strtab_end_name();
    }
  }

  // Where `name` starts in .strtab: in the tail of the name of `section`, the one the
  // symbol is defined in, where that name ends with it; else appended.
  uint32_t symbol_name(std::string_view name, size_t section) {
    if (name.empty()) return 0;
    if (section != 0 && section < sections.size() && section != kAbsolute) {
      const uint32_t at = sections[section].header.sh_name;
      const std::string_view section_name(strtab.data() + at);
      if (section_name.size() >= name.size() && section_name.substr(section_name.size() - name.size()) == name)
        return at + static_cast<uint32_t>(section_name.size() - name.size());
    }
    const uint32_t at = static_cast<uint32_t>(strtab_size);
    strtab_put(name);
    strtab_end_name();
    return at;
  }

  // Where function i's name starts in .strtab: in its section's name ".text.NAME", with
  // no search (a name with a NUL byte, which symbol_name would append, reads the same
  // up to it), or as symbol_name finds it in a section name of its own.
  uint32_t function_symbol_name(uint32_t i, std::string_view name) {
    if (v.section[i].empty()) return sections[code_index[i]].header.sh_name + 6;  // past ".text."
    return symbol_name(name, code_index[i]);
  }

  // A symbol whose name starts at `name` in .strtab (0: none).
  [[gnu::always_inline]] uint32_t add_symbol(uint32_t name, unsigned char bind, unsigned char type, uint8_t other,
                                             size_t section, uint64_t size) {
    Elf64_Sym s{};
    s.st_name = name;
    s.st_info = static_cast<unsigned char>(ELF64_ST_INFO(bind, type));
    s.st_other = other;
    if (section == kAbsolute) {
      s.st_shndx = SHN_ABS;
      if (need_shndx) shndx_words.push_back(0);
    } else if (section >= SHN_LORESERVE) {
      s.st_shndx = SHN_XINDEX;
      shndx_words.push_back(static_cast<uint32_t>(section));
    } else {
      s.st_shndx = static_cast<uint16_t>(section);
      if (need_shndx) shndx_words.push_back(0);
    }
    s.st_size = size;
    symbols.push_back(s);
    return static_cast<uint32_t>(symbols.size() - 1);
  }

  // The symbol of name `name`; one not defined here becomes an undefined symbol, of
  // type TLS when a thread-local access first names it (as LLVM types it: linkers
  // check that TLS relocations name TLS symbols).
  uint32_t symbol_for(uint32_t name, bool tls = false) {
    uint32_t c = canon[name];
    if (!symbol_of_name[c]) {
      const UndefinedSymbol* u = c < undefined_of.size() ? undefined_of[c] : nullptr;
      // extern_weak: a weak undefined symbol resolves to 0 when nothing defines it.
      unsigned char bind = u && u->binding == SymbolBinding::weak ? STB_WEAK : STB_GLOBAL;
      symbol_of_name[c] = add_symbol(symbol_name(names[c], SHN_UNDEF), bind, tls ? STT_TLS : STT_NOTYPE,
                                     u ? st_other_for(u->visibility) : STV_DEFAULT, SHN_UNDEF, 0);
    }
    return symbol_of_name[c];
  }

  // At most one symbol per distinct name (functions, data, undefined), and the rest.
  size_t symbol_bound() const { return names.size() + F + debug_index.size() + personalities.size() + 5; }

  // Symbols: locals (file, section symbols, local functions and data), then globals,
  // then the DW.ref pointers.
  void add_symbols() {
    symbols.reserve(symbol_bound());
    symbol_of_name.assign(names.size(), 0);
    add_symbol(0, STB_LOCAL, STT_NOTYPE, STV_DEFAULT, SHN_UNDEF, 0);
    add_symbol(symbol_name(source_file_name, kAbsolute), STB_LOCAL, STT_FILE, STV_DEFAULT, kAbsolute, 0);
    section_symbol.resize(F);
    for (uint32_t i = 0; i < F; ++i)
      section_symbol[i] = add_symbol(0, STB_LOCAL, STT_SECTION, STV_DEFAULT, code_index[i], 0);
    add_symbol(0, STB_LOCAL, STT_SECTION, STV_DEFAULT, eh_frame_index, 0);
    lsda_symbol = lsda_index ? add_symbol(0, STB_LOCAL, STT_SECTION, STV_DEFAULT, lsda_index, 0) : 0;
    debug_symbol.resize(debug_index.size());
    for (size_t k = 0; k < debug_index.size(); ++k)
      debug_symbol[k] = add_symbol(0, STB_LOCAL, STT_SECTION, STV_DEFAULT, debug_index[k], 0);
    for (int pass = 0; pass < 2; ++pass) {
      for (uint32_t i = 0; i < F; ++i) {
        if ((v.binding[i] == SymbolBinding::local) != (pass == 0)) continue;
        uint32_t c = canon[v.function_name[i]];
        symbol_of_name[c] = add_symbol(function_symbol_name(i, names[c]), st_bind_for(v.binding[i]), STT_FUNC,
                                       st_other_for(v.visibility[i]), code_index[i], v.code_size[i]);
      }
      for (size_t d = 0; d < data.size(); ++d) {
        const StampData& g = data[d];
        if ((g.binding == SymbolBinding::local) != (pass == 0)) continue;
        symbol_of_name[data_name[d]] =
            add_symbol(symbol_name(g.name, data_index[d]), st_bind_for(g.binding), g.tls ? STT_TLS : STT_OBJECT,
                       st_other_for(g.visibility), data_index[d], g.size);
      }
      if (pass == 0) sections[symtab_index].header.sh_info = static_cast<uint32_t>(symbols.size());
    }
    dwref_symbol.resize(personalities.size());
    std::string dwref_name;
    for (size_t p = 0; p < personalities.size(); ++p) {
      dwref_name = "DW.ref.";
      dwref_name += names[personalities[p]];
      dwref_symbol[p] =
          add_symbol(symbol_name(dwref_name, dwref_data[p]), STB_WEAK, STT_OBJECT, STV_HIDDEN, dwref_data[p], 8);
      sections[dwref_group[p]].header.sh_info = dwref_symbol[p];  // the group's signature
    }
  }

  // Layout of everything before .symtab: contents copied straight into place. The
  // undefined symbols are made afterwards, as the relocations name them.
  void lay_out_contents() {
    size_t pos = sizeof(Elf64_Ehdr);
    for (size_t i = 1; i < symtab_index; ++i) {
      Elf64_Shdr& h = sections[i].header;
      uint64_t align = h.sh_addralign ? h.sh_addralign : 1;
      pos = (pos + align - 1) / align * align;
      h.sh_offset = pos;
      if (h.sh_type != SHT_NOBITS) pos += h.sh_size;
    }
    out.reserve(pos + 8 + symbol_bound() * (sizeof(Elf64_Sym) + 4) + 4 + std::max(strtab_size, strtab_bound) + 8 +
                sections.size() * sizeof(Elf64_Shdr));
    // Appended in offset order, zeros only where nothing is copied (padding, and the
    // sections written in place later): zero-filling the whole object first was a
    // quarter of the writer's work.
    out.resize(sizeof(Elf64_Ehdr), '\0');
    for (size_t i = 1; i < symtab_index; ++i) {
      const PlannedSection& s = sections[i];
      if (s.header.sh_type == SHT_NOBITS || !s.header.sh_size) continue;
      out.resize(s.header.sh_offset, '\0');
      if (s.bytes) out.append(reinterpret_cast<const char*>(s.bytes), s.header.sh_size);
      else out.resize(s.header.sh_offset + s.header.sh_size, '\0');
    }
    out.resize(pos, '\0');
  }

  // Relocations, written in place, with the undefined symbols made as they are first
  // named (functions' relocations, globals', then personalities): made in a pass of
  // their own first, they took a second walk of every relocation.
  void write_function_and_data_relocations() {
    for (uint32_t i = 0; i < F; ++i) {
      size_t at = sections[rela_index[i]].header.sh_offset;
      const StampReloc* r = v.relocs + v.reloc_start[i];
      // In locals: the stores into `out` may alias any member, so the compiler would
      // load each again for every relocation.
      const uint64_t code_size = v.code_size[i];
      const uint32_t count = v.reloc_count[i], name_count = v.name_count;
      const std::string_view* name = names.data();
      for (uint32_t k = 0; k < count; ++k, at += sizeof(Elf64_Rela)) {
        // check_input's checks of a relocation (a failing one reports as it would).
        const StampReloc x = r[k];
        const uint32_t field = relocation_field_size(x.type);
        if (field == 0 || x.symbol >= name_count || name[x.symbol].empty() ||
            static_cast<uint64_t>(x.offset) + field > code_size) [[unlikely]]
          fail_checking_relocations();
        put_rela_at(out, at, x.offset, symbol_for(x.symbol, x.type == kRelocTlsGd), x.type, x.addend);
      }
    }
    for (size_t d = 0; d < data.size(); ++d) {
      if (data[d].relocations.empty()) continue;
      size_t at = sections[data_rela_index[d]].header.sh_offset;
      for (const StampNamedReloc& r : data[d].relocations) {
        if (r.symbol.empty()) fail("global '" + data[d].name + "': relocation names no symbol");
        uint32_t name = name_index(r.symbol);
        if (symbol_of_name.size() < names.size()) symbol_of_name.resize(names.size(), 0);
        put_rela_at(out, at, r.offset, symbol_for(name), r.type, r.addend);
        at += sizeof(Elf64_Rela);
      }
    }
    for (uint32_t p : personalities) symbol_for(p);
  }

  // .eh_frame's relocations in offset order (CIE personality pointers first), and
  // each DW.ref pointer's.
  void write_eh_relocations() {
    if (F) {
      size_t at = sections[eh_rela_index].header.sh_offset;
      for (size_t p = 0; p < personalities.size(); ++p, at += sizeof(Elf64_Rela))
        put_rela_at(out, at, eh_fix.personality_pointer[p], dwref_symbol[p], kRelocPc32, 0);
      for (uint32_t i = 0; i < F; ++i) {
        put_rela_at(out, at, eh_fix.pc_begin[i], section_symbol[i], kRelocPc32, 0);
        at += sizeof(Elf64_Rela);
        if (personality_of[i] >= 0) {
          put_rela_at(out, at, eh_fix.lsda_pointer[i], lsda_symbol, kRelocPc32, lsda_offset[i]);
          at += sizeof(Elf64_Rela);
        }
      }
    }
    for (size_t p = 0; p < personalities.size(); ++p)
      put_rela_at(out, sections[dwref_rela[p]].header.sh_offset, 0, symbol_for(personalities[p]), kReloc64, 0);
  }

  // Each DWARF relocation names a function's section, a debug section's symbol, or a
  // symbol defined here (a global variable's).
  void write_debug_relocations() {
    for (size_t k = 0; k < debug_index.size(); ++k) {
      if (!debug_rela_index[k]) continue;
      size_t at = sections[debug_rela_index[k]].header.sh_offset;
      for (const DwarfReloc& r : v.dwarf->sections[k].relocs) {
        uint32_t symbol = 0;
        if (r.target < kDwarfSymbolTarget) {
          if (r.target < F) symbol = section_symbol[r.target];
        } else if (r.target < kDwarfSectionTarget) {
          // A global variable's address: a symbol this object defines (its data).
          if (const uint32_t name = r.target - kDwarfSymbolTarget; name < v.name_count)
            symbol = symbol_of_name[canon[name]];
        } else if (r.target - kDwarfSectionTarget < debug_symbol.size()) {
          symbol = debug_symbol[r.target - kDwarfSectionTarget];
        }
        if (!symbol) fail("a DWARF relocation names no section or defined symbol");
        put_rela_at(out, at, r.offset, symbol, r.type, r.addend);
        at += sizeof(Elf64_Rela);
      }
    }
  }

  void append_section(size_t i, const void* bytes, size_t size, uint64_t entsize, uint32_t link) {
    Elf64_Shdr& h = sections[i].header;
    pad_to(out, h.sh_addralign ? h.sh_addralign : 1, '\0');
    h.sh_offset = out.size();
    h.sh_size = size;
    h.sh_entsize = entsize;
    h.sh_link = link;
    out.append(static_cast<const char*>(bytes), size);
  }

  // Symbol, string and section name tables, then the section header table.
  void write_tables() {
    append_section(symtab_index, symbols.data(), symbols.size() * sizeof(Elf64_Sym), sizeof(Elf64_Sym),
                   static_cast<uint32_t>(strtab_index));
    if (need_shndx)
      append_section(shndx_index, shndx_words.data(), shndx_words.size() * 4, 4, static_cast<uint32_t>(symtab_index));
    append_section(strtab_index, strtab.data(), strtab_size, 0, 0);
    for (size_t i = 1; i < sections.size(); ++i)
      if (sections[i].header.sh_link == 0 &&
          (sections[i].header.sh_type == SHT_RELA || sections[i].header.sh_type == SHT_GROUP))
        sections[i].header.sh_link = static_cast<uint32_t>(symtab_index);
    pad_to(out, 8, '\0');
  }

  // The section header table, and the ELF header at the start of the file.
  void write_header() {
    uint64_t shoff = out.size();
    // Extended numbering: the real counts live in the null section's header.
    if (sections.size() >= SHN_LORESERVE) sections[0].header.sh_size = sections.size();
    if (strtab_index >= SHN_LORESERVE) sections[0].header.sh_link = static_cast<uint32_t>(strtab_index);
    out.reserve(out.size() + sections.size() * sizeof(Elf64_Shdr));
    for (const PlannedSection& s : sections) put_struct(out, s.header);

    Elf64_Ehdr eh{};
    std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    // GNU ld honours SHF_GNU_RETAIN only in an object of the GNU OS ABI, which LLVM's
    // writer therefore gives every object with such a section.
    const bool gnu = std::any_of(sections.begin(), sections.end(),
                                 [](const PlannedSection& s) { return s.header.sh_flags & SHF_GNU_RETAIN; });
    eh.e_ident[EI_OSABI] = gnu ? ELFOSABI_GNU : ELFOSABI_NONE;
    eh.e_type = ET_REL;
    eh.e_machine = EM_X86_64;
    eh.e_version = EV_CURRENT;
    eh.e_shoff = shoff;
    eh.e_ehsize = sizeof(Elf64_Ehdr);
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = sections.size() >= SHN_LORESERVE ? 0 : static_cast<uint16_t>(sections.size());
    eh.e_shstrndx =
        strtab_index >= SHN_LORESERVE ? static_cast<uint16_t>(SHN_XINDEX) : static_cast<uint16_t>(strtab_index);
    std::memcpy(&out[0], &eh, sizeof eh);
  }
};

}  // namespace

std::string write_stamp_object(const StampObjectView& v, const std::string& source_file_name,
                               const std::vector<StampData>& data) {
  thread_local WriterTables spare;
  ObjectWriter writer(v, source_file_name, data, std::move(spare));
  std::string object = writer.write();
  if (writer.worth_keeping()) spare = std::move(static_cast<WriterTables&>(writer));
  return object;
}

std::string write_stamp_object(const std::vector<StampFunction>& functions, const std::string& source_file_name,
                               const std::vector<StampData>& data, const std::vector<UndefinedSymbol>& undefined) {
  // Flatten the records into the view's arrays: names by index, code back to back.
  std::vector<std::string> names;
  std::unordered_map<std::string, uint32_t> index;
  auto name_index = [&](const std::string& name) {
    auto [it, inserted] = index.emplace(name, static_cast<uint32_t>(names.size()));
    if (inserted) names.push_back(name);
    return it->second;
  };
  const size_t F = functions.size();
  std::vector<uint32_t> function_name(F), code_start(F), code_size(F), reloc_start(F), reloc_count(F), personality(F),
      lsda_start(F), lsda_size(F);
  std::vector<SymbolBinding> binding(F);
  std::vector<SymbolVisibility> visibility(F);
  std::vector<std::string> section(F);
  std::vector<uint8_t> code, lsda;
  std::vector<StampReloc> relocs;
  for (size_t i = 0; i < F; ++i) {
    const StampFunction& f = functions[i];
    // A nameless function keeps its own empty name (the writer refuses it by index).
    function_name[i] =
        f.name.empty() ? static_cast<uint32_t>((names.push_back(""), names.size() - 1)) : name_index(f.name);
    binding[i] = f.binding;
    visibility[i] = f.visibility;
    section[i] = f.section;
    code_start[i] = static_cast<uint32_t>(code.size());
    code_size[i] = static_cast<uint32_t>(std::min<size_t>(f.code.size(), std::numeric_limits<uint32_t>::max()));
    if (f.code.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
      throw KilnError(kExitInternal, source_file_name,
                      "function '" + f.name + "' is too large for an sdata4 FDE range");
    code.insert(code.end(), f.code.begin(), f.code.end());
    reloc_start[i] = static_cast<uint32_t>(relocs.size());
    reloc_count[i] = static_cast<uint32_t>(f.relocations.size());
    for (const StampNamedReloc& r : f.relocations) {
      uint32_t symbol =
          r.symbol.empty() ? static_cast<uint32_t>((names.push_back(""), names.size() - 1)) : name_index(r.symbol);
      relocs.push_back(StampReloc{r.offset, r.type, symbol, 0, r.addend});
    }
    personality[i] = f.personality.empty() ? kNoPersonality : name_index(f.personality);
    lsda_start[i] = static_cast<uint32_t>(lsda.size());
    lsda_size[i] = static_cast<uint32_t>(f.lsda.size());
    lsda.insert(lsda.end(), f.lsda.begin(), f.lsda.end());
  }
  StampObjectView v;
  v.names = names.data();
  v.name_count = static_cast<uint32_t>(names.size());
  v.function_count = static_cast<uint32_t>(F);
  v.function_name = function_name.data();
  v.binding = binding.data();
  v.visibility = visibility.data();
  v.section = section.data();
  v.code = code.data();
  v.code_start = code_start.data();
  v.code_size = code_size.data();
  v.relocs = relocs.data();
  v.reloc_start = reloc_start.data();
  v.reloc_count = reloc_count.data();
  v.personality = personality.data();
  v.lsda = lsda.data();
  v.lsda_start = lsda_start.data();
  v.lsda_size = lsda_size.data();
  v.undefined = undefined.data();
  v.undefined_count = static_cast<uint32_t>(undefined.size());
  return write_stamp_object(v, source_file_name, data);
}

}  // namespace kiln
