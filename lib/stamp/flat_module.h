// One module in stamp's flat form: the arrays of kernels/flat_ir.h plus what the ELF
// writer needs of the module's symbols. No LLVM type in it: the exporter
// (lib/flat_export.h), the flat file reader (flat_file.h) and, next, the direct
// bitcode reader all produce this, and the executors and the ELF writer consume it.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "flat_debug.h"
#include "flat_ir.h"
#include "stamp_object.h"

namespace kiln {

// One defined function under stamp's contract: stamp compiles it, or it falls back
// to llvm for every reason listed. kiln-census reports these (census.h).
struct FunctionVerdict {
  std::string name;
  uint64_t instructions = 0;
  std::vector<std::string> reasons;               // why stamp does not compile it (every reason found)
  bool stamp() const { return reasons.empty(); }  // stamp compiles it
};

// Which defined functions stamp may take, asked by each function's name in the bitcode
// (before local symbols are renamed): kiln-selection(5), through lib/selection.h. Both
// exporters leave a function it refuses to llvm with the reason kNotSelected. Empty:
// every function may be stamp's.
using FunctionFilter = std::function<bool(const std::string& name)>;
constexpr const char* kNotSelected = "not selected";

// LLVM's calling conventions that are the C convention on x86-64 ELF: C (0), fastcc
// (8) and x86_64_sysvcc (78). LLVM's X86 lowering sends fastcc and x86_64_sysvcc to the
// same rules as C (CC_X86_64_C, RetCC_X86_64_C); fastcc differs only under
// -tailcallopt (callee-popped stack, guaranteed tail calls), which rustc and clang do
// not set, and musttail calls fall back anyway. llc-22 emits identical code for all
// three (tests/unit/test_stamp_abi.cpp links stamp's and llvm's objects across them).
inline bool stamp_calling_convention(uint32_t cc) { return cc == 0 || cc == 8 || cc == 78; }

// Inline asm stamp takes: an empty template (rustc's black_box, compiler barriers)
// whose constraints are inputs and clobbers only ('=' starts an output, '!' a label).
// It needs no code: stamp keeps every value in its frame slot and reads memory afresh
// at each use, so even a memory clobber already holds.
inline bool stamp_empty_asm(std::string_view asm_string, std::string_view constraints) {
  if (!asm_string.empty()) return false;
  for (size_t at = 0; at < constraints.size();) {
    size_t end = std::min(constraints.find(',', at), constraints.size());
    if (constraints[at] == '=' || constraints[at] == '!') return false;
    at = end + 1;
  }
  return true;
}

struct FlatModuleData {
  std::vector<FlatFunction> functions;
  std::vector<FlatBlock> blocks;
  std::vector<FlatInst> insts;
  std::vector<FlatOperand> operands;
  std::vector<uint8_t> arg_widths;
  std::vector<std::string> symbols;  // every symbol an operand or a function names
  // Per flat function: how the ELF writer should define it.
  std::vector<SymbolBinding> bindings;
  std::vector<SymbolVisibility> visibilities;
  std::vector<std::string> sections;  // empty: .text.NAME
  // The module's extern_weak declarations and those with non-default visibility, for
  // the ELF writer (carried by flat IR files from version 3).
  std::vector<UndefinedSymbol> undefined;
  // What stamp's DWARF needs of the module's debug information (version 6).
  FlatDebugInfo debug;

  FlatModuleView view() const;  // the stages' read-only view of the arrays
};

// Whether the stages can run `flat` without reading outside an array: every index
// inside the array it indexes, each function's blocks tiling its instructions in
// order, every instruction with the operands its template reads and of the kinds it
// reads them as, every variant and enumeration known, no frame or aggregate above
// 1 GiB. Empty when so, else the first defect found (a short fixed text). Every
// producer's output should pass it; read_flat_file refuses a file that does not.
std::string check_flat_module(const FlatModuleData& flat);
// The parts of it that a malformed module, which LLVM's parser still reads, can fail
// in what either exporter makes of it: the DWARF version (a module flag, any number)
// between 2 and 5, and the debug types' containment (debug_type_children), which the
// DWARF writer walks by recursion: no type that contains itself, no chain deeper than
// kMaxDebugNesting, a bounded number of DIEs, no type declared inside an element (a
// member, an enumerator, ...). nullptr when so. Each exporter runs it on what it made:
// a module that fails it is LLVM's whole.
const char* check_debug_exported(const FlatDebugInfo& debug);
// The part of it the DWARF writer relies on (it recurses along these chains): every
// scope's and inline site's parent before it, no chain deeper than kMaxDebugNesting.
// nullptr when so.
const char* check_debug_nesting(const FlatDebugInfo& debug);
// The same without the walk over the types' containment (only their indices in range),
// for a writer that bounds its own walk: the DWARF writer counts its depth and DIEs.
const char* check_debug_scope_nesting(const FlatDebugInfo& debug);

// Turns every instruction whose result nothing reads and whose only effect is that
// result (arithmetic, compares, casts, selects, address computations, aggregate
// moves, bit operations, floating point) into kOpNop, and then those that fed only
// them, as LLVM's instruction selection at -O0 emits no code for a dead value. Loads
// stay (the flat IR does not say which are volatile), as do calls, stores, allocas,
// phis, vectors and terminators. Both exporters end with it, so that their modules
// stay identical. Returns how many instructions it turned into kOpNop.
uint32_t drop_dead_values(FlatModuleData& flat);

// A phi lives in its slot alone, without a shadow, when its predecessors can write its
// value there directly at their ends (instead of into its shadow, which it copies to
// its slot on entry): every predecessor ends in a branch (br, or a conditional br whose
// condition is not the phi: the copies come before the jump reads it); no other phi
// takes it as an incoming value from one of those predecessors (whose copies would
// read it after writing it); and on every edge from a predecessor to another block the
// phi is dead (no path from there reads it before its own block is entered again,
// which writes it anew). 1 for each instruction that is such a phi.
std::vector<uint8_t> phis_written_directly(const FlatModuleData& flat);
// Marks those phis kPhiDirect and drops their shadows from their slots. Both exporters
// end with it, after drop_dead_values. Returns how many phis it marked.
uint32_t write_phis_directly(FlatModuleData& flat);

}  // namespace kiln
