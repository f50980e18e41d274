// Exports an LLVM module into stamp's flat arrays (kernels/flat_ir.h), deciding per
// function whether stamp can compile it and, when not, every reason why. This is the
// `stamp` contract that kiln-census reports.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "flat_ir.h"
#include "stamp_object.h"

namespace llvm {
class GlobalValue;
class Module;
}  // namespace llvm

namespace kiln {

struct FunctionVerdict {
  std::string name;
  uint64_t instructions = 0;
  bool stamp = false;                // stamp compiles it
  std::vector<std::string> reasons;  // why not (every reason found)
};

struct FlatModuleData {
  std::vector<FlatFunction> functions;
  std::vector<FlatBlock> blocks;
  std::vector<FlatInst> insts;
  std::vector<FlatOperand> operands;
  std::vector<uint8_t> arg_widths;
  std::vector<const llvm::GlobalValue*> symbol_values;  // resolved to names after renaming
  std::vector<std::string> fixed_names;                 // for symbols with no GlobalValue (memcpy)
  std::vector<std::string> symbols;                     // names, filled by resolve_symbol_names()
  // Per flat function: how the ELF writer should define it.
  std::vector<SymbolBinding> bindings;
  std::vector<SymbolVisibility> visibilities;
  std::vector<std::string> sections;  // empty: .text.NAME
  // The module's extern_weak declarations and those with non-default visibility, for
  // the ELF writer (carried by flat IR files from version 3).
  std::vector<UndefinedSymbol> undefined;

  FlatModuleView view() const;
  void resolve_symbol_names();  // reads the (possibly renamed) names of symbol_values
};

struct FlatExport {
  FlatModuleData flat;
  std::vector<FunctionVerdict> verdicts;  // one per defined function, in module order
  std::vector<bool> emitted_by_stamp;     // one per function in module order, declarations included
  size_t stamp_functions = 0;
};

FlatExport export_flat(const llvm::Module& module);

// Replaces aggregate constants used as instruction operands (a struct or array value
// stored, inserted, returned or passed through a phi) by loads from private constant
// globals, which stamp's templates already copy. Same meaning; returns how many.
size_t materialize_aggregate_constants(llvm::Module& module);

// Every global variable's initializer as bytes and relocations, so that a module whose
// functions are all stamp's needs no LLVM at all. Empty string when done, else the
// first reason why not (then the llvm half emits the globals). Run after renaming.
std::string export_globals(const llvm::Module& module, std::vector<StampData>& out);

}  // namespace kiln
