// The flat IR as a file (see kiln-flat(5)): what stamp needs to emit a module's
// functions without LLVM, so that a machine without LLVM (the GPU machine) can emit,
// and a failing module can be reproduced from one file.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "flat_module.h"
#include "stamp_cpu.h"
#include "stamp_dwarf.h"

namespace kiln {

// 2: atomics (opcodes 37 to 39, kOpStore's aux); 3: undefined symbols; 4: signed
// saturation and funnel shifts (kOpBitOp's aux 13 to 16, three operands for the latter),
// select of aggregates (kOpSelect of width 0, aux32 bytes); 5: 128-bit integers (width
// 128 operands and results, kOpWide = 40, a constant's high half in its index);
// 6: debug information (flat_debug.h) after the undefined symbols; 7: floating point
// (kOpFloat = 41, FlatFunction::float_args where there was padding, kFnRetFloat,
// kCallRetFloat, kOperandFloat); 8: vectors (kOpVector = 42); 9: debug information's
// lexical blocks (a location's block), variables and types; 10: vector arguments and
// returns; 11: phis written directly (kPhiDirect); 12: debug information's subprogram
// return types and prototyped flag, and a pointer to member's class; 13: debug
// information's global variables (FlatDebugGlobal) after its types
constexpr int kFlatFileVersion = 13;

// `omit`: the file says the module has no debug information (for the stamp service,
// which runs the stages only).
enum class FlatFileDebug { keep, omit };
std::string write_flat_file(const FlatModuleData& flat, const std::string& source_name,
                            FlatFileDebug debug = FlatFileDebug::keep);
// Throws KilnError naming `path` for a foreign, truncated, corrupt (see
// check_flat_module in flat_module.h) or newer file.
FlatModuleData read_flat_file(const std::string& bytes, const std::string& path, std::string* source_name = nullptr);
// The flat files named by `args`: each FILE as it is, and every *.flat in each DIR, in
// name order.
std::vector<std::string> flat_files_named(const std::vector<std::string>& args);
// Emits the flat module's functions (all of them stamp's) into an object.
std::string emit_flat_module(const FlatModuleData& flat, const std::string& source_name);
// What the ELF writer reads: a view of the flat module's names and of the stages'
// output, with the two per-function tables the view needs of its own, and the DWARF
// for the module's debug information (none when it has none). `source_name` names
// the module in errors.
struct StampObjectParts {
  std::vector<uint32_t> function_name, personality;
  std::unique_ptr<StampDwarf> dwarf;  // where view.dwarf points
  StampObjectView view;
};
// `data`: the global data the object will define, whose variables' DIEs it gets.
StampObjectParts stamp_object_parts(const FlatModuleData& flat, const StampOutput& code, const std::string& source_name,
                                    const std::vector<StampData>* data = nullptr);

}  // namespace kiln
