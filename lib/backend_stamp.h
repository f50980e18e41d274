// The `stamp` back end: kiln's data-parallel code generator (kernels/), run by the CPU
// executor, with per-function fallback to `llvm` for what it cannot compile.
#pragma once
#include <memory>

#include "backend.h"

namespace kiln {

class LlvmBackend;
struct FlatExport;

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
