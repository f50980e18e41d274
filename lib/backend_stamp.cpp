#include "backend_stamp.h"

#include <llvm/IR/Module.h>

#include "backend_llvm.h"
#include "bitcode.h"
#include "error.h"
#include "flat_export.h"
#include "flat_file.h"
#include "hash.h"
#include "selection.h"
#include "stamp_cpu.h"
#include "stamp_object.h"
#include "fallback.h"
#include "direct_export.h"
#include "elf_combine.h"
#include "stamp_service.h"

#include <cstdlib>
#include <cstring>
#include <future>
#include <mutex>
#include "timeutil.h"

namespace kiln {

StampBackend::StampBackend(Profile profile, const BackendOptions& options)
    : llvm_(std::make_unique<LlvmBackend>(profile, options)), reader_(reader_choice()) {}
StampBackend::~StampBackend() = default;

StampPlan plan_stamp_module(llvm::Module& module, const std::string& tag, const FunctionFilter& selected) {
  StampPlan plan;
  materialize_aggregate_constants(module);
  plan.flat = export_flat(module, selected);
  // Symbols local to the module become hidden globals so the halves can link.
  if (plan.flat.stamp_function_count) expose_local_symbols(module, tag);
  plan.flat.resolve_symbol_names();
  plan.faults = apply_test_faults(plan.flat.flat);  // after renaming, before any stage runs
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
  return write_stamp_object_for(plan.flat.flat, plan.data, module.getSourceFileName(), code);
}

namespace {

// Set once the service has failed this process: its other modules run here at once,
// and the warning is printed once.
std::mutex g_service_mutex;
std::string g_service_lost;

// Who sends a module, for the service's batch receipts: the crate, as the file name of
// a rustc unit starts (CRATE-HASH.CRATE.CGU.rcgu.o), or the file name.
std::string service_client(const std::string& label) {
  std::string base = label.substr(label.find_last_of('/') + 1);
  return base.substr(0, base.find('.'));
}

}  // namespace

const char* stamp_service_socket() {
  const char* path = std::getenv(kEnvStampService);
  return path && *path ? path : nullptr;
}

StampOutput run_stamp_stages(const FlatModuleData& flat, const std::string& source_name, const std::string& label,
                             ServiceRoute& route) {
  const char* socket = stamp_service_socket();
  if (!socket) return run_stamp_cpu(flat.view(), 1);
  {
    std::lock_guard<std::mutex> lock(g_service_mutex);
    route.lost = g_service_lost;
  }
  if (route.lost.empty()) {
    try {
      StampServiceAnswer a = run_stages_in_service(socket, flat, source_name, service_client(label));
      route.device = a.device;
      route.batch = a.batch;
      route.batch_modules = a.batch_modules;
      const char* check = std::getenv(kEnvServiceCheck);
      if (check && std::strcmp(check, "1") == 0) {
        StampOutput oracle = run_stamp_cpu(flat.view(), 1);
        route.check = same_stamp_output(a.code, oracle) ? "equal" : "differs";
        if (route.check == "differs") {  // generated code is correct or not emitted: the oracle's goes out
          std::fprintf(stderr, "kiln: warning: %s: the stamp service's output differs from the CPU executor's; "
                               "the CPU executor's is used\n", label.c_str());
          return oracle;
        }
      }
      return std::move(a.code);
    } catch (const KilnError& e) {
      std::lock_guard<std::mutex> lock(g_service_mutex);
      if (g_service_lost.empty()) {
        g_service_lost = e.what();
        std::fprintf(stderr, "kiln: warning: the stamp service is lost (%s); %s and what follows run on the CPU\n",
                     e.what(), label.c_str());
      }
      route.lost = g_service_lost;
    }
  }
  return run_stamp_cpu(flat.view(), 1);
}

namespace {

// Why the direct reader's module is not wholly stamp's (for the receipt).
std::string why_not_whole(const DirectExport& direct) {
  std::string why = direct.globals_reason.empty() ? "functions fall back to llvm" : direct.globals_reason;
  for (const auto& v : direct.verdicts)
    if (!v.reasons.empty() && v.reasons[0].compare(0, 8, "reader: ") == 0) why = v.reasons[0];
  return why;
}

}  // namespace

bool StampBackend::can_split(const DirectExport& direct) const {
  // With the verifier on (a user's file), LLVM reads the whole module to verify it, so
  // the whole-module route is no dearer. A function the reader could not decode leaves
  // the flat output unlike LLVM's exporter's: that module takes LLVM's route too.
  return !llvm_->verifies() && direct.declined_function_count == 0 && direct.stamp_function_count > 0 &&
      direct.constants_reason.empty();
}

bool StampBackend::emit_direct(std::string_view bitcode, const std::string& label, const std::string& tag,
                               const FunctionFilter& selected, EmitResult& result) {
  DirectExport direct;
  try {
    direct = export_direct(bitcode, label, tag, selected);
  } catch (const KilnError& e) {
    // LLVM's parser has the last word on what is bitcode: it reads the module, or says why not.
    result.reader = {"llvm", std::string("reader: ") + e.what()};
    return false;
  }
  result.stages.bitcode_read = direct.read_seconds;
  result.stages.flat_export = direct.export_seconds;
  if (!direct.declined.empty()) {
    result.reader = {"llvm", direct.declined};
    return false;
  }
  if (!direct.whole && !can_split(direct)) {
    result.reader = {"llvm", why_not_whole(direct)};
    return false;
  }
  if (std::string problem = target_problem(direct.triple); !problem.empty())
    throw KilnError(kExitBadInput, label, problem);
  for (const auto& v : direct.verdicts) {
    (v.stamp() ? result.counts.functions_stamp : result.counts.functions_llvm)++;
    (v.stamp() ? result.counts.instructions_stamp : result.counts.instructions_llvm) += v.instructions;
  }
  result.test_faults = apply_test_faults(direct.flat);  // as plan_stamp_module does on LLVM's route
  auto stamp_part = [&, &data = direct.whole ? direct.data : direct.constants] {
    Stopwatch clock;
    StampOutput code = run_stamp_stages(direct.flat, direct.source_filename, label, result.service);
    std::string object = write_stamp_object_for(direct.flat, data, direct.source_filename, code);
    result.stages.codegen = clock.seconds();
    return object;
  };
  if (direct.whole) {
    std::string object = stamp_part();
    Stopwatch clock;
    result.object = with_local_names(std::move(object), tag, private_names(direct.data));
    result.stages.combine = clock.seconds();
    result.reader = {"direct", ""};
    return true;
  }
  result.reader = {"split", why_not_whole(direct)};
  // With a service, LLVM's half is emitted here while the service runs stamp's.
  std::future<std::string> in_service;
  if (stamp_service_socket()) in_service = std::async(std::launch::async, stamp_part);
  std::string stamp_object = in_service.valid() ? "" : stamp_part();
  std::vector<std::string> temporaries = private_names(direct.constants);
  std::string llvm_object = emit_fallback_half(bitcode, label, tag, direct.emitted_by_stamp, result, temporaries);
  if (in_service.valid()) stamp_object = in_service.get();
  Stopwatch clock;
  result.object = combine_objects({stamp_object, llvm_object}, label, tag, temporaries);
  result.stages.combine = clock.seconds();
  return true;
}

std::string StampBackend::emit_fallback_half(std::string_view bitcode, const std::string& label, const std::string& tag,
                                             const std::vector<bool>& emitted_by_stamp, EmitResult& result,
                                             std::vector<std::string>& temporaries) {
  // LLVM reads the module lazily and materializes only the bodies that fall back, with
  // the globals; the same local symbols are exposed as the direct export exposed.
  Stopwatch clock;
  ParsedModule module = llvm_->parse_lazy(bitcode, label);
  expose_local_symbols(*module, tag);
  make_fallback_half(*module, emitted_by_stamp);
  for (std::string& name : private_variables(*module)) temporaries.push_back(std::move(name));
  result.stages.parse = clock.lap();
  std::string llvm_object = llvm_->codegen(*module, label);
  result.stages.fallback = clock.lap();
  return llvm_object;
}

EmitResult StampBackend::emit(std::string_view bitcode, const std::string& label) {
  EmitResult result;
  const std::string id = xxh3_128_hex(bitcode), tag = id.substr(0, 12);
  // kiln-selection(5): what is not selected falls back to llvm, function by function.
  const FunctionFilter selected = selection_filter(id);
  result.selection = selection_digest(id);
  if (reader_ == ReaderChoice::direct) {
    if (emit_direct(bitcode, label, tag, selected, result)) return result;
    // The direct attempt's time stays counted (as bitcode_read): it was spent.
    const double attempt = result.stages.bitcode_read + result.stages.flat_export;
    result.stages = {};
    result.stages.bitcode_read = attempt;
    result.counts = {};
  } else {
    result.reader = {"llvm", "--reader llvm"};
  }
  Stopwatch clock;
  ParsedModule module = llvm_->parse(bitcode, label, {.verify = llvm_->verifies(), .parse_seconds = &result.stages.parse});
  result.stages.verify = clock.lap() - result.stages.parse;

  StampPlan plan = plan_stamp_module(*module, tag, selected);
  result.stages.flat_export = clock.lap();
  result.test_faults = plan.faults;
  for (const auto& v : plan.flat.verdicts) {
    (v.stamp() ? result.counts.functions_stamp : result.counts.functions_llvm)++;
    (v.stamp() ? result.counts.instructions_stamp : result.counts.instructions_llvm) += v.instructions;
  }
  if (plan.flat.stamp_function_count == 0) {  // nothing for stamp: the whole module goes to llvm
    result.object = llvm_->codegen(*module, label);
    result.stages.fallback = clock.lap();
    return result;
  }
  StampOutput code = run_stamp_stages(plan.flat.flat, module->getSourceFileName(), label, result.service);
  std::string stamp_object = write_stamp_part(plan, *module, code);
  result.stages.codegen = clock.lap();
  if (plan.whole) {
    result.object = with_local_names(std::move(stamp_object), tag, private_names(plan.data));
    result.stages.combine = clock.lap();
    return result;
  }
  auto rest = fallback_module(*module, plan.flat.emitted_by_stamp);
  std::string llvm_object = llvm_->codegen(*rest, label);
  result.stages.fallback = clock.lap();
  result.object = combine_objects({stamp_object, llvm_object}, label, tag, private_variables(*module));
  result.stages.combine = clock.lap();
  return result;
}

}  // namespace kiln
