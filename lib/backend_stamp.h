// The `stamp` back end: kiln's data-parallel code generator (kernels/), run by the CPU
// executor, with per-function fallback to `llvm` for what it cannot compile.
#pragma once
#include <memory>
#include <vector>

#include "backend.h"
#include "flat_export.h"
#include "stamp_cpu.h"
#include "stamp_whole.h"

namespace llvm {
class Module;
}

namespace kiln {

class LlvmBackend;
struct DirectExport;

// A parsed, verified module made ready for stamp: aggregate constants materialised,
// exported, local symbols exposed (when stamp takes any function) and, when stamp
// takes every function, its globals as data. Shared by the back end and kiln-replay.
struct StampPlan {
  FlatExport flat;
  std::vector<StampData> data;
  bool whole = false;  // stamp writes every function and the globals: no llvm half
  std::vector<std::string> faults;  // apply_test_faults' names (selection.h): tests only
};
// `selected`: kiln-selection(5)'s filter for the module (selection_filter).
StampPlan plan_stamp_module(llvm::Module& module, const std::string& tag, const FunctionFilter& selected = {});
// Runs the stages and writes stamp's object (with the globals when the plan is whole).
std::string write_stamp_part(const StampPlan& plan, const llvm::Module& module, double* stages_seconds = nullptr);
// The same from stages already run elsewhere (the CUDA executor).
std::string write_stamp_part(const StampPlan& plan, const llvm::Module& module, const StampOutput& code);

// "1": each module's output from the service is compared with the CPU executor's (the
// receipt's service.check); where they differ, the CPU executor's is used.
constexpr const char* kEnvServiceCheck = "KILN_SERVICE_CHECK";
const char* stamp_service_socket();  // nullptr when none
// stamp's stages over `flat`: in the service when there is one (falling back to the CPU
// when it is lost, for the rest of the process), else on the CPU; `route` says which.
StampOutput run_stamp_stages(const FlatModuleData& flat, const std::string& source_name, const std::string& label,
                             ServiceRoute& route);

class StampBackend : public Backend {
 public:
  explicit StampBackend(Profile profile, const BackendOptions& options = {});
  ~StampBackend() override;
  std::string name() const override { return "stamp"; }
  EmitResult emit(std::string_view bitcode, const std::string& label) override;

 private:
  // The direct reader's routes: the whole module stamp's, without LLVM ("direct"), or
  // split ("split"): stamp's part from the direct reader, and LLVM reading only the
  // bodies that fall back. False when neither can be (then result.reader says why and
  // LLVM's route runs: LLVM's parser, the whole module cloned for the fallback half).
  bool emit_direct(std::string_view bitcode, const std::string& label, const std::string& tag,
                   const FunctionFilter& selected, EmitResult& result);
  bool can_split(const DirectExport& direct) const;
  // LLVM's half of a split module: only the bodies that fall back, read lazily. Adds
  // to `temporaries` the symbols of its formerly private variables (private_variables).
  std::string emit_fallback_half(std::string_view bitcode, const std::string& label, const std::string& tag,
                                 const std::vector<bool>& emitted_by_stamp, EmitResult& result,
                                 std::vector<std::string>& temporaries);
  std::unique_ptr<LlvmBackend> llvm_;  // parses, and emits the fallback half
  ReaderChoice reader_;
};

}  // namespace kiln
