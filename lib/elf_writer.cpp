// The stamp back end's object writer: a relocatable x86-64 ELF64 object written by
// hand (see stamp_object.h for what goes in it). Everything is laid out in input order
// with no hash-ordered containers, so the same input always gives the same bytes.
#include <elf.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <unordered_map>
#include <string>
#include <vector>

#include "error.h"
#include "stamp_object.h"

namespace kiln {

// Exposed (without a header) so that the unit tests can check the bytes directly.
std::string build_stamp_eh_frame(const std::vector<uint32_t>& code_sizes, std::vector<uint32_t>& pc_begin_offsets);

namespace {

// DWARF call frame constants (not in <elf.h>).
constexpr uint8_t kCfaNop = 0x00;
constexpr uint8_t kCfaAdvanceLoc = 0x40;     // low 6 bits: delta
constexpr uint8_t kCfaOffset = 0x80;         // low 6 bits: register; ULEB factored offset
constexpr uint8_t kCfaDefCfa = 0x0c;         // ULEB register, ULEB offset
constexpr uint8_t kCfaDefCfaRegister = 0x0d; // ULEB register
constexpr uint8_t kCfaDefCfaOffset = 0x0e;   // ULEB offset
constexpr uint8_t kEhPePcrelSdata4 = 0x1b;   // DW_EH_PE_pcrel | DW_EH_PE_sdata4
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

// A string table: starts with the empty string. Names are not deduplicated: symbol
// names are unique already, and looking each one up cost more than the bytes saved.
class StringTable {
 public:
  StringTable() { bytes_.push_back('\0'); }
  uint32_t add(const std::string& s) {
    if (s.empty()) return 0;
    auto offset = static_cast<uint32_t>(bytes_.size());
    bytes_ += s;
    bytes_.push_back('\0');
    return offset;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

// How many bytes a relocation of this type patches; 0 for types this writer refuses.
uint32_t relocation_field_size(uint32_t type) {
  switch (type) {
    case R_X86_64_64:
    case R_X86_64_PC64:
      return 8;
    case R_X86_64_PC32:
    case R_X86_64_PLT32:
    case R_X86_64_32:
    case R_X86_64_32S:
    case R_X86_64_GOTPCREL:
    case R_X86_64_GOTPCRELX:
    case R_X86_64_REX_GOTPCRELX:
      return 4;
    default:
      return 0;
  }
}

uint8_t st_other_for(SymbolVisibility v) {
  switch (v) {
    case SymbolVisibility::hidden: return STV_HIDDEN;
    case SymbolVisibility::protected_: return STV_PROTECTED;
    case SymbolVisibility::default_: break;
  }
  return STV_DEFAULT;
}

unsigned char st_bind_for(SymbolBinding b) {
  switch (b) {
    case SymbolBinding::local: return STB_LOCAL;
    case SymbolBinding::weak: return STB_WEAK;
    case SymbolBinding::global: break;
  }
  return STB_GLOBAL;
}

struct Section {
  std::string name;
  Elf64_Shdr header{};
  std::string data;  // empty for sections whose contents are built later
};

// Appends the .rela section of section `target` and returns its index.
size_t add_rela_for(std::vector<Section>& sections, size_t target, uint64_t extra_flags) {
  Section rela;
  rela.name = ".rela" + sections[target].name;
  rela.header.sh_type = SHT_RELA;
  rela.header.sh_flags = SHF_INFO_LINK | extra_flags;
  rela.header.sh_info = static_cast<uint32_t>(target);
  rela.header.sh_addralign = 8;
  rela.header.sh_entsize = sizeof(Elf64_Rela);
  sections.push_back(std::move(rela));
  return sections.size() - 1;
}

}  // namespace

namespace {

// Where build_eh_frame left fields that need relocations.
struct EhFrameFixups {
  std::vector<uint32_t> pc_begin;            // per function
  std::vector<uint32_t> lsda_pointer;        // per function; meaningful with a personality
  std::vector<uint32_t> personality_pointer; // per distinct personality (CIE field)
};

void put_cie_body(std::string& out, bool with_personality, uint32_t* personality_field) {
  put32(out, 0);              // CIE id
  put8(out, 1);               // version
  out += with_personality ? "zPLR" : "zR";
  put8(out, 0);
  put8(out, 1);               // code alignment factor (ULEB)
  put8(out, 0x78);            // data alignment factor -8 (SLEB)
  put8(out, kDwarfRip);       // return address register (a byte in version 1)
  if (with_personality) {
    put8(out, 7);             // augmentation data length
    put8(out, 0x9b);          // personality: indirect | pcrel | sdata4 (through DW.ref.NAME)
    *personality_field = static_cast<uint32_t>(out.size());
    put32(out, 0);
    put8(out, kEhPePcrelSdata4);  // LSDA encoding
    put8(out, kEhPePcrelSdata4);  // FDE pointer encoding
  } else {
    put8(out, 1);             // augmentation data length
    put8(out, kEhPePcrelSdata4);  // FDE pointer encoding
  }
  put8(out, kCfaDefCfa);      // CFA = rsp + 8
  put8(out, kDwarfRsp);
  put8(out, 8);
  put8(out, kCfaOffset | kDwarfRip);  // rip at CFA - 8
  put8(out, 1);
}

// One CIE without personality, one per distinct personality, and an FDE per function.
std::string build_eh_frame(const std::vector<uint32_t>& code_sizes, const std::vector<int>& personality_of,
                           size_t personality_count, EhFrameFixups& fix) {
  std::string out;
  fix.pc_begin.clear();
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
  for (size_t i = 0; i < code_sizes.size(); ++i) {
    int p = personality_of.empty() ? -1 : personality_of[i];
    size_t start = out.size();
    put32(out, 0);                                      // length, patched below
    uint32_t cie = cie_offset[static_cast<size_t>(p + 1)];
    put32(out, static_cast<uint32_t>(out.size()) - cie);  // CIE pointer: back to its CIE
    fix.pc_begin.push_back(static_cast<uint32_t>(out.size()));
    put32(out, 0);                                      // pc_begin (relocated)
    put32(out, code_sizes[i]);                          // pc_range
    if (p >= 0) {
      put8(out, 4);                                     // augmentation data: the LSDA pointer
      fix.lsda_pointer[i] = static_cast<uint32_t>(out.size());
      put32(out, 0);
    } else {
      put8(out, 0);                                     // augmentation data length
    }
    put8(out, kCfaAdvanceLoc | 1);                      // after push rbp
    put8(out, kCfaDefCfaOffset);                        //   CFA = rsp + 16
    put8(out, 16);
    put8(out, kCfaOffset | kDwarfRbp);                  //   rbp at CFA - 16
    put8(out, 2);
    put8(out, kCfaAdvanceLoc | 3);                      // after mov rbp, rsp
    put8(out, kCfaDefCfaRegister);                      //   CFA = rbp + 16
    put8(out, kDwarfRbp);
    pad_to(out, 8, static_cast<char>(kCfaNop));
    set32(out, start, static_cast<uint32_t>(out.size() - start - 4));
  }
  return out;
}

}  // namespace

std::string build_stamp_eh_frame(const std::vector<uint32_t>& code_sizes, std::vector<uint32_t>& pc_begin_offsets) {
  EhFrameFixups fix;
  std::string out = build_eh_frame(code_sizes, {}, 0, fix);
  pc_begin_offsets = fix.pc_begin;
  return out;
}

std::string write_stamp_object(const std::vector<StampFunction>& functions, const std::string& source_file_name,
                               const std::vector<StampData>& data) {
  auto fail = [&](const std::string& reason) { throw KilnError(kExitInternal, source_file_name, reason); };

  // Check the input and index the defined names.
  std::unordered_map<std::string, size_t> defined;  // name -> function index
  std::vector<uint32_t> code_sizes;
  for (size_t i = 0; i < functions.size(); ++i) {
    const StampFunction& f = functions[i];
    if (f.name.empty()) fail("stamp function " + std::to_string(i) + " has no name");
    if (!defined.emplace(f.name, i).second) fail("function '" + f.name + "' is defined twice");
    if (f.code.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
      fail("function '" + f.name + "' is too large for an sdata4 FDE range");
    for (const StampRelocation& r : f.relocations) {
      uint32_t field = relocation_field_size(r.type);
      if (field == 0)
        fail("function '" + f.name + "': unsupported relocation type " + std::to_string(r.type));
      if (r.symbol.empty())
        fail("function '" + f.name + "': relocation at offset " + std::to_string(r.offset) + " names no symbol");
      if (static_cast<uint64_t>(r.offset) + field > f.code.size())
        fail("function '" + f.name + "': relocation at offset " + std::to_string(r.offset) + " runs past the end of its " +
             std::to_string(f.code.size()) + " bytes of code");
    }
    code_sizes.push_back(static_cast<uint32_t>(f.code.size()));
  }

  // Distinct personalities, in first-use order; each gets a CIE and a DW.ref pointer.
  std::vector<std::string> personalities;
  std::vector<int> personality_of(functions.size(), -1);
  for (size_t i = 0; i < functions.size(); ++i) {
    if (functions[i].personality.empty()) continue;
    auto it = std::find(personalities.begin(), personalities.end(), functions[i].personality);
    personality_of[i] = static_cast<int>(it - personalities.begin());
    if (it == personalities.end()) personalities.push_back(functions[i].personality);
  }

  // Sections, in file order.
  std::vector<Section> sections(1);  // the null section
  std::vector<size_t> code_index(functions.size()), rela_index(functions.size(), 0);
  for (size_t i = 0; i < functions.size(); ++i) {
    const StampFunction& f = functions[i];
    Section code;
    code.name = f.section.empty() ? ".text." + f.name : f.section;
    code.header.sh_type = SHT_PROGBITS;
    code.header.sh_flags = SHF_ALLOC | SHF_EXECINSTR;
    code.header.sh_addralign = 16;
    code.data.assign(f.code.begin(), f.code.end());
    code_index[i] = sections.size();
    sections.push_back(std::move(code));
    if (!f.relocations.empty()) rela_index[i] = add_rela_for(sections, code_index[i], 0);
  }
  // Global variables: a section each (and its .rela when it holds addresses).
  std::vector<size_t> data_index(data.size()), data_rela_index(data.size(), 0);
  for (size_t d = 0; d < data.size(); ++d) {
    const StampData& v = data[d];
    if (v.name.empty()) fail("global variable " + std::to_string(d) + " has no name");
    if (defined.count(v.name)) fail("'" + v.name + "' is defined twice");
    Section sec;
    sec.name = v.section;
    sec.header.sh_type = v.zero ? SHT_NOBITS : SHT_PROGBITS;
    sec.header.sh_flags = SHF_ALLOC | (v.writable ? SHF_WRITE : 0);
    sec.header.sh_addralign = v.align ? v.align : 1;
    if (v.zero) sec.header.sh_size = v.size;
    else sec.data.assign(v.bytes.begin(), v.bytes.end());
    data_index[d] = sections.size();
    sections.push_back(std::move(sec));
    if (!v.relocations.empty()) data_rela_index[d] = add_rela_for(sections, data_index[d], 0);
  }

  // Exception tables: every LSDA in one .gcc_except_table, 4-byte aligned.
  std::vector<uint32_t> lsda_offset(functions.size(), 0);
  size_t except_index = 0;
  if (!personalities.empty()) {
    Section except;
    except.name = ".gcc_except_table";
    except.header.sh_type = SHT_PROGBITS;
    except.header.sh_flags = SHF_ALLOC;
    except.header.sh_addralign = 4;
    for (size_t i = 0; i < functions.size(); ++i) {
      if (personality_of[i] < 0) continue;
      pad_to(except.data, 4, '\0');
      lsda_offset[i] = static_cast<uint32_t>(except.data.size());
      except.data.append(functions[i].lsda.begin(), functions[i].lsda.end());
    }
    except_index = sections.size();
    sections.push_back(std::move(except));
  }
  // DW.ref.NAME: a hidden pointer to each personality, in its own COMDAT group so that
  // every object that needs it can carry it (the group comes before its members).
  std::vector<size_t> dwref_group(personalities.size()), dwref_data(personalities.size()), dwref_rela(personalities.size());
  for (size_t p = 0; p < personalities.size(); ++p) {
    Section group;
    group.name = ".group";
    group.header.sh_type = SHT_GROUP;
    group.header.sh_addralign = 4;
    group.header.sh_entsize = 4;
    dwref_group[p] = sections.size();
    sections.push_back(std::move(group));
    Section data;
    data.name = ".data.DW.ref." + personalities[p];
    data.header.sh_type = SHT_PROGBITS;
    data.header.sh_flags = SHF_ALLOC | SHF_WRITE | SHF_GROUP;
    data.header.sh_addralign = 8;
    data.data.assign(8, '\0');
    dwref_data[p] = sections.size();
    sections.push_back(std::move(data));
    dwref_rela[p] = add_rela_for(sections, dwref_data[p], SHF_GROUP);
    put32(sections[dwref_group[p]].data, GRP_COMDAT);
    put32(sections[dwref_group[p]].data, static_cast<uint32_t>(dwref_data[p]));
    put32(sections[dwref_group[p]].data, static_cast<uint32_t>(dwref_rela[p]));
  }
  EhFrameFixups eh_fix;
  size_t eh_frame_index = sections.size();
  {
    Section eh;
    eh.name = ".eh_frame";
    eh.header.sh_type = kShtX8664Unwind;
    eh.header.sh_flags = SHF_ALLOC;
    eh.header.sh_addralign = 8;
    eh.data = build_eh_frame(code_sizes, personality_of, personalities.size(), eh_fix);
    sections.push_back(std::move(eh));
  }
  size_t eh_rela_index = 0;
  if (!functions.empty()) {
    eh_rela_index = add_rela_for(sections, eh_frame_index, 0);
  }
  {
    Section note;
    note.name = ".note.GNU-stack";
    note.header.sh_type = SHT_PROGBITS;
    note.header.sh_addralign = 1;
    sections.push_back(std::move(note));
  }
  size_t symtab_index = sections.size();
  sections.emplace_back();
  // Section indexes from SHN_LORESERVE up do not fit st_shndx: such objects need a
  // .symtab_shndx section (and extended numbering in the ELF header, below).
  bool need_shndx = eh_frame_index >= SHN_LORESERVE;  // the highest index a symbol names
  size_t shndx_index = 0;
  if (need_shndx) {
    shndx_index = sections.size();
    sections.emplace_back();
  }
  size_t strtab_index = sections.size();
  sections.emplace_back();
  size_t shstrtab_index = sections.size();
  sections.emplace_back();

  // Symbols: locals (file, section symbols, local functions), then globals.
  StringTable strtab;
  std::vector<Elf64_Sym> symbols;
  std::vector<uint32_t> shndx_words;  // parallel to symbols when need_shndx
  constexpr size_t kAbsolute = std::numeric_limits<size_t>::max();
  auto add_symbol = [&](const std::string& name, unsigned char bind, unsigned char type, uint8_t other,
                        size_t section, uint64_t size) {
    Elf64_Sym s{};
    s.st_name = strtab.add(name);
    s.st_info = static_cast<unsigned char>(ELF64_ST_INFO(bind, type));
    s.st_other = other;
    if (section == kAbsolute) {
      s.st_shndx = SHN_ABS;
      shndx_words.push_back(0);
    } else if (section >= SHN_LORESERVE) {
      s.st_shndx = SHN_XINDEX;
      shndx_words.push_back(static_cast<uint32_t>(section));
    } else {
      s.st_shndx = static_cast<uint16_t>(section);
      shndx_words.push_back(0);
    }
    s.st_value = 0;
    s.st_size = size;
    symbols.push_back(s);
    return static_cast<uint32_t>(symbols.size() - 1);
  };
  add_symbol("", STB_LOCAL, STT_NOTYPE, STV_DEFAULT, SHN_UNDEF, 0);
  add_symbol(source_file_name, STB_LOCAL, STT_FILE, STV_DEFAULT, kAbsolute, 0);
  std::vector<uint32_t> section_symbol(functions.size());
  for (size_t i = 0; i < functions.size(); ++i)
    section_symbol[i] = add_symbol("", STB_LOCAL, STT_SECTION, STV_DEFAULT, code_index[i], 0);
  add_symbol("", STB_LOCAL, STT_SECTION, STV_DEFAULT, eh_frame_index, 0);
  uint32_t except_symbol = except_index ? add_symbol("", STB_LOCAL, STT_SECTION, STV_DEFAULT, except_index, 0) : 0;
  std::vector<uint32_t> function_symbol(functions.size()), data_symbol(data.size());
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < functions.size(); ++i) {
      const StampFunction& f = functions[i];
      if ((f.binding == SymbolBinding::local) != (pass == 0)) continue;
      function_symbol[i] = add_symbol(f.name, st_bind_for(f.binding), STT_FUNC, st_other_for(f.visibility),
                                      code_index[i], f.code.size());
    }
    for (size_t d = 0; d < data.size(); ++d) {
      const StampData& v = data[d];
      if ((v.binding == SymbolBinding::local) != (pass == 0)) continue;
      data_symbol[d] = add_symbol(v.name, st_bind_for(v.binding), STT_OBJECT, st_other_for(v.visibility), data_index[d], v.size);
    }
    if (pass == 0) sections[symtab_index].header.sh_info = static_cast<uint32_t>(symbols.size());
  }
  std::vector<uint32_t> dwref_symbol(personalities.size());
  for (size_t p = 0; p < personalities.size(); ++p) {
    dwref_symbol[p] = add_symbol("DW.ref." + personalities[p], STB_WEAK, STT_OBJECT, STV_HIDDEN, dwref_data[p], 8);
    sections[dwref_group[p]].header.sh_info = dwref_symbol[p];  // the group's signature
  }
  std::unordered_map<std::string, uint32_t> undefined;
  std::unordered_map<std::string, size_t> defined_data;
  for (size_t d = 0; d < data.size(); ++d) defined_data.emplace(data[d].name, d);
  auto symbol_for = [&](const std::string& name) {
    auto d = defined.find(name);
    if (d != defined.end()) return function_symbol[d->second];
    auto dd = defined_data.find(name);
    if (dd != defined_data.end()) return data_symbol[dd->second];
    auto u = undefined.find(name);
    if (u != undefined.end()) return u->second;
    uint32_t index = add_symbol(name, STB_GLOBAL, STT_NOTYPE, STV_DEFAULT, SHN_UNDEF, 0);
    undefined.emplace(name, index);
    return index;
  };

  // Relocations.
  auto put_rela = [](std::string& out, uint64_t offset, uint32_t symbol, uint32_t type, int64_t addend) {
    Elf64_Rela r{};
    r.r_offset = offset;
    r.r_info = ELF64_R_INFO(static_cast<uint64_t>(symbol), static_cast<uint64_t>(type));
    r.r_addend = addend;
    put_struct(out, r);
  };
  for (size_t i = 0; i < functions.size(); ++i) {
    for (const StampRelocation& r : functions[i].relocations)
      put_rela(sections[rela_index[i]].data, r.offset, symbol_for(r.symbol), r.type, r.addend);
  }
  for (size_t d = 0; d < data.size(); ++d)
    for (const StampRelocation& r : data[d].relocations)
      put_rela(sections[data_rela_index[d]].data, r.offset, symbol_for(r.symbol), r.type, r.addend);
  // .eh_frame's relocations in offset order: CIE personality pointers come first.
  for (size_t p = 0; p < personalities.size(); ++p)
    put_rela(sections[eh_rela_index].data, eh_fix.personality_pointer[p], dwref_symbol[p], R_X86_64_PC32, 0);
  for (size_t i = 0; i < functions.size(); ++i) {
    put_rela(sections[eh_rela_index].data, eh_fix.pc_begin[i], section_symbol[i], R_X86_64_PC32, 0);
    if (personality_of[i] >= 0)
      put_rela(sections[eh_rela_index].data, eh_fix.lsda_pointer[i], except_symbol, R_X86_64_PC32, lsda_offset[i]);
  }
  for (size_t p = 0; p < personalities.size(); ++p)
    put_rela(sections[dwref_rela[p]].data, 0, symbol_for(personalities[p]), R_X86_64_64, 0);

  // Symbol and string tables.
  Section& symtab = sections[symtab_index];
  symtab.name = ".symtab";
  symtab.header.sh_type = SHT_SYMTAB;
  symtab.header.sh_link = static_cast<uint32_t>(strtab_index);
  symtab.header.sh_addralign = 8;
  symtab.header.sh_entsize = sizeof(Elf64_Sym);
  for (const Elf64_Sym& s : symbols) put_struct(symtab.data, s);
  if (need_shndx) {
    Section& shndx = sections[shndx_index];
    shndx.name = ".symtab_shndx";
    shndx.header.sh_type = SHT_SYMTAB_SHNDX;
    shndx.header.sh_link = static_cast<uint32_t>(symtab_index);
    shndx.header.sh_addralign = 4;
    shndx.header.sh_entsize = sizeof(uint32_t);
    for (uint32_t w : shndx_words) put32(shndx.data, w);
  }
  Section& strtab_section = sections[strtab_index];
  strtab_section.name = ".strtab";
  strtab_section.header.sh_type = SHT_STRTAB;
  strtab_section.header.sh_addralign = 1;
  strtab_section.data = strtab.bytes();
  for (size_t i = 1; i < sections.size(); ++i)
    if (sections[i].header.sh_link == 0 && (sections[i].header.sh_type == SHT_RELA || sections[i].header.sh_type == SHT_GROUP))
      sections[i].header.sh_link = static_cast<uint32_t>(symtab_index);

  StringTable shstrtab;
  sections[shstrtab_index].name = ".shstrtab";
  sections[shstrtab_index].header.sh_type = SHT_STRTAB;
  sections[shstrtab_index].header.sh_addralign = 1;
  // ".rela.X" is added first so that "X" can point into its tail.
  for (size_t i = 1; i < sections.size(); ++i) {
    if (i == shstrtab_index) continue;
    Section& s = sections[i];
    if (s.header.sh_type == SHT_RELA) {
      s.header.sh_name = shstrtab.add(s.name);
      size_t target = s.header.sh_info;
      if (sections[target].name == s.name.substr(5)) sections[target].header.sh_name = s.header.sh_name + 5;
    }
  }
  for (size_t i = 1; i < sections.size(); ++i) {
    Section& s = sections[i];
    if (s.header.sh_name == 0) s.header.sh_name = i == shstrtab_index ? 0 : shstrtab.add(s.name);
  }
  sections[shstrtab_index].header.sh_name = shstrtab.add(".shstrtab");
  sections[shstrtab_index].data = shstrtab.bytes();

  // Layout: ELF header, section contents, section header table.
  std::string out(sizeof(Elf64_Ehdr), '\0');
  for (size_t i = 1; i < sections.size(); ++i) {
    Section& s = sections[i];
    pad_to(out, s.header.sh_addralign ? s.header.sh_addralign : 1, '\0');
    s.header.sh_offset = out.size();
    if (s.header.sh_type != SHT_NOBITS) s.header.sh_size = s.data.size();
    out += s.data;
  }
  pad_to(out, 8, '\0');
  uint64_t shoff = out.size();
  // Extended numbering: the real counts live in the null section's header.
  if (sections.size() >= SHN_LORESERVE) sections[0].header.sh_size = sections.size();
  if (shstrtab_index >= SHN_LORESERVE) sections[0].header.sh_link = static_cast<uint32_t>(shstrtab_index);
  for (const Section& s : sections) put_struct(out, s.header);

  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_ident[EI_OSABI] = ELFOSABI_NONE;
  eh.e_type = ET_REL;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_shoff = shoff;
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = sections.size() >= SHN_LORESERVE ? 0 : static_cast<uint16_t>(sections.size());
  eh.e_shstrndx = shstrtab_index >= SHN_LORESERVE ? static_cast<uint16_t>(SHN_XINDEX)
                                                  : static_cast<uint16_t>(shstrtab_index);
  std::memcpy(&out[0], &eh, sizeof eh);
  return out;
}

}  // namespace kiln
