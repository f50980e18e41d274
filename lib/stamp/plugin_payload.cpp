#include "plugin_payload.h"

#include <elf.h>

#include <cstring>

#include "error.h"

namespace kiln {

namespace {

template <typename T>
T read_at(std::string_view bytes, uint64_t offset) {
  T v;
  std::memcpy(&v, bytes.data() + offset, sizeof v);
  return v;
}

}  // namespace

std::optional<std::string_view> kiln_object_payload(std::string_view object, const std::string& label) {
  auto bad = [&](const std::string& why) { return KilnError(kExitBadInput, label, why); };
  if (object.size() < sizeof(Elf64_Ehdr) || std::memcmp(object.data(), ELFMAG, SELFMAG) != 0 ||
      object[EI_CLASS] != ELFCLASS64 || object[EI_DATA] != ELFDATA2LSB)
    throw bad("not a 64-bit little-endian ELF object");
  const auto eh = read_at<Elf64_Ehdr>(object, 0);
  const uint64_t table = eh.e_shoff;
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || table > object.size() || object.size() - table < sizeof(Elf64_Shdr))
    throw bad("its section table lies outside the file");
  // From 0xff00 sections on (an LLVM unit with a section per function can get there),
  // e_shnum is 0 and e_shstrndx SHN_XINDEX: section 0's size and link hold them.
  const auto first = read_at<Elf64_Shdr>(object, table);
  const uint64_t count = eh.e_shnum ? eh.e_shnum : first.sh_size;
  const uint64_t names_index = eh.e_shstrndx == SHN_XINDEX ? first.sh_link : eh.e_shstrndx;
  if (count > (object.size() - table) / sizeof(Elf64_Shdr) || names_index >= count)
    throw bad("its section table lies outside the file");
  const auto names = read_at<Elf64_Shdr>(object, table + names_index * sizeof(Elf64_Shdr));
  if (names.sh_offset > object.size() || names.sh_size > object.size() - names.sh_offset)
    throw bad("its section names lie outside the file");
  const std::string_view wanted(kKilnObjectSection);
  for (uint64_t i = 0; i < count; ++i) {
    const auto sh = read_at<Elf64_Shdr>(object, table + i * sizeof(Elf64_Shdr));
    if (sh.sh_name >= names.sh_size) continue;
    std::string_view name = object.substr(names.sh_offset + sh.sh_name, names.sh_size - sh.sh_name);
    name = name.substr(0, name.find('\0'));
    if (name != wanted) continue;
    if (sh.sh_type != SHT_PROGBITS || sh.sh_offset > object.size() || sh.sh_size > object.size() - sh.sh_offset)
      throw bad(std::string(kKilnObjectSection) + " lies outside the file");
    return object.substr(sh.sh_offset, sh.sh_size);
  }
  return std::nullopt;
}

std::vector<FilePatch> payload_in_place(std::string_view unit, std::string_view payload, const std::string& label) {
  auto bad = [&](const std::string& why) { return KilnError(kExitBadInput, label, "the carried object: " + why); };
  if (payload.data() < unit.data() || payload.data() + payload.size() > unit.data() + unit.size())
    throw KilnError(kExitInternal, label, "the carried object is not inside its unit");
  const uint64_t place = static_cast<uint64_t>(payload.data() - unit.data());
  if (place < sizeof(Elf64_Ehdr) || place % 8 != 0) return {};
  if (payload.size() < sizeof(Elf64_Ehdr) || std::memcmp(payload.data(), ELFMAG, SELFMAG) != 0 ||
      payload[EI_CLASS] != ELFCLASS64 || payload[EI_DATA] != ELFDATA2LSB)
    throw bad("not a 64-bit little-endian ELF object");
  auto eh = read_at<Elf64_Ehdr>(payload, 0);
  const uint64_t table = eh.e_shoff;
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || table == 0 || table > payload.size() ||
      payload.size() - table < sizeof(Elf64_Shdr))
    throw bad("its section table lies outside it");
  // From 0xff00 sections on, e_shnum is 0 and section 0's size holds the count.
  const uint64_t count = eh.e_shnum ? eh.e_shnum : read_at<Elf64_Shdr>(payload, table).sh_size;
  if (count == 0 || count > (payload.size() - table) / sizeof(Elf64_Shdr)) throw bad("its section table lies outside it");
  std::string sections(payload.substr(table, count * sizeof(Elf64_Shdr)));
  for (uint64_t i = 0; i < count; ++i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, sections.data() + i * sizeof sh, sizeof sh);
    if (sh.sh_type == SHT_NULL) continue;  // section 0, whose offset says nothing
    if (sh.sh_type != SHT_NOBITS && (sh.sh_offset > payload.size() || sh.sh_size > payload.size() - sh.sh_offset))
      throw bad("section " + std::to_string(i) + " lies outside it");
    sh.sh_offset += place;
    std::memcpy(sections.data() + i * sizeof sh, &sh, sizeof sh);
  }
  eh.e_shoff += place;
  std::string header(sizeof eh, '\0');
  std::memcpy(header.data(), &eh, sizeof eh);
  return {{place + table, std::move(sections)}, {0, std::move(header)}};
}

}  // namespace kiln
