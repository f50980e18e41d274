// The archive reader and writer that the rustc wrapper rewrites rlibs with: members
// kept in order and byte for byte, a symbol index that the tools and linkers read, the
// same bytes as LLVM's writer on real rlibs and objects, and a damaged archive named
// with its reason.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <llvm/Object/Archive.h>
#include <llvm/Object/ArchiveWriter.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include "ar_archive.h"
#include "error.h"
#include "fs.h"
#include "scratch_dir.h"
#include "test_helpers.h"

using namespace kiln;
using kiln_test::contains;
using kiln_test::shell;

TEST_CASE("an archive written with a symbol index reads back member for member", "[capture][archive]") {
  kiln_test::ScratchDir dir;
  const std::string c = dir.path + "/unit.c", o = dir.path + "/unit.o", a = dir.path + "/libunit.rlib";
  write_file_atomic(c, "int kiln_archived(int x) { return x + 1; }\nstatic int hidden(void) { return 2; }\n"
                       "int kiln_also(void) { return hidden(); }\n");
  REQUIRE(shell(kiln_test::llvm_tool("clang") + " -c -O0 " + c + " -o " + o).exit_code == 0);
  // rustc's rlibs: metadata first (an ELF file without symbols), then the units, whose
  // names are longer than the 16 bytes an ar header holds.
  const std::string object = read_file(o);
  const std::vector<ArchiveMember> members = {
      {"lib.rmeta", "not an object: metadata bytes"},
      {"unit-0123456789abcdef.unit.1a2b3c4d5e6f-cgu.0.rcgu.o", object},
      {"short.o", ""},
  };
  const std::string bytes = write_archive(a, members);
  write_file_atomic(a, bytes);

  const std::string written = read_file(a);
  std::vector<ArchiveMember> back = read_archive(a, written);
  REQUIRE(back.size() == members.size());
  for (size_t i = 0; i < back.size(); ++i) {
    CHECK(back[i].name == members[i].name);
    CHECK(back[i].bytes == members[i].bytes);
  }
  // The index lists the object's global definitions, not its local function.
  kiln::ProcessResult index = shell(kiln_test::llvm_tool("llvm-nm") + " --print-armap " + a);
  INFO(index.captured_stdout);
  CHECK(contains(index.captured_stdout, "kiln_archived in unit-0123456789abcdef.unit.1a2b3c4d5e6f-cgu.0.rcgu.o"));
  CHECK(contains(index.captured_stdout, "kiln_also in "));
  CHECK(!contains(index.captured_stdout, "hidden in "));
  // Equal members make equal archives: no timestamps.
  CHECK(write_archive(a, members) == bytes);
}

TEST_CASE("a damaged archive is bad input naming the file", "[capture][archive]") {
  auto error_of = [](const std::string& bytes) {
    try {
      read_archive("/t/libx.rlib", bytes);
    } catch (const KilnError& e) {
      CHECK(e.code() == kExitBadInput);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(contains(error_of("not an archive"), "/t/libx.rlib"));
  const std::string x(100, 'x');
  std::string good = write_archive("/t/libx.rlib", {{"a.o", x}});
  CHECK(contains(error_of(good.substr(0, good.size() - 50)), "/t/libx.rlib: truncated ar archive: member a.o"));
  // Every shorter prefix is bad input or, up to the first member's header, an archive
  // of fewer members: never a read past the bytes (the sanitizer build runs this).
  for (size_t n = 0; n < good.size(); ++n) {
    std::string prefix = good.substr(0, n);
    try {
      std::vector<ArchiveMember> members = read_archive("/t/libx.rlib", prefix);
      CHECK(members.empty());
    } catch (const KilnError& e) {
      CHECK(e.code() == kExitBadInput);
    }
  }
}

namespace {

template <typename T>
T read_le(const std::string& bytes, size_t at) {
  T v{};
  std::memcpy(&v, bytes.data() + at, sizeof v);
  return v;
}

// LLVM's writer, as kiln used it before it wrote archives itself: the reference.
std::string llvm_archive(const std::vector<ArchiveMember>& members) {
  std::vector<llvm::NewArchiveMember> out;
  for (const ArchiveMember& m : members) {
    llvm::NewArchiveMember n;
    n.Buf = llvm::MemoryBuffer::getMemBuffer(llvm::StringRef(m.bytes.data(), m.bytes.size()), m.name, false);
    n.MemberName = m.name;
    out.push_back(std::move(n));
  }
  auto buffer = llvm::writeArchiveToBuffer(out, llvm::SymtabWritingMode::NormalSymtab, llvm::object::Archive::K_GNU,
                                           /*Deterministic=*/true, /*Thin=*/false);
  REQUIRE(static_cast<bool>(buffer));
  return (*buffer)->getBuffer().str();
}

// LLVM's reader's members of `bytes`, as (name, bytes) pairs.
std::vector<std::pair<std::string, std::string>> llvm_members(const std::string& bytes) {
  auto archive = llvm::object::Archive::create(llvm::MemoryBufferRef(bytes, "x"));
  REQUIRE(static_cast<bool>(archive));
  std::vector<std::pair<std::string, std::string>> out;
  llvm::Error err = llvm::Error::success();
  for (const auto& child : (*archive)->children(err)) out.emplace_back(child.getName()->str(), child.getBuffer()->str());
  REQUIRE(!err);
  return out;
}

}  // namespace

TEST_CASE("kiln writes and reads archives as LLVM does: real rlibs and objects", "[capture][archive]") {
  kiln_test::ScratchDir dir;
  // A crate in several codegen units with generic, exported and private functions, and
  // an object with every kind of symbol the index must take or leave: weak, common,
  // hidden, undefined, local, thread-local.
  write_file_atomic(dir.path + "/lib.rs",
                    "pub fn a(x: u32) -> u32 { x + 1 }\n"
                    "pub mod m { pub fn b(v: &[u8]) -> usize { v.iter().filter(|&&c| c == 7).count() } }\n"
                    "#[no_mangle] pub extern \"C\" fn kiln_c(x: i64) -> i64 { x * 3 }\n"
                    "pub static TABLE: [u16; 3] = [1, 2, 3];\n"
                    "fn private(x: u8) -> u8 { x ^ 5 }\n"
                    "pub fn uses() -> u8 { private(3) }\n");
  kiln::ProcessResult built = shell("cd " + dir.path + " && rustc --edition 2021 --crate-type rlib --crate-name ar_probe "
                                    "-C codegen-units=4 -C opt-level=0 lib.rs -o libar_probe.rlib");
  INFO(built.captured_stdout);
  REQUIRE(built.exit_code == 0);
  write_file_atomic(dir.path + "/kinds.c",
                    "__attribute__((weak)) int kiln_weak(void) { return 1; }\n"
                    "int kiln_common;\n"
                    "__attribute__((visibility(\"hidden\"))) int kiln_hidden = 4;\n"
                    "extern int kiln_elsewhere;\n"
                    "static int kiln_local(void) { return kiln_elsewhere; }\n"
                    "_Thread_local int kiln_tls = 2;\n"
                    "int kiln_uses(void) { return kiln_local() + kiln_hidden + kiln_common; }\n");
  REQUIRE(shell(kiln_test::llvm_tool("clang") + " -c -fcommon -O0 " + dir.path + "/kinds.c -o " + dir.path + "/kinds.o")
              .exit_code == 0);

  const std::string rlib = read_file(dir.path + "/libar_probe.rlib"), kinds = read_file(dir.path + "/kinds.o");
  std::vector<ArchiveMember> members = read_archive("libar_probe.rlib", rlib);
  // The reader: LLVM's members, name for name and byte for byte.
  const auto reference = llvm_members(rlib);
  REQUIRE(members.size() == reference.size());
  REQUIRE(members.size() >= 3);  // lib.rmeta and the units
  for (size_t i = 0; i < members.size(); ++i) {
    CHECK(members[i].name == reference[i].first);
    CHECK(members[i].bytes == reference[i].second);
  }
  // The writer: LLVM's bytes, for the rlib's members and with odd sizes, names of 15
  // and 16 bytes, one long name twice and an object of every kind of symbol added.
  const std::string odd = "odd size", meta_only = "no symbols here";
  members.push_back({"fifteen-chars.o", kinds});
  members.push_back({"sixteen-chars..o", odd});
  members.push_back({"unit-0123456789abcdef.unit.1a2b3c4d5e6f-cgu.0.rcgu.o", odd});
  members.push_back({"unit-0123456789abcdef.unit.1a2b3c4d5e6f-cgu.0.rcgu.o", kinds});
  CHECK(write_archive("x", members) == llvm_archive(members));
  // In the object's symbol table's order (the writer's check above holds the order).
  const std::vector<std::string_view> found = archive_symbols(kinds, "kinds.o");
  std::vector<std::string> symbols(found.begin(), found.end());
  std::sort(symbols.begin(), symbols.end());
  CHECK(symbols == std::vector<std::string>{"kiln_common", "kiln_hidden", "kiln_tls", "kiln_uses", "kiln_weak"});
  // A section count past e_shnum's reach (0, and section 0's size holding it), as
  // LLVM writes objects of 0xff00 sections and more.
  std::string extended = kinds;
  const auto shoff = read_le<uint64_t>(extended, 40);
  const auto shnum = read_le<uint16_t>(extended, 60);
  extended[60] = extended[61] = 0;
  for (int k = 0; k < 8; ++k) extended[shoff + 32 + k] = static_cast<char>(uint64_t(shnum) >> (8 * k));
  CHECK(archive_symbols(extended, "extended.o") == archive_symbols(kinds, "kinds.o"));
  // An archive without a symbol, and one without a member.
  const std::vector<ArchiveMember> plain = {{"lib.rmeta", meta_only}, {"a-long-member-name.txt", odd}};
  CHECK(write_archive("x", plain) == llvm_archive(plain));
  CHECK(write_archive("x", {}) == llvm_archive({}));
}

TEST_CASE("a bitcode member keeps the names the archive's own index gave it", "[capture][archive]") {
  // A crate that bundles a static library built with -flto has bitcode members beside
  // its units; the wrapper rewrites such an rlib when it cannot patch it in place.
  kiln_test::ScratchDir dir;
  write_file_atomic(dir.path + "/lto.c",
                    "int kiln_lto_one(void) { return 1; }\nint kiln_lto_data = 3;\n"
                    "static int kiln_lto_local(void) { return 2; }\n"
                    "int kiln_lto_two(void) { return kiln_lto_local(); }\n");
  write_file_atomic(dir.path + "/plain.c", "int kiln_plain(void) { return 4; }\n");
  write_file_atomic(dir.path + "/other.c", "int kiln_other(void) { return 5; }\n");
  for (const char* unit : {"lto", "plain", "other"}) {
    const std::string flags = std::string(unit) == "lto" ? " -flto" : "";
    REQUIRE(shell(kiln_test::llvm_tool("clang") + flags + " -c -O0 " + dir.path + "/" + unit + ".c -o " + dir.path +
                  "/" + unit + ".o")
                .exit_code == 0);
  }
  const std::string a = dir.path + "/libbundled.a";
  REQUIRE(shell("cd " + dir.path + " && " + kiln_test::llvm_tool("llvm-ar") + " rcsD libbundled.a plain.o lto.o")
              .exit_code == 0);
  const std::string archive = read_file(a), other = read_file(dir.path + "/other.o");
  std::vector<ArchiveMember> members = read_archive(a, archive);
  REQUIRE(members.size() == 2);
  std::vector<std::string> listed(members[1].listed.begin(), members[1].listed.end());
  std::sort(listed.begin(), listed.end());
  CHECK(listed == std::vector<std::string>{"kiln_lto_data", "kiln_lto_one", "kiln_lto_two"});
  CHECK(members[0].listed == std::vector<std::string_view>{"kiln_plain"});
  // Written again, and with the ELF member replaced: LLVM's writer's bytes (it reads the
  // bitcode's own symbol table).
  CHECK(write_archive(a, members) == llvm_archive(members));
  members[0].bytes = other;
  CHECK(write_archive(a, members) == llvm_archive(members));
  CHECK(contains(shell(kiln_test::llvm_tool("llvm-nm") + " --print-armap " + a).captured_stdout,
                 "kiln_lto_two in lto.o"));
  // An index that points between members, or names fewer symbols than it counts.
  std::string damaged = archive;
  const size_t index = damaged.find("/               ");
  REQUIRE(index == 8);
  damaged[60 + 8 + 7] ^= 1;  // the first offset's low byte
  try {
    read_archive(a, damaged);
    FAIL("a damaged index was read");
  } catch (const KilnError& e) {
    CHECK(e.code() == kExitBadInput);
    CHECK(contains(e.what(), "damaged ar archive: its symbol index points at byte"));
  }
}

TEST_CASE("a member the index cannot read is named", "[capture][archive]") {
  const std::string bitcode = "BC\xC0\xDE and more";
  try {
    archive_symbols(bitcode, "/t/liby.rlib(y.rcgu.o)");
    FAIL("a bitcode member was indexed");
  } catch (const KilnError& e) {
    CHECK(contains(e.what(), "/t/liby.rlib(y.rcgu.o): a bitcode member"));
  }
  std::string elf(64, '\0');
  elf.replace(0, 6, "\x7f" "ELF\x02\x01");
  elf[40] = '\x7f';  // e_shoff far outside the file
  elf[60] = 3;        // three sections
  elf[58] = 64;       // of the ELF size
  try {
    archive_symbols(elf, "z.o");
    FAIL("a damaged section table was read");
  } catch (const KilnError& e) {
    CHECK(e.code() == kExitBadInput);
    CHECK(contains(e.what(), "z.o: its section table lies outside the file"));
  }
}
