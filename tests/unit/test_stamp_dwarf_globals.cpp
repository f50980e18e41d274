// stamp's DWARF for global variables (flat_debug.h's FlatDebugGlobal): both exporters
// keep the same ones, the object that holds a global's memory describes it at its
// symbol's address (DW_OP_addr, relocated), and one that does not (the stamp part of a
// split module) leaves it to the object that does. Whether gdb prints them is
// tests/integration/capture_c.sh's.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/DebugInfo/DWARF/DWARFContext.h>
#include <llvm/Object/ObjectFile.h>

#include "backend_llvm.h"
#include "backend_stamp.h"
#include "direct_export.h"
#include "error.h"
#include "flat_file.h"
#include "fs.h"
#include "reader_check.h"
#include "scratch_dir.h"
#include "stamp_whole.h"
#include "test_helpers.h"

using namespace kiln;

namespace {

// Kept: an external int, a static one, a struct, a const array, a pointer to a string,
// an enum, a thread-local, and a static inside a function (inside the function's DIE).
// Left out: a declaration, and a global without !dbg.
const char* kSource = R"C(
struct point { int x, y; };
enum mode { SLOW = 1, FAST = 7 };
extern int elsewhere;
int total = 40;
static int calls;
struct point origin = {3, 4};
const short table[4] = {1, 2, 3, 5};
const char *greeting = "hi";
enum mode current = FAST;
_Thread_local int per_thread;
int bump(int k) {
  static int inner = 2;
  calls += k + inner + per_thread;
  return total + calls + origin.y + table[3] + elsewhere + (int)current + greeting[0];
}
)C";

std::string compile_globals(const std::string& flags) {
  kiln_test::ScratchDir scratch;
  const std::string in = scratch.path + "/g.c", out = scratch.path + "/g.bc";
  std::ofstream(in) << kSource;
  if (kiln_test::shell(kiln_test::llvm_tool("clang") + " " + flags + " -c -emit-llvm -o '" + out + "' '" + in + "'")
          .exit_code != 0)
    return "";
  return read_file(out);
}

// Per DW_TAG_variable directly in the unit: its name and the symbol its DW_OP_addr's
// relocation names (empty: no location, or no relocation there); a thread-local's
// DW_OP_const8u (its offset in the TLS block, relocated R_X86_64_DTPOFF64) then
// DW_OP_GNU_push_tls_address gives "SYMBOL@dtpoff".
std::map<std::string, std::string> unit_globals(const std::string& object) {
  auto file = llvm::cantFail(llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(object, "g.o")));
  // .debug_info's relocations by offset: the symbol each names.
  std::map<uint64_t, std::string> relocated;
  for (const llvm::object::SectionRef& s : file->sections()) {
    llvm::Expected<llvm::object::section_iterator> target = s.getRelocatedSection();
    if (!target || *target == file->section_end() || llvm::cantFail((*target)->getName()) != ".debug_info") continue;
    for (const llvm::object::RelocationRef& r : s.relocations())
      if (r.getSymbol() != file->symbol_end())
        relocated[r.getOffset()] = llvm::cantFail(r.getSymbol()->getName()).str() +
            (r.getType() == llvm::ELF::R_X86_64_DTPOFF64 ? "@dtpoff" : "");
  }
  std::map<std::string, std::string> out;
  auto ctx = llvm::DWARFContext::create(*file);
  for (const auto& unit : ctx->compile_units())
    for (const llvm::DWARFDie& die : unit->getUnitDIE(false).children()) {
      if (die.getTag() != llvm::dwarf::DW_TAG_variable) continue;
      std::string symbol;
      for (const llvm::DWARFAttribute& a : die.attributes()) {
        if (a.Attr != llvm::dwarf::DW_AT_location || !a.Value.getAsBlock()) continue;
        // exprloc 9 bytes long: DW_OP_addr, then the 8 bytes the relocation fills.
        const auto block = *a.Value.getAsBlock();
        if (block.size() == 9 && block[0] == 0x03 && relocated.count(a.Offset + 2)) symbol = relocated[a.Offset + 2];
        if (block.size() == 10 && block[0] == 0x0e && block[9] == 0xe0 && relocated.count(a.Offset + 2))
          symbol = relocated[a.Offset + 2];
      }
      out[die.getShortName() ? die.getShortName() : ""] = symbol;
    }
  return out;
}

// "FUNCTION:VARIABLE" for each DW_TAG_variable with a location directly inside a
// subprogram (a static; the function's locals are in its frame, DW_OP_fbreg).
std::vector<std::string> function_statics(const std::string& object) {
  auto file = llvm::cantFail(llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(object, "g.o")));
  auto ctx = llvm::DWARFContext::create(*file);
  std::vector<std::string> out;
  for (const auto& unit : ctx->compile_units())
    for (const llvm::DWARFDie& sp : unit->getUnitDIE(false).children()) {
      if (sp.getTag() != llvm::dwarf::DW_TAG_subprogram) continue;
      for (const llvm::DWARFDie& v : sp.children())
        if (auto loc = v.find(llvm::dwarf::DW_AT_location);
            v.getTag() == llvm::dwarf::DW_TAG_variable && loc && loc->getAsBlock() && (*loc->getAsBlock())[0] == 0x03)
          out.push_back(std::string(sp.getShortName()) + ":" + v.getShortName());
    }
  return out;
}

}  // namespace

TEST_CASE("stamp DWARF globals: both exporters keep the same global variables", "[dwarf]") {
  for (const char* flags : {"-g -O0", "-g -O1", "-gdwarf-5 -O0"}) {
    INFO(flags);
    const std::string bitcode = compile_globals(flags);
    REQUIRE_FALSE(bitcode.empty());
    const ReaderComparison r = compare_reader(bitcode, "g.bc");
    INFO(r.detail);
    CHECK(r.outcome == ReaderComparison::kIdentical);
    const DirectExport direct = export_direct(bitcode, "g.bc", "0123456789ab");
    std::vector<std::string> names;
    for (const FlatDebugGlobal& g : direct.flat.debug.globals) names.push_back(g.name);
    // Module order (clang's: as the source defines them); at -O1 the unused static
    // and the constant folded into its use may be gone.
    // clang's order: definitions as they come, the static when it is first used, and its
    // string literals' (unnamed, local) with them.
    if (std::string(flags).find("-O0") != std::string::npos)
      CHECK(names ==
            std::vector<std::string>{"total", "origin", "table", "", "greeting", "current", "inner", "per_thread",
                                     "calls"});
    for (const FlatDebugGlobal& g : direct.flat.debug.globals) {
      INFO(g.name);
      // A local's symbol carries the tag after it; a function's static, its function's name before.
      CHECK(direct.flat.symbols.at(g.symbol).find(g.name) == (g.name == "inner" ? 5 : 0));
      CHECK(g.function == (g.name == "inner" ? 1u : 0u));  // bump, the only function
      CHECK(g.type != 0);
      CHECK(g.line > 0);
      CHECK(g.local_to_unit == (g.name == "calls" || g.name == "inner" || g.name.empty()));
    }
  }
}

TEST_CASE("stamp DWARF globals: the object that holds their memory describes them at their symbols", "[dwarf]") {
  const std::string bitcode = compile_globals("-g -O0");
  REQUIRE_FALSE(bitcode.empty());
  LlvmBackend llvm(Profile::fast);
  ParsedModule m = llvm.parse(bitcode, "g.bc");
  StampPlan plan = plan_stamp_module(*m, "0123456789ab");
  REQUIRE(plan.whole);
  const std::string object = write_stamp_part(plan, *m);
  const std::map<std::string, std::string> globals = unit_globals(object);
  // The names of the symbols: locals renamed (expose_local_symbols), the others as they are.
  CHECK(globals.size() == 8);  // with the unnamed string literal's
  CHECK(globals.count(""));
  for (const char* name : {"total", "origin", "table", "greeting", "current"}) {
    INFO(name);
    REQUIRE(globals.count(name));
    CHECK(globals.at(name) == name);
  }
  REQUIRE(globals.count("calls"));
  CHECK(globals.at("calls").rfind("calls.kiln.", 0) == 0);
  CHECK(!globals.count("inner"));  // not in the unit: inside bump's DIE
  CHECK(function_statics(object) == std::vector<std::string>{"bump:inner"});
  REQUIRE(globals.count("per_thread"));
  CHECK(globals.at("per_thread") == "per_thread@dtpoff");
  CHECK(!globals.count("elsewhere"));

  // Without the data (a split module's stamp part, LLVM's half writing the globals):
  // no variable, and the flat module's types stay without a relocation to a symbol
  // the object does not define.
  const std::string part = write_stamp_object_for(plan.flat.flat, {}, "g.c", run_stamp_cpu(plan.flat.flat.view(), 1));
  CHECK(unit_globals(part).empty());
}

TEST_CASE("stamp DWARF globals: the flat file carries them, and refuses them out of range", "[dwarf][flat]") {
  const std::string bitcode = compile_globals("-g -O0");
  REQUIRE_FALSE(bitcode.empty());
  const DirectExport direct = export_direct(bitcode, "g.bc", "0123456789ab");
  const FlatModuleData& flat = direct.flat;
  REQUIRE(flat.debug.globals.size() == 9);
  FlatModuleData back = read_flat_file(write_flat_file(flat, "g.c"), "g.flat");
  CHECK(back.debug == flat.debug);
  FlatModuleData bad = flat;
  bad.debug.globals[0].symbol = static_cast<uint32_t>(flat.symbols.size());
  CHECK(check_flat_module(bad) == "debug global's symbol out of range");
  bad = flat;
  bad.debug.globals[0].type = static_cast<uint32_t>(flat.debug.types.size() + 1);
  CHECK(check_flat_module(bad) == "debug type out of range");
  bad = flat;
  bad.debug.globals[0].scope = static_cast<uint32_t>(flat.debug.scopes.size() + 1);
  CHECK(check_flat_module(bad) == "debug scope out of range");
  bad = flat;
  bad.debug.globals[0].function = static_cast<uint32_t>(flat.functions.size() + 1);
  CHECK(check_flat_module(bad) == "debug global's function out of range");
  CHECK_THROWS_AS(read_flat_file(write_flat_file(bad, "g.c"), "bad.flat"), KilnError);
  // Line tables only (-gline-tables-only): no variables, no globals.
  const std::string lines = compile_globals("-gline-tables-only -O0");
  REQUIRE_FALSE(lines.empty());
  CHECK(export_direct(lines, "l.bc", "0123456789ab").flat.debug.globals.empty());
}

// Debug information LLVM's verifier calls broken makes LLVM's reader drop all of it; the
// direct reader then declines the module (LLVM's route takes it), for a global it keeps
// and for one it does not, rather than carry what LLVM's route drops.
TEST_CASE("stamp DWARF globals: broken global variable metadata declines the module", "[dwarf]") {
  const std::string head = R"LL(
source_filename = "b.c"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"
@gx = dso_local global i32 1, align 4, !dbg !0
@gt = thread_local global i32 2, align 4, !dbg !TLS
define dso_local i32 @fn() !dbg !16 {
  %1 = load i32, ptr @gx, align 4, !dbg !19
  ret i32 %1, !dbg !19
}
!llvm.dbg.cu = !{!2}
!llvm.module.flags = !{!8, !9}
!0 = !DIGlobalVariableExpression(var: !1, expr: !DIExpression())
!2 = distinct !DICompileUnit(language: DW_LANG_C11, file: !3, producer: "clang", isOptimized: false, runtimeVersion: 0, emissionKind: FullDebug)
!3 = !DIFile(filename: "b.c", directory: "/tmp")
!5 = !DIGlobalVariableExpression(var: !6, expr: !DIExpression())
!6 = distinct !DIGlobalVariable(name: "gt", scope: !2, file: !3, line: 2, type: !7, isLocal: false, isDefinition: true)
!7 = !DIBasicType(name: "int", size: 32, encoding: DW_ATE_signed)
!8 = !{i32 7, !"Dwarf Version", i32 5}
!9 = !{i32 2, !"Debug Info Version", i32 3}
!16 = distinct !DISubprogram(name: "fn", scope: !3, file: !3, line: 3, type: !17, scopeLine: 3, spFlags: DISPFlagDefinition, unit: !2)
!17 = !DISubroutineType(types: !18)
!18 = !{!7}
!19 = !DILocation(line: 3, column: 23, scope: !16)
)LL";
  const std::string good_var =
      "!1 = distinct !DIGlobalVariable(name: \"gx\", scope: !2, file: !3, line: 1, type: !7, isLocal: false, "
      "isDefinition: true)\n";
  auto module = [&](const std::string& var, const char* tls_dbg) {
    std::string text = head + var;
    text.replace(text.find("!TLS"), 4, tls_dbg);
    kiln_test::ScratchDir scratch;
    std::ofstream(scratch.path + "/b.ll") << text;
    const std::string out = scratch.path + "/b.bc";
    REQUIRE(kiln_test::shell(kiln_test::llvm_tool("llvm-as") + " -disable-verify -o '" + out + "' '" + scratch.path +
                             "/b.ll'")
                .exit_code == 0);
    return read_file(out);
  };
  const ReaderComparison fine = compare_reader(module(good_var, "!5"), "b.bc");
  CHECK(fine.outcome == ReaderComparison::kIdentical);
  struct Case {
    const char* what;
    std::string var;
    const char* tls_dbg;
  };
  for (const Case& k : {Case{"a definition without a type",
                             "!1 = distinct !DIGlobalVariable(name: \"gx\", scope: !2, file: !3, line: 1, isLocal: "
                             "false, isDefinition: true)\n",
                             "!5"},
                        Case{"a scope that is a location",
                             "!1 = distinct !DIGlobalVariable(name: \"gx\", scope: !19, file: !3, line: 1, type: !7, "
                             "isLocal: false, isDefinition: true)\n",
                             "!5"},
                        Case{"a thread-local's !dbg that is a type", good_var, "!7"}}) {
    INFO(k.what);
    const ReaderComparison r = compare_reader(module(k.var, k.tls_dbg), "b.bc");
    INFO(r.detail);
    CHECK(r.outcome == ReaderComparison::kModuleDeclined);
  }
}
