// kiln-emit --export-flat: a module's stamp functions as a flat IR file (kiln-flat(5)),
// through the direct reader, or LLVM's parser and exporter where the reader declines.
// The active selection (KILN_SELECTION) decides which functions are stamp's, as it
// does when stamp emits the module.
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "backend_stamp.h"
#include "bitcode.h"
#include "direct_export.h"
#include "backend.h"
#include "emit.h"
#include "error.h"
#include "fallback.h"
#include "flat_export.h"
#include "flat_file.h"
#include "fs.h"
#include "hash.h"
#include "isolate.h"
#include "selection.h"

namespace kiln {

namespace {

// What the direct reader says, or empty when it declines a function or the module.
std::string export_flat_directly(const std::string& bytes, const std::string& input, const std::string& id,
                                 const std::string& flat_path) {
  if (reader_choice() != ReaderChoice::direct) return "";
  DirectExport d;
  try {
    d = export_direct(bytes, input, id.substr(0, 12), selection_filter(id));
  } catch (const KilnError&) {
    return "";  // LLVM's parser has the last word on what is bitcode
  }
  if (!d.declined.empty() || d.declined_function_count) return "";
  if (std::string problem = target_problem(d.triple); !problem.empty()) throw KilnError(kExitBadInput, input, problem);
  write_file_atomic(flat_path, write_flat_file(d.flat, d.source_filename));
  return std::to_string(d.stamp_function_count) + " of " + std::to_string(d.verdicts.size()) +
      " functions exported for stamp (direct reader) -> " + flat_path;
}

}  // namespace

std::string export_flat_file(const std::string& input, const std::string& flat_path) {
  const std::string bytes = read_file(input);
  const std::string id = xxh3_128_hex(bytes);
  if (std::string said = export_flat_directly(bytes, input, id, flat_path); !said.empty()) return said;
  // In a worker process: a module that crashes LLVM fails with a line, not a signal.
  return run_isolated_one(input, [&] {
    llvm::LLVMContext ctx;
    // Verified as stamp's emission verifies on this route (--no-verify: not).
    auto module = parse_checked_module(ctx, bytes, input, {.verify = BackendOptions::from_environment().verify});
    LlvmStage stage("exporting flat IR");
    materialize_aggregate_constants(*module);
    FlatExport flat = export_flat(*module, selection_filter(id));
    if (flat.stamp_function_count) expose_local_symbols(*module, id.substr(0, 12));
    flat.resolve_symbol_names();
    write_file_atomic(flat_path, write_flat_file(flat.flat, module->getSourceFileName()));
    return std::to_string(flat.stamp_function_count) + " of " + std::to_string(flat.verdicts.size()) +
        " functions exported for stamp -> " + flat_path;
  });
}

}  // namespace kiln
