// stamp's variables, lexical blocks and types in DWARF, against llvm -O0's for the same
// modules (lib/variable_check.h: per function, each parameter and variable by its
// scopes, name, line, type three levels deep and whether it has a location), on code
// rustc and clang compile with debug information; and the flat file's checks of them.
// Whether a debugger reads the values right is tests/integration/capture_rust.sh's.
#include <catch2/catch.hpp>

#include <fstream>

#include <llvm/DebugInfo/DWARF/DWARFContext.h>
#include <llvm/Object/ObjectFile.h>

#include "backend_llvm.h"
#include "backend_stamp.h"
#include "error.h"
#include "flat_file.h"
#include "fs.h"
#include "line_check.h"
#include "reader_check.h"
#include "scratch_dir.h"
#include "stamp_cpu.h"
#include "stamp_dwarf.h"
#include "test_helpers.h"

using namespace kiln;

namespace {

// Structures, tuples, slices, arrays, an enum with data (a variant part) and a C-like
// one, references, closures, a trait object, and #[inline(always)] calls, which -O0
// inlines: their parameters are variables of inlined calls inside lexical blocks.
const char* kRustSource = R"RS(
pub struct Point { pub x: i32, pub y: f64 }
pub enum Shape { Circle(f64), Rect { w: u32, h: u32 }, Empty }
#[derive(Clone, Copy)] pub enum Mode { Fast = 1, Slow = 7 }
pub trait Area { fn area(&self) -> f64; }
impl Area for Point { fn area(&self) -> f64 { self.x as f64 * self.y } }
#[inline(always)] fn scaled(v: f64, by: u8) -> f64 { let f = by as f64; v * f }
pub fn measure(s: &Shape, p: Point, xs: &[u16], mode: Mode, dyn_area: &dyn Area) -> f64 {
    let k = xs.len() as f64;
    let grid = [[1u8, 2], [3, 4]];
    let r = match s {
        Shape::Circle(r) => { let q = r * r; scaled(q, 3) }
        Shape::Rect { w, h } => (*w * *h) as f64,
        Shape::Empty => 0.0,
    };
    let pair = (mode, Some(grid[1][0]));
    let add = |a: f64| a + p.y + k;
    add(r) + dyn_area.area() + pair.1.unwrap_or(0) as f64 + pair.0 as u8 as f64
}
)RS";

const char* kCSource = R"C(
typedef unsigned long word;
enum color { RED = 1, GREEN = 2, BLUE = -3 };
struct flags { unsigned a : 3, b : 5; int c; };
union number { int i; float f; char bytes[4]; };
struct node { struct node *next; word value; double grid[2][3]; enum color tint; };
typedef int (*callback)(const struct node *, void *);
static int visit(const struct node *n, void *state) { (void)state; return (int)n->value; }
int walk(struct node *list, callback cb, union number num, struct flags f) {
  int total = 0;
  for (struct node *n = list; n; n = n->next) {
    int v = cb(n, &total);
    { volatile int twice = v * 2; total += twice; }
  }
  const char *names[2] = {"a", "b"};
  return total + num.i + f.a + f.b + (names[0][0] == 'a');
}
int run(void) { struct node n = {0, 5, {{0}}, GREEN}; union number u = {1}; struct flags f = {1, 2, 3}; return walk(&n, visit, u, f); }
)C";

// The module's bitcode, or empty (the caller reports a skip) when the compiler is missing.
std::string compile(const std::string& command, const std::string& source, const char* extension) {
  kiln_test::ScratchDir scratch;
  const std::string in = scratch.path + "/m." + extension, out = scratch.path + "/m.bc";
  std::ofstream(in) << source;
  if (kiln_test::shell(command + " -o '" + out + "' '" + in + "'").exit_code != 0) return "";
  return read_file(out);
}

void check_against_llvm(const std::string& bitcode, const char* what, uint64_t at_least) {
  LineAgreement r = check_lines(bitcode, what);
  INFO(what << ": " << r.verify_errors << r.first_difference << " / " << r.variables.first_difference);
  REQUIRE(r.has_debug_info);
  CHECK(r.verify_errors.empty());
  CHECK(r.exact == r.instructions);
  CHECK(r.variables.llvm >= at_least);
  CHECK(r.variables.same == r.variables.llvm);
  CHECK(r.variables.stamp == r.variables.llvm);
}

}  // namespace

TEST_CASE("stamp DWARF variables: rustc's module, as llvm -O0's", "[dwarf]") {
  std::string bitcode = compile("rustc --crate-type=lib -g -C opt-level=0 --emit=llvm-bc", kRustSource, "rs");
  if (bitcode.empty()) {
    WARN("skip - no rustc that writes LLVM 22 bitcode");
    return;
  }
  check_against_llvm(bitcode, "rustc module", 20);
}

TEST_CASE("stamp DWARF variables: clang's module, as llvm -O0's", "[dwarf]") {
  std::string bitcode = compile(kiln_test::llvm_tool("clang") + " -g -O0 -c -emit-llvm", kCSource, "c");
  REQUIRE_FALSE(bitcode.empty());
  check_against_llvm(bitcode, "clang module", 10);
}

// The DWARF writer places variables by the frame layout the executor kept
// (StampOutput), or lays the frames out again where it kept none (a batch's cut, the
// GPU's output): the same sections either way.
TEST_CASE("stamp DWARF variables: the executor's frame layout and the writer's own agree", "[dwarf]") {
  std::string bitcode = compile(kiln_test::llvm_tool("clang") + " -g -O0 -c -emit-llvm", kCSource, "c");
  REQUIRE_FALSE(bitcode.empty());
  LlvmBackend llvm(Profile::fast);
  ParsedModule m = llvm.parse(bitcode, "vars.bc");
  StampPlan plan = plan_stamp_module(*m, "0123456789ab");
  REQUIRE(!plan.flat.flat.debug.variables.empty());
  StampOutput code = run_stamp_cpu(plan.flat.flat.view(), 1);
  REQUIRE(code.frame_size.size() == plan.flat.flat.functions.size());
  const StampDwarf given = build_stamp_dwarf(plan.flat.flat, code, "vars.c");
  code.alloca_mem.clear(), code.arg_slot.clear(), code.frame_size.clear();
  const StampDwarf again = build_stamp_dwarf(plan.flat.flat, code, "vars.c");
  REQUIRE(given.sections.size() == again.sections.size());
  REQUIRE(!given.sections.empty());
  for (size_t k = 0; k < given.sections.size(); ++k) {
    INFO(given.sections[k].name);
    CHECK(given.sections[k].bytes == again.sections[k].bytes);
    CHECK(given.sections[k].relocs.size() == again.sections[k].relocs.size());
  }
}

TEST_CASE("stamp DWARF variables: the flat file carries them, and refuses them out of range", "[dwarf]") {
  std::string bitcode = compile(kiln_test::llvm_tool("clang") + " -g -O0 -c -emit-llvm", kCSource, "c");
  REQUIRE_FALSE(bitcode.empty());
  LlvmBackend llvm(Profile::fast);
  ParsedModule m = llvm.parse(bitcode, "test");
  StampPlan plan = plan_stamp_module(*m, "0123456789ab");
  const FlatModuleData& flat = plan.flat.flat;
  REQUIRE(flat.debug.variables.size() >= 10);
  REQUIRE(flat.debug.blocks.size() >= 2);
  REQUIRE(flat.debug.types.size() >= 10);
  FlatModuleData back = read_flat_file(write_flat_file(flat, "m.c"), "test.flat");
  CHECK(back.debug == flat.debug);
  CHECK(emit_flat_module(back, "m.c") == emit_flat_module(flat, "m.c"));

  FlatModuleData bad = flat;
  bad.debug.variables[0].type = static_cast<uint32_t>(flat.debug.types.size() + 1);
  CHECK(check_flat_module(bad) == "debug type out of range");
  bad = flat;
  bad.debug.variables[0].storage_kind = kDebugStorageAlloca;
  bad.debug.variables[0].storage = flat.functions[bad.debug.variables[0].function].first_inst +
      flat.functions[bad.debug.variables[0].function].inst_count - 1;  // a return
  CHECK(check_flat_module(bad) == "debug variable's alloca not an alloca of its function");
  bad = flat;
  bad.debug.variables[0].expression = {kDwarfOpPlusUconst};
  CHECK(check_flat_module(bad) == "debug variable's expression ends inside an operation");
  bad = flat;
  bad.debug.variables[0].expression = {0x9f};  // DW_OP_stack_value
  CHECK(check_flat_module(bad) == "debug variable's expression has an unknown operation");
  bad = flat;
  std::swap(bad.debug.variables.front(), bad.debug.variables.back());
  CHECK(check_flat_module(bad) == "debug variable's function out of order");
  bad = flat;  // a type that contains itself: the writer would recurse without end
  for (FlatDebugType& t : bad.debug.types)
    if (t.tag == 0x13 && !t.elements.empty()) {
      t.elements.push_back(static_cast<uint32_t>(&t - bad.debug.types.data() + 1));
      break;
    }
  CHECK(check_flat_module(bad) == "debug types contain themselves");
  // The DWARF writer, which does not walk the types first, bounds its own walk.
  CHECK_THROWS_WITH(emit_flat_module(bad, "m.c"), Catch::Contains("nested too deep or contain themselves"));
  bad = flat;
  bad.debug.blocks.push_back({static_cast<uint32_t>(flat.debug.blocks.size() + 1), 0, 1, 1});
  CHECK(check_flat_module(bad) == "debug block's parent not before it");
  bad = flat;
  bad.debug.types.push_back(flat.debug.types[0]);
  for (size_t t = 0; t < flat.debug.types.size(); ++t)
    if (flat.debug.types[t].tag == 0x0d) bad.debug.types.back().parent_type = static_cast<uint32_t>(t + 1);
  CHECK(check_flat_module(bad) == "debug type declared inside a member");
  CHECK_THROWS_AS(read_flat_file(write_flat_file(bad, "m.c"), "bad.flat"), KilnError);
}

// A pointer to a data member, with its class (DW_AT_containing_type, DWARF 5 section
// 5.7), without which gdb refuses the whole unit; both exporters carry the class.
TEST_CASE("stamp DWARF variables: a pointer-to-member type with its class", "[dwarf]") {
  const std::string bitcode = compile(kiln_test::llvm_tool("clang") + " -x c++ -g -O0 -c -emit-llvm",
                                      "struct S { int a, b; };\n"
                                      "int get(S* s, int S::*pm) { int S::*local = pm; return s->*local; }\n",
                                      "cpp");
  REQUIRE_FALSE(bitcode.empty());
  LlvmBackend llvm(Profile::fast);
  ParsedModule m = llvm.parse(bitcode, "pm.bc");
  StampPlan plan = plan_stamp_module(*m, "0123456789ab");
  const std::string object = write_stamp_part(plan, *m);
  auto file = llvm::cantFail(llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(object, "pm.o")));
  auto ctx = llvm::DWARFContext::create(*file);
  std::vector<std::string> classes, variables;
  for (const auto& unit : ctx->compile_units())
    for (const auto& entry : unit->dies()) {
      llvm::DWARFDie die(unit.get(), &entry);
      if (die.getTag() == llvm::dwarf::DW_TAG_ptr_to_member_type)
        classes.push_back(die.getAttributeValueAsReferencedDie(llvm::dwarf::DW_AT_containing_type).getShortName());
      if (die.getTag() != llvm::dwarf::DW_TAG_formal_parameter && die.getTag() != llvm::dwarf::DW_TAG_variable)
        continue;
      llvm::DWARFDie type = die.getAttributeValueAsReferencedDie(llvm::dwarf::DW_AT_type);
      variables.push_back(std::string(die.getShortName()) + ":" +
                          (type ? llvm::dwarf::TagString(type.getTag()).str() : "none"));
    }
  CHECK(classes == std::vector<std::string>{"S"});
  CHECK(variables ==
        std::vector<std::string>{"s:DW_TAG_pointer_type", "pm:DW_TAG_ptr_to_member_type",
                                 "local:DW_TAG_ptr_to_member_type"});
  check_against_llvm(bitcode, "pointer to member", 3);
  ReaderComparison r = compare_reader(bitcode, "pointer to member");
  INFO(outcome_name(r.outcome) << ": " << r.detail);
  CHECK(r.outcome == ReaderComparison::kIdentical);
}
