// The stamp object writer: hand-assembled functions go in, and the object that comes
// out is read back with LLVM's object library, llvm-readobj and llvm-dwarfdump, linked
// with real C and C++ code by both GNU ld and lld, run, and unwound through.
#include <catch2/catch.hpp>

#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "error.h"
#include "fs.h"
#include "kiln_config.h"
#include "process.h"
#include "scratch_dir.h"
#include "stamp_eh_frame.h"
#include "stamp_object.h"
#include "string_hash.h"
#include "test_helpers.h"

using namespace kiln;
using namespace kiln_test;

namespace {

StampFunction function(const std::string& name, std::vector<uint8_t> body,
                       std::vector<StampNamedReloc> relocations = {}, bool biased = true) {
  StampFunction f;
  f.name = name;
  f.code = stamp_framed(body, biased);
  for (StampNamedReloc& r : relocations) r.offset += biased ? kFramedBody : kPlainFramedBody;  // given within the body
  f.relocations = std::move(relocations);
  return f;
}

// A call rel32 whose displacement (at offset 1 of the body) is relocated to SYMBOL.
StampFunction caller(const std::string& name, const std::string& callee, uint32_t type = kRelocPlt32,
                     bool biased = true) {
  return function(name, {0xE8, 0, 0, 0, 0}, {{1, type, callee, -4}}, biased);
}

// sub rsp, 32; call CALLEE (relocated at body offset 5): moves rsp away from the frame
// base, so an unwinder only gets past it with the rbp-based CFA rule.
StampFunction deep_caller(const std::string& name, const std::string& callee) {
  return function(name, {0x48, 0x83, 0xEC, 0x20, 0xE8, 0, 0, 0, 0}, {{5, kRelocPlt32, callee, -4}});
}

// The functions the C test program calls:
//   answer()       = 42                 (hidden, so the call to it binds locally)
//   call_answer()  = answer()           (R_X86_64_PLT32)
//   load_global()  = stamp_global       (mov rax, [rip+stamp_global@GOTPCREL]; mov eax, [rax])
//   seven()        = 7                  (local; these two in the plain frame shape, the others biased)
//   call_seven()   = seven()            (R_X86_64_PC32 to a local symbol)
//   walk()         = count_frames()     (a C function that runs _Unwind_Backtrace; walk moves rsp)
//   weak_answer()  = 5                  (weak, protected)
std::vector<StampFunction> test_functions() {
  std::vector<StampFunction> fs;
  fs.push_back(function("answer", {0xB8, 42, 0, 0, 0}));
  fs.back().visibility = SymbolVisibility::hidden;
  fs.push_back(caller("call_answer", "answer"));
  fs.push_back(function("load_global", {0x48, 0x8B, 0x05, 0, 0, 0, 0, 0x8B, 0x00},
                        {{3, kRelocRexGotPcRelX, "stamp_global", -4}}));
  fs.push_back(function("seven", {0xB8, 7, 0, 0, 0}, {}, false));
  fs.back().binding = SymbolBinding::local;
  fs.push_back(caller("call_seven", "seven", kRelocPc32, false));
  fs.push_back(deep_caller("walk", "count_frames"));
  fs.back().section = ".text.stamp_walk";
  fs.push_back(function("weak_answer", {0xB8, 5, 0, 0, 0}));
  fs.back().binding = SymbolBinding::weak;
  fs.back().visibility = SymbolVisibility::protected_;
  return fs;
}

const char* kUnwindMainC = R"(#include <stdint.h>
#include <stdio.h>
#include <unwind.h>
int answer(void);
int call_answer(void);
int load_global(void);
int call_seven(void);
int walk(void);
int weak_answer(void);
int main(void);
int stamp_global = 1000;
static int frames, walk_frame, main_frame;
static _Unwind_Reason_Code step(struct _Unwind_Context* context, void* arg) {
  (void)arg;
  uintptr_t start = _Unwind_GetRegionStart(context);
  ++frames;
  if (start == (uintptr_t)&walk) walk_frame = frames;
  if (start == (uintptr_t)&main) main_frame = frames;
  return _URC_NO_REASON;
}
int count_frames(void) { return _Unwind_Backtrace(step, 0); }
int main(void) {
  int unwind = walk();
  printf("values %d %d %d %d %d\n", call_answer(), load_global(), call_seven(), weak_answer(), answer());
  printf("unwind %d end %d frames %d walk %d main %d\n", unwind, unwind == _URC_END_OF_STACK, frames,
         walk_frame, main_frame);
  return call_answer() + call_seven() == 49 ? 0 : 1;
}
)";

const char* kThrowCpp = R"(#include <cstdio>
#include <stdexcept>
extern "C" int through(void);
extern "C" int throw_it(void) { throw std::runtime_error("thrown through a stamp frame"); }
int main() {
  try {
    through();
  } catch (const std::runtime_error& e) {
    std::printf("caught: %s\n", e.what());
    return 0;
  }
  std::printf("not thrown\n");
  return 1;
}
)";

struct SymbolInfo {
  std::string name;
  uint8_t binding = 0, type = 0, other = 0;
  uint64_t size = 0;
  std::string section;  // empty: undefined or absolute
};

struct RelocationInfo {
  std::string section;  // the section the relocations apply to
  uint64_t offset = 0;
  uint64_t type = 0;
  std::string symbol;  // for section symbols, the section name
  int64_t addend = 0;
};

struct ObjectInfo {
  std::vector<std::string> sections;  // index order, [0] the null section ("")
  std::vector<SymbolInfo> symbols;    // symbol table order, without the null symbol
  std::vector<RelocationInfo> relocations;
  unsigned symtab_first_global = 0;
};

ObjectInfo read_object(const std::string& bytes) {
  using namespace llvm::object;
  auto object = must(ObjectFile::createObjectFile(llvm::MemoryBufferRef(bytes, "stamp.o")));
  auto* elf = llvm::dyn_cast<ELF64LEObjectFile>(object.get());
  if (!elf) throw std::runtime_error("not an ELF64LE object");
  ObjectInfo info;
  for (const SectionRef& s : elf->sections()) info.sections.push_back(must(s.getName()).str());
  for (const auto& header : must(elf->getELFFile().sections()))
    if (header.sh_type == llvm::ELF::SHT_SYMTAB) info.symtab_first_global = header.sh_info;
  for (const ELFSymbolRef& s : elf->symbols()) {
    SymbolInfo sym;
    sym.name = must(s.getName()).str();
    sym.binding = s.getBinding();
    sym.type = s.getELFType();
    sym.other = s.getOther();
    sym.size = s.getSize();
    section_iterator section = must(s.getSection());
    if (section != elf->section_end()) sym.section = must(section->getName()).str();
    info.symbols.push_back(sym);
  }
  for (const SectionRef& s : elf->sections()) {
    for (const RelocationRef& r : s.relocations()) {
      RelocationInfo rel;
      rel.section = must(must(s.getRelocatedSection())->getName()).str();
      rel.offset = r.getOffset();
      rel.type = r.getType();
      symbol_iterator sym = r.getSymbol();
      if (must(sym->getType()) == SymbolRef::ST_Debug) rel.symbol = must(must(sym->getSection())->getName()).str();
      else rel.symbol = must(sym->getName()).str();
      rel.addend = must(ELFRelocationRef(r).getAddend());
      info.relocations.push_back(rel);
    }
  }
  return info;
}

const SymbolInfo* find_symbol_info(const ObjectInfo& info, const std::string& name) {
  for (const auto& s : info.symbols)
    if (s.name == name && s.type != llvm::ELF::STT_SECTION) return &s;
  return nullptr;
}

size_t symbol_position(const ObjectInfo& info, const std::string& name) {
  for (size_t i = 0; i < info.symbols.size(); ++i)
    if (info.symbols[i].name == name && info.symbols[i].type != llvm::ELF::STT_SECTION) return i + 1;
  return 0;
}

bool has_relocation(const ObjectInfo& info, const std::string& section, uint64_t offset, uint64_t type,
                    const std::string& symbol, int64_t addend) {
  for (const auto& r : info.relocations)
    if (r.section == section && r.offset == offset && r.type == type && r.symbol == symbol && r.addend == addend)
      return true;
  return false;
}

}  // namespace

TEST_CASE("the stamp .eh_frame has one CIE and one FDE per function with the frame shape's CFI", "[elf_writer]") {
  std::vector<uint32_t> pc_begin;
  std::string eh = build_stamp_eh_frame({11, 300}, {0, 1}, pc_begin);
  const std::string cie(
      "\x14\x00\x00\x00"  // length 20
      "\x00\x00\x00\x00"  // CIE id
      "\x01"
      "zR\x00"        // version 1, augmentation "zR"
      "\x01\x78\x10"  // code align 1, data align -8, return address r16
      "\x01\x1b"      // augmentation data: pcrel|sdata4 FDE pointers
      "\x0c\x07\x08"  // DW_CFA_def_cfa rsp+8
      "\x90\x01"      // DW_CFA_offset rip at cfa-8
      "\x00\x00",     // nops to 8 bytes
      24);
  auto fde = [](uint32_t cie_pointer, uint32_t range, bool biased) {
    std::string out("\x1c\x00\x00\x00", 4);  // length 28
    for (uint32_t v : {cie_pointer, 0u, range})
      for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    out += std::string(
        "\x00"          // augmentation data length 0
        "\x41\x0e\x10"  // advance 1; CFA = rsp+16
        "\x86\x02",     // rbp at cfa-16
        6);
    if (biased)
      out += std::string(
          "\x45\x0c\x06\x80\x01"   // advance 5; CFA = rbp+128
          "\x00\x00\x00\x00\x00",  // nops to 8 bytes
          10);
    else
      out += std::string(
          "\x43\x0d\x06"                   // advance 3; CFA = rbp+16
          "\x00\x00\x00\x00\x00\x00\x00",  // nops to 8 bytes
          10);
    return out;
  };
  REQUIRE(eh.size() == 24 + 32 + 32);
  CHECK(eh.substr(0, 24) == cie);
  CHECK(eh.substr(24, 32) == fde(28, 11, false));
  CHECK(eh.substr(56, 32) == fde(60, 300, true));
  CHECK(pc_begin == std::vector<uint32_t>{32, 64});

  CHECK(build_stamp_eh_frame({}, {}, pc_begin) == cie);
  CHECK(pc_begin.empty());
}

TEST_CASE("stamp objects read back with the right sections, symbols and relocations", "[elf_writer]") {
  std::string bytes = write_stamp_object(test_functions(), "unit.c");
  ObjectInfo info = read_object(bytes);

  CHECK(info.sections ==
        std::vector<std::string>{"", ".text.answer", ".text.call_answer", ".rela.text.call_answer", ".text.load_global",
                                 ".rela.text.load_global", ".text.seven", ".text.call_seven", ".rela.text.call_seven",
                                 ".text.stamp_walk", ".rela.text.stamp_walk", ".text.weak_answer", ".eh_frame",
                                 ".rela.eh_frame", ".note.GNU-stack", ".symtab", ".strtab"});
  // One table for section and symbol names: a function's name is stored once, as the
  // tail of its code's relocation section's name (".rela.text.call_answer").
  size_t first_name = bytes.find("call_answer");
  CHECK(first_name != std::string::npos);
  CHECK(bytes.find("call_answer", first_name + 1) == std::string::npos);
  CHECK(bytes.compare(first_name - 11, 11, ".rela.text.") == 0);

  // Locals: the file, the section symbols, the local function; then the globals.
  REQUIRE(info.symbols.size() >= 10);
  CHECK(info.symbols[0].name == "unit.c");
  CHECK(info.symbols[0].type == llvm::ELF::STT_FILE);
  std::vector<std::string> section_symbols;
  for (size_t i = 1; i <= 8; ++i) {
    CHECK(info.symbols[i].type == llvm::ELF::STT_SECTION);
    CHECK(info.symbols[i].binding == llvm::ELF::STB_LOCAL);
    section_symbols.push_back(info.symbols[i].section);
  }
  CHECK(section_symbols ==
        std::vector<std::string>{".text.answer", ".text.call_answer", ".text.load_global", ".text.seven",
                                 ".text.call_seven", ".text.stamp_walk", ".text.weak_answer", ".eh_frame"});
  CHECK(info.symbols[9].name == "seven");
  CHECK(info.symtab_first_global == 11);  // null, file, 8 section symbols, seven
  for (size_t i = 0; i < info.symbols.size(); ++i)
    CHECK((info.symbols[i].binding == llvm::ELF::STB_LOCAL) == (i + 1 < info.symtab_first_global));

  const SymbolInfo* answer = find_symbol_info(info, "answer");
  REQUIRE(answer);
  CHECK(answer->type == llvm::ELF::STT_FUNC);
  CHECK(answer->binding == llvm::ELF::STB_GLOBAL);
  CHECK(answer->other == llvm::ELF::STV_HIDDEN);
  CHECK(answer->size == 17);
  CHECK(answer->section == ".text.answer");
  const SymbolInfo* seven = find_symbol_info(info, "seven");
  REQUIRE(seven);
  CHECK(seven->binding == llvm::ELF::STB_LOCAL);
  CHECK(seven->type == llvm::ELF::STT_FUNC);
  const SymbolInfo* walk = find_symbol_info(info, "walk");
  REQUIRE(walk);
  CHECK(walk->section == ".text.stamp_walk");
  CHECK(walk->other == llvm::ELF::STV_DEFAULT);
  const SymbolInfo* weak = find_symbol_info(info, "weak_answer");
  REQUIRE(weak);
  CHECK(weak->binding == llvm::ELF::STB_WEAK);
  CHECK(weak->other == llvm::ELF::STV_PROTECTED);
  const SymbolInfo* load = find_symbol_info(info, "load_global");
  REQUIRE(load);
  CHECK(load->size == 21);
  for (const char* undefined : {"stamp_global", "count_frames"}) {
    const SymbolInfo* s = find_symbol_info(info, undefined);
    REQUIRE(s);
    CHECK(s->section.empty());
    CHECK(s->binding == llvm::ELF::STB_GLOBAL);
    CHECK(s->type == llvm::ELF::STT_NOTYPE);
  }
  // Undefined symbols come last, in the order the relocations first name them.
  CHECK(symbol_position(info, "weak_answer") < symbol_position(info, "stamp_global"));
  CHECK(symbol_position(info, "stamp_global") < symbol_position(info, "count_frames"));
  CHECK(symbol_position(info, "count_frames") == info.symbols.size());

  using namespace llvm::ELF;
  CHECK(has_relocation(info, ".text.call_answer", 7, R_X86_64_PLT32, "answer", -4));
  CHECK(has_relocation(info, ".text.load_global", 9, R_X86_64_REX_GOTPCRELX, "stamp_global", -4));
  CHECK(has_relocation(info, ".text.call_seven", 5, R_X86_64_PC32, "seven", -4));
  CHECK(has_relocation(info, ".text.stamp_walk", 11, R_X86_64_PLT32, "count_frames", -4));
  CHECK(has_relocation(info, ".eh_frame", 24 + 8, R_X86_64_PC32, ".text.answer", 0));
  CHECK(has_relocation(info, ".eh_frame", 24 + 5 * 32 + 8, R_X86_64_PC32, ".text.stamp_walk", 0));
  CHECK(info.relocations.size() == 4 + 7);

  ScratchDir dir;
  write_file_atomic(dir.path + "/stamp.o", bytes);
  auto readobj =
      shell(shell_join({llvm_tool("llvm-readobj"), "--sections", "--relocations", "--symbols", dir.path + "/stamp.o"}));
  CHECK(readobj.exit_code == 0);
  CHECK_FALSE(contains(readobj.captured_stdout, "warning"));
  CHECK(contains(readobj.captured_stdout, "Type: SHT_X86_64_UNWIND (0x70000001)"));
  CHECK(contains(readobj.captured_stdout, "0x7 R_X86_64_PLT32 answer 0xFFFFFFFFFFFFFFFC"));
  CHECK(contains(readobj.captured_stdout, "0x9 R_X86_64_REX_GOTPCRELX stamp_global 0xFFFFFFFFFFFFFFFC"));
  auto gnu = shell(shell_join({"readelf", "-a", "-W", dir.path + "/stamp.o"}));
  CHECK(gnu.exit_code == 0);
  CHECK_FALSE(contains(gnu.captured_stdout, "arning"));

  auto dwarf = shell(shell_join({llvm_tool("llvm-dwarfdump"), "--eh-frame", dir.path + "/stamp.o"}));
  CHECK(dwarf.exit_code == 0);
  const std::string& eh = dwarf.captured_stdout;
  CHECK_FALSE(contains(eh, "error"));
  CHECK_FALSE(contains(eh, "warning"));
  CHECK(contains(eh, "Augmentation:          \"zR\""));
  CHECK(contains(eh, "DW_CFA_def_cfa: RSP +8"));
  CHECK(contains(eh, "DW_CFA_offset: RIP -8"));
  size_t fdes = 0, rows = 0;
  for (size_t at = eh.find(" FDE cie=00000000 "); at != std::string::npos; at = eh.find(" FDE cie=00000000 ", at + 1))
    ++fdes;
  const std::string after_push = "0x1: CFA=RSP+16: RBP=[CFA-16], RIP=[CFA-8]";
  const std::string after_lea = "0x6: CFA=RBP+128: RBP=[CFA-16], RIP=[CFA-8]";
  const std::string after_mov = "0x4: CFA=RBP+16: RBP=[CFA-16], RIP=[CFA-8]";
  size_t plain_rows = 0;
  for (size_t at = eh.find(after_lea); at != std::string::npos; at = eh.find(after_lea, at + 1)) ++rows;
  for (size_t at = eh.find(after_mov); at != std::string::npos; at = eh.find(after_mov, at + 1)) ++plain_rows;
  CHECK(fdes == 7);
  CHECK(rows == 5);
  CHECK(plain_rows == 2);  // seven and call_seven
  CHECK(contains(eh, after_push));
  CHECK(contains(eh, "pc=00000000...00000015"));  // load_global's 21 bytes
}

// extern_weak declarations must stay weak when undefined (a missing definition is
// 0, not a link error), and hidden or protected declarations keep their visibility,
// whether code or a global's initializer names them.
TEST_CASE("undefined symbols are weak or hidden as the undefined list says", "[elf_writer]") {
  StampFunction uses =
      function("uses", {0xE8, 0, 0, 0, 0, 0xE8, 0, 0, 0, 0, 0xE8, 0, 0, 0, 0},
               {{1, kRelocPlt32, "weak_fn", -4}, {6, kRelocPlt32, "hidden_fn", -4}, {11, kRelocPlt32, "plain_fn", -4}});
  StampData table;
  table.name = "table";
  table.section = ".data.rel.ro.table";
  table.align = 8;
  table.size = 16;
  table.bytes.assign(16, 0);
  table.relocations = {{0, 1, "weak_data", 0}, {8, 1, "protected_data", 0}};
  std::vector<UndefinedSymbol> undefined = {{"weak_fn", SymbolBinding::weak, SymbolVisibility::default_},
                                            {"hidden_fn", SymbolBinding::global, SymbolVisibility::hidden},
                                            {"weak_data", SymbolBinding::weak, SymbolVisibility::hidden},
                                            {"protected_data", SymbolBinding::global, SymbolVisibility::protected_},
                                            {"never_named", SymbolBinding::weak, SymbolVisibility::default_},
                                            {"uses", SymbolBinding::weak, SymbolVisibility::hidden}};
  ObjectInfo info = read_object(write_stamp_object({uses}, "weak.c", {table}, undefined));
  struct Expect {
    const char* name;
    uint8_t binding, other;
  };
  for (const Expect& e : {Expect{"weak_fn", llvm::ELF::STB_WEAK, llvm::ELF::STV_DEFAULT},
                          Expect{"hidden_fn", llvm::ELF::STB_GLOBAL, llvm::ELF::STV_HIDDEN},
                          Expect{"plain_fn", llvm::ELF::STB_GLOBAL, llvm::ELF::STV_DEFAULT},
                          Expect{"weak_data", llvm::ELF::STB_WEAK, llvm::ELF::STV_HIDDEN},
                          Expect{"protected_data", llvm::ELF::STB_GLOBAL, llvm::ELF::STV_PROTECTED}}) {
    INFO(e.name);
    const SymbolInfo* s = find_symbol_info(info, e.name);
    REQUIRE(s);
    CHECK(s->section.empty());
    CHECK(s->binding == e.binding);
    CHECK(s->other == e.other);
  }
  CHECK_FALSE(find_symbol_info(info, "never_named"));  // listed, but nothing refers to it
  // A defined symbol keeps its own binding and visibility whatever the list says.
  const SymbolInfo* defined = find_symbol_info(info, "uses");
  REQUIRE(defined);
  CHECK(defined->binding == llvm::ELF::STB_GLOBAL);
  CHECK(defined->other == llvm::ELF::STV_DEFAULT);
  for (size_t i = 0; i < info.symbols.size(); ++i)
    CHECK((info.symbols[i].binding == llvm::ELF::STB_LOCAL) == (i + 1 < info.symtab_first_global));
}

TEST_CASE("stamp objects link with C and C++, run, and unwind through stamp frames", "[elf_writer]") {
  ScratchDir dir;
  write_file_atomic(dir.path + "/stamp.o", write_stamp_object(test_functions(), "unit.c"));
  write_file_atomic(dir.path + "/main.c", kUnwindMainC);
  auto cc = shell(shell_join({"cc", "-c", "-O1", "-o", dir.path + "/main.o", dir.path + "/main.c"}));
  INFO(cc.captured_stdout);
  REQUIRE(cc.exit_code == 0);

  std::vector<StampFunction> through = {deep_caller("through", "throw_it")};
  write_file_atomic(dir.path + "/through.o", write_stamp_object(through, "through.cc"));
  write_file_atomic(dir.path + "/throw.cpp", kThrowCpp);
  auto cxx = shell(shell_join({"c++", "-c", "-O1", "-o", dir.path + "/throw.o", dir.path + "/throw.cpp"}));
  INFO(cxx.captured_stdout);
  REQUIRE(cxx.exit_code == 0);

  // GNU ld, and lld where it is installed (in PATH or next to the LLVM tools).
  std::vector<std::vector<std::string>> linkers = {{"-fuse-ld=bfd"}};
  if (!find_program("ld.lld").empty()) linkers.push_back({"-fuse-ld=lld"});
  else if (path_exists(llvm_tool("ld.lld"))) linkers.push_back({"-fuse-ld=lld", "-B" + std::string(KILN_LLVM_BINDIR)});
  else WARN("ld.lld not found: linking with GNU ld only");
  for (const auto& linker : linkers) {
    for (const char* pie : {"-pie", "-no-pie"}) {
      INFO("linker " << shell_join(linker) << " " << pie);
      std::string prog = dir.path + "/prog";
      std::vector<std::string> link_c = {"cc", pie, "-o", prog, dir.path + "/main.o", dir.path + "/stamp.o"};
      link_c.insert(link_c.begin() + 1, linker.begin(), linker.end());
      auto link = shell(shell_join(link_c));
      INFO(link.captured_stdout);
      REQUIRE(link.exit_code == 0);
      CHECK_FALSE(contains(link.captured_stdout, "warning"));
      auto run = shell(shell_join({prog}));
      INFO(run.captured_stdout);
      CHECK(run.exit_code == 0);
      CHECK(contains(run.captured_stdout, "values 42 1000 7 5 42\n"));
      // _Unwind_Backtrace reached the end of the stack, having passed through walk
      // (a stamp frame) into main and beyond.
      CHECK(contains(run.captured_stdout, "unwind 5 end 1 "));
      auto number_after = [&](const std::string& key) {
        size_t at = run.captured_stdout.find(" " + key + " ");
        return at == std::string::npos ? -1 : std::stoi(run.captured_stdout.substr(at + key.size() + 2));
      };
      int frames = number_after("frames"), walk_frame = number_after("walk"), main_frame = number_after("main");
      CHECK(walk_frame > 0);
      CHECK(main_frame == walk_frame + 1);
      CHECK(frames > main_frame);

      std::string thrower = dir.path + "/thrower";
      std::vector<std::string> link_throw = {"c++", pie, "-o", thrower, dir.path + "/throw.o", dir.path + "/through.o"};
      link_throw.insert(link_throw.begin() + 1, linker.begin(), linker.end());
      auto link_cxx = shell(shell_join(link_throw));
      INFO(link_cxx.captured_stdout);
      REQUIRE(link_cxx.exit_code == 0);
      auto caught = shell(shell_join({thrower}));
      CHECK(caught.exit_code == 0);
      CHECK(caught.captured_stdout == "caught: thrown through a stamp frame\n");
    }
  }
}

TEST_CASE("stamp objects are deterministic", "[elf_writer]") {
  auto fs = test_functions();
  std::string first = write_stamp_object(fs, "unit.c");
  std::string second = write_stamp_object(test_functions(), "unit.c");
  CHECK(first == second);
  CHECK(write_stamp_object(fs, "unit.c") == first);
  CHECK(write_stamp_object(fs, "other.c") != first);
  // No functions: still a valid object (the CIE alone in .eh_frame).
  ObjectInfo empty = read_object(write_stamp_object(std::vector<StampFunction>{}, "empty.c"));
  CHECK(empty.sections ==
        std::vector<std::string>{"", ".eh_frame", ".note.GNU-stack", ".symtab", ".strtab"});
  CHECK(empty.relocations.empty());
}

TEST_CASE("objects with more than 65279 sections use extended section numbering", "[elf_writer]") {
  // f0 returns 0, and each fN returns f(N-1) + 1: 2 sections per function.
  const int count = 33000;
  std::vector<StampFunction> fs;
  fs.push_back(function("f0", {0x31, 0xC0}));  // xor eax, eax
  for (int i = 1; i < count; ++i) {
    fs.push_back(function("f" + std::to_string(i), {0xE8, 0, 0, 0, 0, 0x83, 0xC0, 0x01},  // call; add eax, 1
                          {{1, kRelocPlt32, "f" + std::to_string(i - 1), -4}}));
    fs.back().binding = i % 2 ? SymbolBinding::local : SymbolBinding::global;
  }
  fs.back().binding = SymbolBinding::global;
  std::string bytes = write_stamp_object(fs, "many.c");
  ObjectInfo info = read_object(bytes);
  REQUIRE(info.sections.size() == 1 + 2 * count - 1 + 6);  // + .symtab_shndx
  CHECK(info.sections[info.sections.size() - 2] == ".symtab_shndx");
  const SymbolInfo* last = find_symbol_info(info, "f" + std::to_string(count - 1));
  REQUIRE(last);
  CHECK(last->section == ".text.f" + std::to_string(count - 1));
  CHECK(has_relocation(info, ".eh_frame", 24 + uint64_t(count - 1) * 32 + 8, llvm::ELF::R_X86_64_PC32,
                       ".text.f" + std::to_string(count - 1), 0));

  ScratchDir dir;
  write_file_atomic(dir.path + "/many.o", bytes);
  write_file_atomic(dir.path + "/main.c",
                    "#include <stdio.h>\nint f" + std::to_string(count - 1) +
                        "(void);\nint main(void) { printf(\"%d\\n\", f" + std::to_string(count - 1) +
                        "()); return 0; }\n");
  auto readelf = shell(shell_join({"readelf", "-h", "-S", "-s", "-W", dir.path + "/many.o"}));
  CHECK(readelf.exit_code == 0);
  CHECK_FALSE(contains(readelf.captured_stdout, "arning"));
  auto link = shell(shell_join({"cc", "-o", dir.path + "/many", dir.path + "/main.c", dir.path + "/many.o"}));
  INFO(link.captured_stdout);
  REQUIRE(link.exit_code == 0);
  auto run = shell(shell_join({dir.path + "/many"}));
  CHECK(run.exit_code == 0);
  CHECK(run.captured_stdout == std::to_string(count - 1) + "\n");
}

TEST_CASE("impossible stamp input is an internal error", "[elf_writer]") {
  auto fs = test_functions();
  auto expect_internal = [](const std::vector<StampFunction>& input, const std::string& reason) {
    try {
      write_stamp_object(input, "bad.c");
      FAIL("no error for: " << reason);
    } catch (const KilnError& e) {
      CHECK(e.code() == kExitInternal);
      CHECK(e.path() == "bad.c");
      CHECK(contains(e.what(), reason));
    }
  };
  auto past_end = fs;
  past_end[1].relocations[0].offset = static_cast<uint32_t>(past_end[1].code.size());
  expect_internal(past_end, "past the end");
  auto overhanging = fs;  // the 4-byte field would run past the end
  overhanging[1].relocations[0].offset = static_cast<uint32_t>(overhanging[1].code.size() - 3);
  expect_internal(overhanging, "past the end");
  auto last_fits = fs;
  last_fits[1].relocations[0].offset = static_cast<uint32_t>(last_fits[1].code.size() - 4);
  CHECK_NOTHROW(write_stamp_object(last_fits, "bad.c"));
  auto duplicate = fs;
  duplicate.push_back(function("answer", {0x90}));
  expect_internal(duplicate, "defined twice");
  auto duplicate_local = fs;
  duplicate_local.push_back(function("seven", {0x90}));
  duplicate_local.back().binding = SymbolBinding::local;
  expect_internal(duplicate_local, "defined twice");
  auto unnamed = fs;
  unnamed[0].name.clear();
  expect_internal(unnamed, "no name");
  auto no_symbol = fs;
  no_symbol[1].relocations[0].symbol.clear();
  expect_internal(no_symbol, "names no symbol");
  auto unknown_type = fs;
  unknown_type[1].relocations[0].type = 9999;
  expect_internal(unknown_type, "unsupported relocation type");
}

// The writer's index of symbol names: equal strings (at other addresses too) get the
// first one's id, through the table's growth from empty.
TEST_CASE("the string index gives equal strings the first id, across growth", "[elf_writer]") {
  std::vector<std::string> first, again;
  for (int k = 0; k < 5000; ++k) first.push_back("_ZN5regex4exec" + std::to_string(k * 7919) + "E");
  for (int k = 4999; k >= 0; --k) again.push_back(first[static_cast<size_t>(k)]);  // copies: other addresses
  StringIndex index;
  index.reset(0);
  for (uint32_t k = 0; k < first.size(); ++k) {
    bool inserted = false;
    CHECK(index.insert(first[k], k, &inserted) == k);
    CHECK(inserted);
  }
  for (uint32_t k = 0; k < again.size(); ++k) {
    bool inserted = true;
    CHECK(index.insert(again[k], 100000 + k, &inserted) == 4999 - k);
    CHECK_FALSE(inserted);
  }
  CHECK(index.insert("", 7) == 7);  // the empty string is a string like any other
  CHECK(index.insert(std::string_view(), 8) == 7);
}
