// Exports an LLVM module into stamp's flat arrays (kernels/flat_ir.h), deciding per
// function whether stamp can compile it and, when not, every reason why. This is the
// `stamp` contract that kiln-census reports.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "flat_module.h"
#include "stamp_object.h"

namespace llvm {
class GlobalValue;
class Module;
}  // namespace llvm

namespace kiln {

struct FlatExport {
  FlatModuleData flat;
  std::vector<FunctionVerdict> verdicts;  // one per defined function, in module order
  std::vector<bool> emitted_by_stamp;     // one per function in module order, declarations included
  size_t stamp_function_count = 0;        // verdicts that are stamp's
  // Per symbol of flat.symbols: the LLVM value it names, or null and a fixed name
  // (memcpy and the other library calls stamp makes). The names are read at the end,
  // and again after expose_local_symbols renamed the module's local symbols.
  std::vector<const llvm::GlobalValue*> symbol_values;
  std::vector<std::string> fixed_names;
  void resolve_symbol_names();  // fills flat.symbols, bindings and visibilities
};

// `selected`: which functions stamp may take (kiln-selection(5)); the others fall
// back with the reason kNotSelected. Empty: all of them.
FlatExport export_flat(const llvm::Module& module, const FunctionFilter& selected = {});

// Replaces aggregate constants used as instruction operands (a struct or array value
// stored, inserted, returned or passed through a phi) by loads from private constant
// globals, which stamp's templates already copy. Same meaning; returns how many.
size_t materialize_aggregate_constants(llvm::Module& module);

// Every global variable's initializer as bytes and relocations, so that a module whose
// functions are all stamp's needs no LLVM at all. Empty string when done, else the
// first reason why not (then the llvm half emits the globals). Run after renaming.
std::string export_globals(const llvm::Module& module, std::vector<StampData>& out);

}  // namespace kiln
