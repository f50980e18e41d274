// The archive reader and writer that the rustc wrapper rewrites rlibs with: members
// kept in order and byte for byte, a symbol index that the tools and linkers read, and
// a damaged archive named with its reason.
#include <catch2/catch.hpp>

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
  const std::vector<ArchiveMember> members = {
      {"lib.rmeta", "not an object: metadata bytes"},
      {"unit-0123456789abcdef.unit.1a2b3c4d5e6f-cgu.0.rcgu.o", read_file(o)},
      {"short.o", std::string()},
  };
  const std::string bytes = write_archive(a, members);
  write_file_atomic(a, bytes);

  std::vector<ArchiveMember> back = read_archive(a, read_file(a));
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
  std::string good = write_archive("/t/libx.rlib", {{"a.o", std::string(100, 'x')}});
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
