#include "backend_stamp.h"

#include <llvm/IR/Module.h>

#include "backend_llvm.h"
#include "bitcode.h"
#include "error.h"
#include "flat_export.h"
#include "flat_file.h"
#include "hash.h"
#include "stamp_cpu.h"
#include "stamp_object.h"
#include "stamp_split.h"
#include "timeutil.h"

namespace kiln {

StampBackend::StampBackend(Profile profile) : llvm_(std::make_unique<LlvmBackend>(profile)) {}
StampBackend::~StampBackend() = default;

EmitResult StampBackend::emit(std::string_view bitcode, const std::string& label) {
  EmitResult result;
  Stopwatch clock;
  auto module = llvm_->parse(bitcode, label);
  result.stages.parse = clock.lap();
  std::string problem = verify_problem(*module);
  if (!problem.empty()) throw KilnError(kExitBadInput, label, problem);
  problem = triple_problem(module->getTargetTriple().str());
  if (!problem.empty()) throw KilnError(kExitBadInput, label, problem);
  result.stages.verify = clock.lap();

  materialize_aggregate_constants(*module);
  FlatExport flat = export_flat(*module);
  result.stages.flat_export = clock.lap();
  for (const auto& v : flat.verdicts) {
    (v.stamp ? result.counts.functions_stamp : result.counts.functions_llvm)++;
    (v.stamp ? result.counts.instructions_stamp : result.counts.instructions_llvm) += v.instructions;
  }
  if (flat.stamp_functions == 0) {  // nothing for stamp: the whole module goes to llvm
    result.object = llvm_->codegen(*module, label);
    result.stages.fallback = clock.lap();
    return result;
  }

  // Symbols local to the module become hidden globals so the halves can link.
  expose_local_symbols(*module, xxh3_128_hex(bitcode).substr(0, 12));
  flat.flat.resolve_symbol_names();
  result.stages.flat_export += clock.lap();
  StampOutput code = run_stamp_cpu(flat.flat.view(), 1);
  std::vector<StampFunction> functions = stamp_functions_of(flat.flat, code);
  // When stamp has every function, it writes the globals too and LLVM is not needed.
  std::vector<StampData> data;
  bool whole = flat.stamp_functions == flat.verdicts.size() && export_globals(*module, data).empty();
  const std::vector<StampData> none;
  std::string stamp_object = write_stamp_object(functions, module->getSourceFileName(), whole ? data : none);
  result.stages.codegen = clock.lap();
  if (whole) {
    result.object = std::move(stamp_object);
    return result;
  }

  auto rest = llvm_half(*module, flat.emitted_by_stamp);
  std::string llvm_object = llvm_->codegen(*rest, label);
  result.stages.fallback = clock.lap();
  result.object = combine_objects({stamp_object, llvm_object}, label);
  result.stages.combine = clock.lap();
  return result;
}

}  // namespace kiln
