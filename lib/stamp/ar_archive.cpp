// The GNU ar format as binutils and LLVM write it: "!<arch>\n", then members, each a
// 60-byte text header (name, date, owner, group, mode, size, "`\n") and its bytes,
// padded to an even offset with "\n". The member named "/" is the symbol index (a
// big-endian count, that many member offsets, then the names, NUL-terminated), "//"
// holds the names that do not fit the header's 16 bytes, each ended by "/\n", and a
// header names one of those as "/OFFSET".
#include "ar_archive.h"

#include <elf.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <unordered_map>

#include "error.h"

namespace kiln {

namespace {

constexpr std::string_view kMagic = "!<arch>\n";
constexpr size_t kHeaderSize = 60;

// A decimal header field (left-aligned, space-padded); false when it is not one.
bool header_number(std::string_view field, uint64_t& value) {
  const size_t end = field.find_first_of(' ');
  const std::string_view digits = field.substr(0, end);
  if (digits.empty()) return false;
  if (field.find_first_not_of(' ', digits.size()) != std::string_view::npos) return false;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  return ec == std::errc() && p == digits.data() + digits.size();
}

// A member's name from its header's 16 bytes and the archive's long-name table.
std::string member_name(std::string_view field, std::string_view long_names, const std::string& path) {
  auto bad = [&](const std::string& why) { return KilnError(kExitBadInput, path, why); };
  if (field.substr(0, 3) == "#1/") throw bad("a BSD ar archive: kiln reads the GNU form that rustc and ar write here");
  if (field[0] == '/' && field.size() > 1 && field[1] >= '0' && field[1] <= '9') {
    uint64_t offset = 0;
    if (!header_number(field.substr(1), offset) || offset >= long_names.size())
      throw bad("damaged ar archive: a long member name points outside the name table");
    const std::string_view rest = long_names.substr(offset);
    const size_t end = rest.find("/\n");
    if (end == std::string_view::npos) throw bad("damaged ar archive: a long member name is not ended");
    return std::string(rest.substr(0, end));
  }
  const size_t slash = field.find('/');  // GNU ends a short name with '/', System V pads it
  std::string_view name = field.substr(0, slash);
  while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
  return std::string(name);
}

template <typename T>
T read_at(std::string_view bytes, uint64_t offset) {
  T v;
  std::memcpy(&v, bytes.data() + offset, sizeof v);
  return v;
}

// The text of a header field, left-aligned and space-padded to `width`.
void put_field(std::string& out, std::string_view text, size_t width) {
  out += text;
  out.append(width - text.size(), ' ');
}

void put_header(std::string& out, std::string_view name, std::string_view mode, uint64_t size) {
  put_field(out, name, 16);
  put_field(out, "0", 12);  // date
  put_field(out, "0", 6);   // owner
  put_field(out, "0", 6);   // group
  put_field(out, mode, 8);
  put_field(out, std::to_string(size), 10);
  out += "`\n";
}

void put_be32(std::string& out, uint32_t v) {
  const char b[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
  out.append(b, 4);
}

// Gives each member the names `index` (the "/" or "/SYM64/" member: a big-endian count,
// that many offsets of member headers, then the names, NUL-terminated) lists for it.
void list_index_names(const std::string& path, std::string_view index, bool index64,
                      const std::vector<uint64_t>& header_at, std::vector<ArchiveMember>& members) {
  if (index.empty()) return;
  auto bad = [&](const std::string& why) {
    return KilnError(kExitBadInput, path, "damaged ar archive: its symbol index " + why);
  };
  const size_t word = index64 ? 8 : 4;
  auto big_endian = [&](size_t at) {
    uint64_t v = 0;
    for (size_t k = 0; k < word; ++k) v = v << 8 | static_cast<uint8_t>(index[at + k]);
    return v;
  };
  if (index.size() < word) throw bad("ends before its count");
  const uint64_t count = big_endian(0);
  if (count > (index.size() - word) / word) throw bad("counts more entries than it holds");
  std::string_view names = index.substr(word * (count + 1));
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t offset = big_endian(word * (i + 1));
    const auto member = std::lower_bound(header_at.begin(), header_at.end(), offset);
    if (member == header_at.end() || *member != offset)
      throw bad("points at byte " + std::to_string(offset) + ", where no member begins");
    const size_t end = names.find('\0');
    if (end == std::string_view::npos) throw bad("has fewer names than entries");
    members[static_cast<size_t>(member - header_at.begin())].listed.push_back(names.substr(0, end));
    names.remove_prefix(end + 1);
  }
}

bool is_bitcode(std::string_view bytes) {
  return bytes.substr(0, 4) == "BC\xC0\xDE" || bytes.substr(0, 4) == "\xDE\xC0\x17\x0B";
}

}  // namespace

std::vector<ArchiveMember> read_archive(const std::string& path, std::string_view bytes) {
  if (bytes.substr(0, 8) == "!<thin>\n") throw KilnError(kExitBadInput, path, "a thin ar archive: its members are files elsewhere");
  if (bytes.substr(0, kMagic.size()) != kMagic) throw KilnError(kExitBadInput, path, "not an ar archive");
  std::vector<ArchiveMember> members;
  std::vector<uint64_t> header_at;  // per member, where its header begins
  std::string_view long_names, index;
  bool index64 = false;
  size_t at = kMagic.size();
  while (at < bytes.size()) {
    if (bytes.size() - at < kHeaderSize)
      throw KilnError(kExitBadInput, path, "truncated ar archive: a member header ends past its end");
    const std::string_view header = bytes.substr(at, kHeaderSize);
    uint64_t size = 0;
    if (header.substr(58, 2) != "`\n" || !header_number(header.substr(48, 10), size))
      throw KilnError(kExitBadInput, path, "damaged ar archive: a member header at byte " + std::to_string(at) +
                                               " is not one");
    const std::string_view field = header.substr(0, 16);
    const bool is_index = field.substr(0, 2) == "/ " || field.substr(0, 8) == "/SYM64/ ";
    const bool names = field.substr(0, 3) == "// ";
    std::string name = is_index || names ? std::string() : member_name(field, long_names, path);
    const uint64_t header_offset = at;
    at += kHeaderSize;
    if (size > bytes.size() - at)
      throw KilnError(kExitBadInput, path, "truncated ar archive: member " + (name.empty() ? std::string(field) : name) +
                                               " ends past its end");
    const std::string_view data = bytes.substr(at, size);
    if (names) {
      long_names = data;
    } else if (is_index) {
      index = data;
      index64 = field[1] == 'S';
    } else {
      members.push_back({std::move(name), data});
      header_at.push_back(header_offset);
    }
    at += size + (size & 1);  // the padding byte; the last member's may be missing
  }
  list_index_names(path, index, index64, header_at, members);
  return members;
}

std::vector<std::string_view> archive_symbols(std::string_view object, const std::string& label) {
  if (is_bitcode(object)) throw KilnError(kExitInternal, label, "a bitcode member: its symbols are LLVM's to read");
  if (object.substr(0, SELFMAG) != std::string_view(ELFMAG, SELFMAG)) return {};
  auto bad = [&](const std::string& why) { return KilnError(kExitBadInput, label, why); };
  if (object.size() < sizeof(Elf64_Ehdr) || object[EI_CLASS] != ELFCLASS64 || object[EI_DATA] != ELFDATA2LSB)
    throw bad("not a 64-bit little-endian ELF object");
  const auto eh = read_at<Elf64_Ehdr>(object, 0);
  const uint64_t table = eh.e_shoff;
  if (table == 0) return {};  // no sections
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || table > object.size() || object.size() - table < sizeof(Elf64_Shdr))
    throw bad("its section table lies outside the file");
  // From 0xff00 sections on (a codegen unit of many functions, each in its own
  // section), e_shnum is 0 and section 0's size holds the count.
  const uint64_t count = eh.e_shnum ? eh.e_shnum : read_at<Elf64_Shdr>(object, table).sh_size;
  if (count > (object.size() - table) / sizeof(Elf64_Shdr)) throw bad("its section table lies outside the file");
  auto section = [&](uint64_t i) { return read_at<Elf64_Shdr>(object, table + i * sizeof(Elf64_Shdr)); };
  auto inside = [&](const Elf64_Shdr& sh) {
    return sh.sh_offset <= object.size() && sh.sh_size <= object.size() - sh.sh_offset;
  };
  std::vector<std::string_view> out;
  for (uint64_t i = 0; i < count; ++i) {
    const Elf64_Shdr symtab = section(i);
    if (symtab.sh_type != SHT_SYMTAB) continue;
    if (!inside(symtab) || symtab.sh_entsize != sizeof(Elf64_Sym) || symtab.sh_link >= count)
      throw bad("its symbol table lies outside the file");
    const Elf64_Shdr strtab = section(symtab.sh_link);
    if (!inside(strtab)) throw bad("its symbol names lie outside the file");
    const std::string_view strings = object.substr(strtab.sh_offset, strtab.sh_size);
    const uint64_t symbols = symtab.sh_size / sizeof(Elf64_Sym);
    for (uint64_t k = 1; k < symbols; ++k) {  // symbol 0 is the null symbol
      const auto sym = read_at<Elf64_Sym>(object, symtab.sh_offset + k * sizeof(Elf64_Sym));
      const unsigned type = ELF64_ST_TYPE(sym.st_info);
      if (ELF64_ST_BIND(sym.st_info) == STB_LOCAL || sym.st_shndx == SHN_UNDEF || type == STT_FILE ||
          type == STT_SECTION)
        continue;
      const size_t end = sym.st_name < strings.size() ? strings.find('\0', sym.st_name) : std::string_view::npos;
      if (end == std::string_view::npos) throw bad("a symbol's name lies outside its string table");
      out.push_back(strings.substr(sym.st_name, end - sym.st_name));
    }
    break;  // one symbol table in an object
  }
  return out;
}

ArchiveBytes archive_bytes(const std::string& path, const std::vector<ArchiveMember>& members) {
  // Headers first: the long-name table and where each member's header points into it
  // (a name used twice is stored once), and the index's names.
  std::string long_names, index_names;
  std::vector<std::string> names(members.size());
  std::vector<std::vector<std::string_view>> symbols(members.size());
  std::unordered_map<std::string_view, size_t> stored;
  size_t index_entries = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    const std::string& name = members[i].name;
    if (name.size() < 16 && name.find('/') == std::string::npos) {
      names[i] = name + "/";
    } else {
      auto [it, fresh] = stored.try_emplace(name, long_names.size());
      if (fresh) long_names += name + "/\n";
      names[i] = "/" + std::to_string(it->second);
    }
    symbols[i] =
        is_bitcode(members[i].bytes) ? members[i].listed : archive_symbols(members[i].bytes, path + "(" + name + ")");
    index_entries += symbols[i].size();
    for (std::string_view s : symbols[i]) (index_names += s) += '\0';
  }
  // The index (none when no member defines a symbol, as LLVM and binutils write it).
  uint64_t index_size = 0;
  if (!index_names.empty()) {
    index_size = 4 + 4 * index_entries + index_names.size();
    index_size += index_size & 1;
  }
  const uint64_t long_names_size = long_names.size() + (long_names.size() & 1);
  uint64_t at = kMagic.size() + (index_size ? kHeaderSize + index_size : 0) +
                (long_names.empty() ? 0 : kHeaderSize + long_names_size);
  std::vector<uint64_t> offsets(members.size());
  uint64_t total_member_bytes = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    total_member_bytes += members[i].bytes.size();
    offsets[i] = at;
    at += kHeaderSize + members[i].bytes.size() + (members[i].bytes.size() & 1);
  }
  if (at > UINT32_MAX) throw KilnError(kExitInternal, path, "an archive over 4 GiB needs a 64-bit index, which kiln does not write");

  // kiln's own bytes go to `text`; a piece is a span of it or a member's bytes.
  ArchiveBytes a;
  std::string& out = a.text;
  out.reserve(at - total_member_bytes + members.size());
  struct Span {
    const ArchiveMember* member;  // null: text from `begin` to `end`
    size_t begin, end;
  };
  std::vector<Span> spans;
  size_t text_begin = 0;
  auto close_text = [&] {
    if (out.size() > text_begin) spans.push_back({nullptr, text_begin, out.size()});
    text_begin = out.size();
  };
  out += kMagic;
  if (index_size) {
    put_header(out, "/", "0", index_size);
    put_be32(out, uint32_t(index_entries));
    for (size_t i = 0; i < members.size(); ++i)
      for (size_t k = 0; k < symbols[i].size(); ++k) put_be32(out, uint32_t(offsets[i]));
    out += index_names;
    if ((4 + 4 * index_entries + index_names.size()) & 1) out += '\0';
  }
  if (!long_names.empty()) {
    put_field(out, "//", 48);
    put_field(out, std::to_string(long_names_size), 10);
    out += "`\n";
    out += long_names;
    if (long_names.size() & 1) out += '\n';
  }
  for (size_t i = 0; i < members.size(); ++i) {
    put_header(out, names[i], "644", members[i].bytes.size());
    close_text();
    spans.push_back({&members[i], 0, members[i].bytes.size()});
    if (members[i].bytes.size() & 1) out += '\n';
  }
  close_text();
  // Views last: `text` no longer moves.
  for (const Span& sp : spans)
    a.pieces.push_back(sp.member ? sp.member->bytes : std::string_view(out).substr(sp.begin, sp.end - sp.begin));
  return a;
}

std::string ArchiveBytes::joined() const {
  std::string out;
  size_t size = 0;
  for (std::string_view p : pieces) size += p.size();
  out.reserve(size);
  for (std::string_view p : pieces) out += p;
  return out;
}

std::string write_archive(const std::string& path, const std::vector<ArchiveMember>& members) {
  return archive_bytes(path, members).joined();
}

}  // namespace kiln
