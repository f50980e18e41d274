// stamp's DWARF (lib/stamp/stamp_dwarf.h) read back with LLVM's DWARF reader: the
// verifier's verdict, the line table against each instruction's own location and
// llvm -O0's rows (lib/line_check.h, what kiln-emit --check-lines runs), the DIE tree,
// and the flat file's debug section.
#include <catch2/catch.hpp>

#include <map>
#include <tuple>

#include <llvm/DebugInfo/DWARF/DWARFContext.h>
#include <llvm/Object/ObjectFile.h>

#include "backend_llvm.h"
#include "backend_stamp.h"
#include "error.h"
#include "flat_file.h"
#include "hash.h"
#include "ir_helpers.h"
#include "line_check.h"
#include "reader_check.h"

using namespace kiln;

namespace {

// Two files, a namespace and a type as scopes, a lexical block, a line 0 and a call
// whose row must name the call's line.
std::string debug_module(const char* dwarf_version, const char* emission) {
  std::string ir = R"(
target triple = "x86_64-unknown-linux-gnu"
define i64 @"_ZN4demo3sum17h0000000000000001E"(i64 %a, i64 %b) !dbg !10 {
  %s = add i64 %a, %b, !dbg !20
  %t = mul i64 %s, 3, !dbg !21
  %u = sub i64 %t, %a, !dbg !22
  %v = call i64 @"_ZN4demo5Point4norm17h0000000000000002E"(i64 %u), !dbg !23
  %w = xor i64 %v, 1, !dbg !24
  ret i64 %w, !dbg !25
}
define internal i64 @"_ZN4demo5Point4norm17h0000000000000002E"(i64 %x) !dbg !30 {
  %y = shl i64 %x, 1, !dbg !31
  %z = or i64 %y, 1, !dbg !32
  ret i64 %z, !dbg !33
}
define i64 @no_debug(i64 %x) {
  %y = add i64 %x, 7
  ret i64 %y
}
!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3, !4}
!0 = distinct !DICompileUnit(language: DW_LANG_Rust, file: !1, producer: "kiln test", isOptimized: false, runtimeVersion: 0, emissionKind: EMISSION)
!1 = !DIFile(filename: "src/lib.rs", directory: "/work/demo")
!2 = !DIFile(filename: "src/point.rs", directory: "/work/demo")
!3 = !{i32 7, !"Dwarf Version", i32 VERSION}
!4 = !{i32 2, !"Debug Info Version", i32 3}
!5 = !DINamespace(name: "demo", scope: null)
!6 = !DICompositeType(tag: DW_TAG_structure_type, name: "Point", scope: !5, file: !2, size: 64, align: 64, elements: !{}, identifier: "point")
!7 = !DISubroutineType(types: !{})
!10 = distinct !DISubprogram(name: "sum", linkageName: "_ZN4demo3sum17h0000000000000001E", scope: !5, file: !1, line: 3, type: !7, scopeLine: 3, spFlags: DISPFlagDefinition, unit: !0)
!11 = distinct !DILexicalBlock(scope: !10, file: !1, line: 5, column: 9)
!20 = !DILocation(line: 4, column: 5, scope: !10)
!21 = !DILocation(line: 5, column: 13, scope: !11)
!22 = !DILocation(line: 0, scope: !10)
!23 = !DILocation(line: 6, column: 9, scope: !10)
!24 = !DILocation(line: 7, column: 5, scope: !10)
!25 = !DILocation(line: 8, column: 2, scope: !10)
!30 = distinct !DISubprogram(name: "norm", linkageName: "_ZN4demo5Point4norm17h0000000000000002E", scope: !6, file: !2, line: 20, type: !7, scopeLine: 21, spFlags: DISPFlagLocalToUnit | DISPFlagDefinition, unit: !0)
!31 = !DILocation(line: 22, column: 9, scope: !30)
!32 = !DILocation(line: 23, column: 9, scope: !30)
!33 = !DILocation(line: 24, column: 6, scope: !30)
)";
  auto replace = [&](const std::string& key, const std::string& value) { ir.replace(ir.find(key), key.size(), value); };
  replace("EMISSION", emission);
  replace("VERSION", dwarf_version);
  return kiln_test::bitcode_from_ir(ir);
}

// stamp's object for a module's stamp functions, as the stamp back end writes it.
std::string stamp_object(const std::string& bitcode) {
  LlvmBackend llvm(Profile::fast);
  ParsedModule m = llvm.parse(bitcode, "test");
  StampPlan plan = plan_stamp_module(*m, xxh3_128_hex(bitcode).substr(0, 12));
  return write_stamp_part(plan, *m);
}

// "ns::Type::name" for each subprogram DIE of the object's unit, from its parents.
std::vector<std::string> qualified_subprograms(const std::string& object) {
  auto file = llvm::cantFail(llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(object, "stamp")));
  auto ctx = llvm::DWARFContext::create(*file);
  std::vector<std::string> names;
  for (const auto& unit : ctx->compile_units())
    for (const auto& entry : unit->dies()) {
      llvm::DWARFDie die(unit.get(), &entry);
      if (die.getTag() != llvm::dwarf::DW_TAG_subprogram) continue;
      std::string name = die.getShortName();
      for (llvm::DWARFDie p = die.getParent(); p && p.getTag() != llvm::dwarf::DW_TAG_compile_unit; p = p.getParent())
        name = std::string(p.getShortName()) + "::" + name;
      names.push_back(name);
    }
  return names;
}

}  // namespace

TEST_CASE("stamp DWARF: line tables exact and as llvm's, the verifier content, DWARF 4 and 5", "[dwarf]") {
  for (const char* version : {"4", "5"}) {
    LineAgreement r = check_lines(debug_module(version, "FullDebug"), "debug module");
    INFO("DWARF " << version << ": " << r.verify_errors << r.first_difference);
    CHECK(r.has_debug_info);
    CHECK(r.verify_errors.empty());
    CHECK(r.functions == 2);  // no_debug has no subprogram
    CHECK(r.instructions >= 8);
    CHECK(r.exact == r.instructions);
    CHECK(r.as_llvm == r.instructions);
    CHECK(r.llvm_functions == 2);
  }
  LineAgreement lines_only = check_lines(debug_module("4", "LineTablesOnly"), "line tables only");
  CHECK(lines_only.verify_errors.empty());
  CHECK(lines_only.exact == lines_only.instructions);
  CHECK(lines_only.instructions >= 8);
}

TEST_CASE("stamp DWARF: subprograms inside their namespace and type, as debuggers qualify them", "[dwarf]") {
  std::vector<std::string> names = qualified_subprograms(stamp_object(debug_module("4", "FullDebug")));
  // A scope's inner scopes come before its subprograms.
  CHECK(names == std::vector<std::string>{"demo::Point::norm", "demo::sum"});
}

TEST_CASE("stamp DWARF: none for a module without debug information, or whose unit is NoDebug", "[dwarf]") {
  for (const std::string& bitcode :
       {kiln_test::bitcode_from_ir(kiln_test::kAddIr), debug_module("4", "NoDebug")}) {
    std::string object = stamp_object(bitcode);
    CHECK(object.find(".debug_info") == std::string::npos);
    CHECK(object.find(".debug_line") == std::string::npos);
    CHECK_FALSE(check_lines(bitcode, "no debug").has_debug_info);
  }
}

TEST_CASE("stamp DWARF: the flat file carries the debug information, and refuses it out of range", "[dwarf]") {
  LlvmBackend llvm(Profile::fast);
  std::string bitcode = debug_module("5", "FullDebug");
  ParsedModule m = llvm.parse(bitcode, "test");
  StampPlan plan = plan_stamp_module(*m, "0123456789ab");
  const FlatModuleData& flat = plan.flat.flat;
  REQUIRE(flat.debug.present());
  CHECK(flat.debug.dwarf_version == 5);
  CHECK(flat.debug.files.size() == 2);
  CHECK(flat.debug.scopes.size() == 2);
  FlatModuleData back = read_flat_file(write_flat_file(flat, "lib.rs"), "test.flat");
  CHECK(back.debug == flat.debug);
  CHECK_FALSE(read_flat_file(write_flat_file(flat, "lib.rs", FlatFileDebug::omit), "test.flat").debug.present());
  // The emission from the file alone (the GPU machine's route) writes the same DWARF.
  CHECK(emit_flat_module(back, "lib.rs") == emit_flat_module(flat, "lib.rs"));

  FlatModuleData bad = flat;
  bad.debug.locations[0].file = 3;
  CHECK(check_flat_module(bad) == "debug file out of range");
  bad = flat;
  bad.debug.locations.pop_back();
  CHECK(check_flat_module(bad) == "debug locations not one per instruction");
  bad = flat;
  bad.debug.scopes[0].parent = 2;
  CHECK(check_flat_module(bad) == "debug scope's parent not before it");
  bad = flat;  // a chain of scopes deeper than the writer recurses
  for (uint32_t s = 0; s <= kMaxDebugNesting; ++s)
    bad.debug.scopes.push_back({static_cast<uint32_t>(bad.debug.scopes.size()), kDwarfTagNamespace, "deep"});
  CHECK(check_flat_module(bad) == "debug scopes nested too deep");
  bad = flat;
  bad.debug.dwarf_version = 0;
  CHECK(check_flat_module(bad) == "debug information without a version");
  CHECK_THROWS_AS(read_flat_file(write_flat_file(bad, "lib.rs"), "bad.flat"), KilnError);
}

TEST_CASE("stamp DWARF: an output without instruction offsets is an internal error, not a wild table", "[dwarf]") {
  LlvmBackend llvm(Profile::fast);
  std::string bitcode = debug_module("4", "FullDebug");
  ParsedModule m = llvm.parse(bitcode, "test");
  StampPlan plan = plan_stamp_module(*m, "0123456789ab");
  StampOutput code = run_stamp_cpu(plan.flat.flat.view(), 1);
  code.inst_offset.clear();
  CHECK_THROWS_AS(build_stamp_dwarf(plan.flat.flat, code, "test"), KilnError);
  code = run_stamp_cpu(plan.flat.flat.view(), 1);
  code.inst_offset[1] = code.code_size[0] + 1;
  CHECK_THROWS_AS(build_stamp_dwarf(plan.flat.flat, code, "test"), KilnError);
}

namespace {

// The DWARF sections of an object, read back by LLVM (which reads the object's bytes
// in place: they are kept here).
struct ObjectDwarf {
  std::string object;
  std::unique_ptr<llvm::object::ObjectFile> file;
  std::unique_ptr<llvm::DWARFContext> ctx;
  explicit ObjectDwarf(std::string bytes)
      : object(std::move(bytes)),
        file(llvm::cantFail(llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(object, "stamp")))),
        ctx(llvm::DWARFContext::create(*file)) {}
};

}  // namespace

// Blocks nest inside each inlined call: the writer's depth is the product of the two
// chains, each within kMaxDebugNesting (a recursion per level ran out of stack).
TEST_CASE("stamp DWARF: blocks inside inlined calls inside blocks, each chain as deep as allowed", "[dwarf]") {
  LlvmBackend llvm(Profile::fast);
  ParsedModule m = llvm.parse(debug_module("5", "FullDebug"), "test");
  StampPlan plan = plan_stamp_module(*m, "0123456789ab");
  FlatModuleData deep = plan.flat.flat;
  FlatDebugInfo& d = deep.debug;
  const uint32_t n = kMaxDebugNesting;
  d.inlined.push_back(
      {.has_subprogram = true, .file = 1, .line = 9, .scope_line = 9, .name = "callee", .linkage_name = ""});
  // A chain of n blocks in the function and in each callee; call k is in chain k's
  // innermost block, inside call k - 1.
  const uint32_t first_block = static_cast<uint32_t>(d.blocks.size());
  for (uint32_t chain = 0; chain <= n; ++chain)
    for (uint32_t b = 0; b < n; ++b) d.blocks.push_back({b ? static_cast<uint32_t>(d.blocks.size()) : 0, 1, b + 1, 1});
  auto block_end = [&](uint32_t chain) { return first_block + chain * n + n; };
  const uint32_t first_site = static_cast<uint32_t>(d.inline_sites.size());
  for (uint32_t k = 0; k < n; ++k)
    d.inline_sites.push_back(
        {k ? first_site + k : 0, static_cast<uint32_t>(d.inlined.size()), 1, k + 1, 1, block_end(k)});
  const FlatFunction& f = deep.functions[0];
  for (uint32_t i = f.first_inst; i < f.first_inst + f.inst_count; ++i)
    d.locations[i] = {1, 99, 1, first_site + n, block_end(n)};
  REQUIRE(check_flat_module(deep).empty());
  ObjectDwarf dwarf(emit_flat_module(deep, "lib.rs"));
  size_t calls = 0, deepest = 0;
  for (const auto& unit : dwarf.ctx->compile_units())
    for (const auto& entry : unit->dies()) {
      llvm::DWARFDie die(unit.get(), &entry);
      if (die.getTag() != llvm::dwarf::DW_TAG_inlined_subroutine) continue;
      ++calls;
      size_t depth = 0;
      for (llvm::DWARFDie p = die.getParent(); p.getTag() == llvm::dwarf::DW_TAG_inlined_subroutine; p = p.getParent())
        ++depth;
      deepest = std::max(deepest, depth);
    }
  CHECK(calls == n);
  CHECK(deepest == n - 1);  // the blocks hold no variables: no DIEs between the calls
}

// The prologue ends at the first row with a line, not at a line-0 row before it, and a
// line-0 row is no statement (llc's rows for the same function).
TEST_CASE("stamp DWARF: prologue_end on the first row with a line", "[dwarf]") {
  const std::string bitcode = kiln_test::bitcode_from_ir(R"(
target triple = "x86_64-unknown-linux-gnu"
@g = global i32 0
define i32 @f(i32 %x) !dbg !4 {
  %v = load volatile i32, ptr @g, !dbg !8
  %a = add i32 %x, %v, !dbg !8
  store volatile i32 %a, ptr @g, !dbg !8
  %b = mul i32 %a, 3, !dbg !7
  store volatile i32 %b, ptr @g, !dbg !7
  ret i32 %b, !dbg !7
}
!llvm.dbg.cu = !{!1}
!llvm.module.flags = !{!5, !6}
!0 = !DIFile(filename: "l0.c", directory: "/tmp")
!1 = distinct !DICompileUnit(language: DW_LANG_C11, file: !0, producer: "test", isOptimized: false, runtimeVersion: 0, emissionKind: FullDebug)
!2 = !DISubroutineType(types: !3)
!3 = !{null}
!4 = distinct !DISubprogram(name: "f", scope: !0, file: !0, line: 3, type: !2, scopeLine: 3, spFlags: DISPFlagDefinition, unit: !1)
!5 = !{i32 7, !"Dwarf Version", i32 5}
!6 = !{i32 2, !"Debug Info Version", i32 3}
!7 = !DILocation(line: 5, column: 2, scope: !4)
!8 = !DILocation(line: 0, column: 0, scope: !4)
)");
  ObjectDwarf dwarf(stamp_object(bitcode));
  REQUIRE(dwarf.ctx->getNumCompileUnits() == 1);
  const llvm::DWARFDebugLine::LineTable* table =
      dwarf.ctx->getLineTableForUnit(dwarf.ctx->compile_units().begin()->get());
  REQUIRE(table);
  std::vector<uint32_t> prologue_ends;
  for (const auto& row : table->Rows) {
    if (row.PrologueEnd) prologue_ends.push_back(row.Line);
    if (row.Line == 0) CHECK_FALSE(row.IsStmt);
  }
  CHECK(prologue_ends == std::vector<uint32_t>{5});
  CHECK(check_lines(bitcode, "line 0 first").verify_errors.empty());
}

namespace {

// A C function returning int, a void one, and a callee returning long inlined into the
// first (its abstract subprogram's type), with a variable of that type too: the queue
// meets one type from a subprogram, an inlined callee and a variable.
std::string return_type_module(const char* language, const char* emission) {
  std::string ir = R"(
target triple = "x86_64-unknown-linux-gnu"
define i32 @sum(ptr %p, i32 %n) !dbg !10 {
  %t = alloca i64, align 8
    #dbg_declare(ptr %t, !50, !DIExpression(), !20)
  %a = load i32, ptr %p, align 4, !dbg !20
  %w = shl i32 %a, 1, !dbg !44
  %s = add i32 %w, %n, !dbg !21
  %x = sext i32 %s to i64, !dbg !21
  store i64 %x, ptr %t, align 8, !dbg !21
  ret i32 %s, !dbg !21
}
define void @clear(ptr %p) !dbg !30 {
  store i32 0, ptr %p, align 4, !dbg !31
  ret void, !dbg !31
}
!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!1, !2}
!0 = distinct !DICompileUnit(language: LANGUAGE, file: !3, producer: "kiln test", isOptimized: false, runtimeVersion: 0, emissionKind: EMISSION)
!1 = !{i32 7, !"Dwarf Version", i32 5}
!2 = !{i32 2, !"Debug Info Version", i32 3}
!3 = !DIFile(filename: "r.c", directory: "/src")
!4 = !DIBasicType(name: "int", size: 32, encoding: DW_ATE_signed)
!5 = !DIDerivedType(tag: DW_TAG_pointer_type, baseType: !4, size: 64)
!6 = !DISubroutineType(types: !7)
!7 = !{!4, !5, !4}
!8 = !DISubroutineType(types: !9)
!9 = !{null, !5}
!10 = distinct !DISubprogram(name: "sum", scope: !3, file: !3, line: 1, type: !6, scopeLine: 1, flags: DIFlagPrototyped, spFlags: DISPFlagDefinition, unit: !0)
!20 = !DILocation(line: 2, column: 3, scope: !10)
!21 = !DILocation(line: 3, column: 3, scope: !10)
!30 = distinct !DISubprogram(name: "clear", scope: !3, file: !3, line: 5, type: !8, scopeLine: 5, flags: DIFlagPrototyped, spFlags: DISPFlagDefinition, unit: !0)
!31 = !DILocation(line: 6, column: 3, scope: !30)
!40 = distinct !DISubprogram(name: "twice", scope: !3, file: !3, line: 8, type: !41, scopeLine: 8, flags: DIFlagPrototyped, spFlags: DISPFlagDefinition | DISPFlagLocalToUnit, unit: !0)
!41 = !DISubroutineType(types: !42)
!42 = !{!43, !4}
!43 = !DIBasicType(name: "long", size: 64, encoding: DW_ATE_signed)
!44 = !DILocation(line: 9, column: 5, scope: !40, inlinedAt: !45)
!45 = !DILocation(line: 2, column: 10, scope: !10)
!50 = !DILocalVariable(name: "t", scope: !10, file: !3, line: 2, type: !43)
)";
  auto replace = [&](const std::string& key, const std::string& value) { ir.replace(ir.find(key), key.size(), value); };
  replace("LANGUAGE", language);
  replace("EMISSION", emission);
  return kiln_test::bitcode_from_ir(ir);
}

// Per subprogram DIE, by name: whether it says DW_AT_prototyped, and the name of its
// DW_AT_type ("" for none).
using SubprogramTypes = std::map<std::string, std::pair<bool, std::string>>;
SubprogramTypes subprogram_types(const std::string& object) {
  ObjectDwarf dwarf(object);
  SubprogramTypes out;
  for (const auto& unit : dwarf.ctx->compile_units())
    for (const auto& entry : unit->dies()) {
      llvm::DWARFDie die(unit.get(), &entry);
      if (die.getTag() != llvm::dwarf::DW_TAG_subprogram) continue;
      std::string type;
      if (llvm::DWARFDie t = die.getAttributeValueAsReferencedDie(llvm::dwarf::DW_AT_type)) type = t.getShortName();
      out[die.getShortName()] = {die.find(llvm::dwarf::DW_AT_prototyped).has_value(), type};
    }
  return out;
}

}  // namespace

// `ptype f` and `finish` read a subprogram's DW_AT_type; C's prototype is
// DW_AT_prototyped. As llvm -O0 writes them: the return type in any language, none for
// void, the prototype for a C unit only, neither at line tables only.
TEST_CASE("stamp DWARF: a subprogram's return type and prototype, as llvm's", "[dwarf]") {
  const SubprogramTypes c_full{{"sum", {true, "int"}}, {"clear", {true, ""}}, {"twice", {true, "long"}}};
  const SubprogramTypes rust_full{{"sum", {false, "int"}}, {"clear", {false, ""}}, {"twice", {false, "long"}}};
  const SubprogramTypes lines_only{{"sum", {false, ""}}, {"clear", {false, ""}}, {"twice", {false, ""}}};
  for (auto [language, emission, expected] :
       {std::tuple{"DW_LANG_C11", "FullDebug", &c_full}, std::tuple{"DW_LANG_Rust", "FullDebug", &rust_full},
        std::tuple{"DW_LANG_C11", "LineTablesOnly", &lines_only}}) {
    INFO(language << ", " << emission);
    const std::string bitcode = return_type_module(language, emission);
    CHECK(subprogram_types(stamp_object(bitcode)) == *expected);
    LlvmBackend llvm(Profile::fast);
    ParsedModule m = llvm.parse(bitcode, "llvm");
    // (llvm's line tables only may leave the inlined callee's subprogram out)
    const SubprogramTypes reference = subprogram_types(llvm.codegen(*m, "llvm"));
    CHECK(reference.size() >= 2);
    for (const auto& [name, facts] : reference) CHECK(expected->at(name) == facts);
    LineAgreement lines = check_lines(bitcode, "return types");
    CHECK(lines.verify_errors.empty());
    // The direct reader finds the same types in the same order.
    ReaderComparison r = compare_reader(bitcode, "return types");
    INFO(outcome_name(r.outcome) << ": " << r.detail);
    CHECK(r.outcome == ReaderComparison::kIdentical);
  }
}

TEST_CASE("stamp DWARF: the flat file carries return types, and refuses one out of range", "[dwarf]") {
  LlvmBackend llvm(Profile::fast);
  ParsedModule m = llvm.parse(return_type_module("DW_LANG_C11", "FullDebug"), "test");
  StampPlan plan = plan_stamp_module(*m, "0123456789ab");
  const FlatModuleData& flat = plan.flat.flat;
  const FlatDebugInfo& d = flat.debug;
  REQUIRE(d.functions.size() == 2);
  REQUIRE(d.inlined.size() == 1);
  // sum's int, then twice's long (its inlined call), which the variable names again.
  REQUIRE(d.types.size() == 2);
  CHECK((d.functions[0].prototyped && d.functions[0].type == 1 && d.types[0].name == "int"));
  CHECK((d.inlined[0].prototyped && d.inlined[0].type == 2 && d.types[1].name == "long"));
  CHECK((d.functions[1].prototyped && d.functions[1].type == 0));
  REQUIRE(d.variables.size() == 1);
  CHECK(d.variables[0].type == 2);
  FlatModuleData back = read_flat_file(write_flat_file(flat, "r.c"), "test.flat");
  CHECK(back.debug == d);
  CHECK(emit_flat_module(back, "r.c") == emit_flat_module(flat, "r.c"));

  FlatModuleData bad = flat;
  bad.debug.functions[1].type = 3;
  CHECK(check_flat_module(bad) == "debug type out of range");
  CHECK_THROWS_AS(read_flat_file(write_flat_file(bad, "r.c"), "bad.flat"), KilnError);
  bad = flat;
  bad.debug.inlined[0].type = 3;
  CHECK(check_flat_module(bad) == "debug type out of range");
  bad = flat;
  bad.debug.types[0].containing_type = 3;
  CHECK(check_flat_module(bad) == "debug type out of range");
}
