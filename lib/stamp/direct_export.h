// The direct route from bitcode to stamp's input, without LLVM: read_bitcode
// (bitcode_ir.h) decodes the file, and export_direct makes of it exactly what LLVM's
// parser plus lib/flat_export.cpp make today (materialize_aggregate_constants,
// export_flat, expose_local_symbols, resolve_symbol_names and export_globals, in that
// order): the flat arrays, the per-function verdicts and the global data, with local
// symbols renamed the same way. `scripts/` and kiln-emit's --check-reader compare
// the two routes byte for byte.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "flat_module.h"
#include "stamp_object.h"

namespace kiln {

struct DirectExport {
  // Non-empty: the reader declined the module ("reader: ..."); nothing else is set, and
  // the module goes through LLVM's parser and exporter.
  std::string declined;
  FlatModuleData flat;
  std::vector<FunctionVerdict> verdicts;  // one per defined function, in module order
  std::vector<bool> emitted_by_stamp;     // one per function in module order, declarations included
  size_t stamp_function_count = 0;
  // Functions the reader could not decode ("reader: ..." reasons in their verdicts):
  // such a module is never whole, and its verdicts are not LLVM's.
  size_t declined_function_count = 0;
  // Every global variable's bytes and relocations when `whole`.
  std::vector<StampData> data;
  std::string globals_reason;  // why the globals are not stamp's (export_globals' reason); empty: they are
  // When not `whole`: the constant globals that materialize_aggregate_constants adds for
  // stamp's functions (`__kiln_const...`, renamed as exposed), which a split module's
  // stamp part carries because LLVM's half, read from the bitcode, has none of them;
  // constants_reason says why they cannot be (then the module is not split).
  std::vector<StampData> constants;
  std::string constants_reason;
  // Every function stamp's and every global exported: the object needs no LLVM.
  bool whole = false;
  std::string source_filename, triple;
  // Where the time went (seconds): decoding the bitcode, and the export.
  double read_seconds = 0, export_seconds = 0;
};

// Empty when `triple` names x86-64 Linux ELF with 64-bit pointers (what kiln emits),
// else why not, in the words of lib/bitcode.h's triple_problem (which asks LLVM's
// Triple; this reads the text, for the tools without LLVM, and is tested against it).
std::string target_problem(const std::string& triple);

// `tag` is expose_local_symbols' tag (the first 12 hex digits of the bitcode's
// xxh3-128). Throws KilnError(kExitBadInput) naming `path` for a corrupt file.
// `selected`: as export_flat's (the functions it refuses fall back as kNotSelected).
DirectExport export_direct(std::string_view bitcode, const std::string& path, const std::string& tag,
                           const FunctionFilter& selected = {});

}  // namespace kiln
