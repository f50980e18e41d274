// The `llvm` back end: LLVM's own code generator, in process. Each instance owns its
// LLVMContext and TargetMachine, so workers never share LLVM state.
#pragma once
#include <memory>

#include "backend.h"

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
}  // namespace llvm

namespace kiln {

class LlvmBackend : public Backend {
 public:
  explicit LlvmBackend(Profile profile);
  ~LlvmBackend() override;
  std::string name() const override { return "llvm"; }
  EmitResult emit(std::string_view bitcode, const std::string& label) override;

  // The steps, for services that parse once and emit many times.
  llvm::LLVMContext& context() { return *context_; }
  std::unique_ptr<llvm::Module> parse(std::string_view bitcode, const std::string& label);
  // Generates code for a module (which is consumed: codegen rewrites IR).
  std::string codegen(llvm::Module& module, const std::string& label);

 private:
  Profile profile_;
  std::unique_ptr<llvm::LLVMContext> context_;
  std::unique_ptr<llvm::TargetMachine> machine_;
};

// Counts defined functions and their instructions (for receipts).
void count_module(const llvm::Module& module, uint64_t& functions, uint64_t& instructions);
void initialize_llvm_x86();

}  // namespace kiln
