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
#include "fallback.h"
#include "timeutil.h"

namespace kiln {

StampBackend::StampBackend(Profile profile) : llvm_(std::make_unique<LlvmBackend>(profile)) {}
StampBackend::~StampBackend() = default;

StampPlan plan_stamp_module(llvm::Module& module, const std::string& tag) {
  StampPlan plan;
  materialize_aggregate_constants(module);
  plan.flat = export_flat(module);
  // Symbols local to the module become hidden globals so the halves can link.
  if (plan.flat.stamp_function_count) expose_local_symbols(module, tag);
  plan.flat.resolve_symbol_names();
  plan.whole = plan.flat.stamp_function_count == plan.flat.verdicts.size() && export_globals(module, plan.data).empty();
  if (!plan.whole) plan.data.clear();
  return plan;
}

std::string write_stamp_part(const StampPlan& plan, const llvm::Module& module, double* stages_seconds) {
  Stopwatch clock;
  StampOutput code = run_stamp_cpu(plan.flat.flat.view(), 1);
  if (stages_seconds) *stages_seconds = clock.seconds();
  return write_stamp_part(plan, module, code);
}

std::string write_stamp_part(const StampPlan& plan, const llvm::Module& module, const StampOutput& code) {
  StampObjectParts parts = stamp_object_parts(plan.flat.flat, code);
  // extern_weak and hidden declarations: the flat module knows them, the parts do not.
  parts.view.undefined = plan.flat.flat.undefined.data();
  parts.view.undefined_count = static_cast<uint32_t>(plan.flat.flat.undefined.size());
  return write_stamp_object(parts.view, module.getSourceFileName(), plan.data);
}

EmitResult StampBackend::emit(std::string_view bitcode, const std::string& label) {
  EmitResult result;
  Stopwatch clock;
  ParsedModule module = llvm_->parse(bitcode, label, {.parse_seconds = &result.stages.parse});
  result.stages.verify = clock.lap() - result.stages.parse;

  StampPlan plan = plan_stamp_module(*module, xxh3_128_hex(bitcode).substr(0, 12));
  result.stages.flat_export = clock.lap();
  for (const auto& v : plan.flat.verdicts) {
    (v.stamp() ? result.counts.functions_stamp : result.counts.functions_llvm)++;
    (v.stamp() ? result.counts.instructions_stamp : result.counts.instructions_llvm) += v.instructions;
  }
  if (plan.flat.stamp_function_count == 0) {  // nothing for stamp: the whole module goes to llvm
    result.object = llvm_->codegen(*module, label);
    result.stages.fallback = clock.lap();
    return result;
  }
  std::string stamp_object = write_stamp_part(plan, *module);
  result.stages.codegen = clock.lap();
  if (plan.whole) {
    result.object = std::move(stamp_object);
    return result;
  }
  auto rest = fallback_module(*module, plan.flat.emitted_by_stamp);
  std::string llvm_object = llvm_->codegen(*rest, label);
  result.stages.fallback = clock.lap();
  result.object = combine_objects({stamp_object, llvm_object}, label);
  result.stages.combine = clock.lap();
  return result;
}

}  // namespace kiln
