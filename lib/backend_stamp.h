// The `stamp` back end: kiln's data-parallel code generator (kernels/), run by the CPU
// executor, with per-function fallback to `llvm` for what it cannot compile.
#pragma once
#include <memory>
#include <vector>

#include "backend.h"
#include "flat_export.h"
#include "stamp_cpu.h"

namespace llvm {
class Module;
}

namespace kiln {

class LlvmBackend;

// A parsed, verified module made ready for stamp: aggregate constants materialised,
// exported, local symbols exposed (when stamp takes any function) and, when stamp
// takes every function, its globals as data. Shared by the back end and kiln-replay.
struct StampPlan {
  FlatExport flat;
  std::vector<StampData> data;
  bool whole = false;  // stamp writes every function and the globals: no llvm half
};
StampPlan plan_stamp_module(llvm::Module& module, const std::string& tag);
// Runs the stages and writes stamp's object (with the globals when the plan is whole).
std::string write_stamp_part(const StampPlan& plan, const llvm::Module& module, double* stages_seconds = nullptr);
// The same from stages already run elsewhere (the CUDA executor).
std::string write_stamp_part(const StampPlan& plan, const llvm::Module& module, const StampOutput& code);

class StampBackend : public Backend {
 public:
  explicit StampBackend(Profile profile);
  ~StampBackend() override;
  std::string name() const override { return "stamp"; }
  EmitResult emit(std::string_view bitcode, const std::string& label) override;

 private:
  std::unique_ptr<LlvmBackend> llvm_;  // parses, and emits the fallback half
};

}  // namespace kiln
