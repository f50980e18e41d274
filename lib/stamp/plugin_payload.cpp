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
  const uint64_t table = eh.e_shoff, count = eh.e_shnum;
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || table > object.size() ||
      count > (object.size() - table) / sizeof(Elf64_Shdr) || eh.e_shstrndx >= count)
    throw bad("its section table lies outside the file");
  const auto names = read_at<Elf64_Shdr>(object, table + eh.e_shstrndx * sizeof(Elf64_Shdr));
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

}  // namespace kiln
