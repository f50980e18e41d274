// The `llvm` back end: LLVM's own code generator, in process. Each instance owns its
// TargetMachine, and each module it reads gets an LLVMContext of its own, so neither
// workers nor modules share LLVM state.
#pragma once
#include <memory>

#include "backend.h"
#include "bitcode.h"

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
}  // namespace llvm

namespace kiln {

// A module with the LLVMContext it lives in, one context per module. LLVM's object for a
// module depends on what else its context read before: regex's debug-info modules come
// out with different DWARF when other modules were parsed into the same context first,
// so with one context per worker, objects depended on which modules a worker saw.
struct ParsedModule {
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;  // declared after the context: destroyed first
  ParsedModule();
  ParsedModule(ParsedModule&&) noexcept;
  ParsedModule& operator=(ParsedModule&&) noexcept;
  ~ParsedModule();
  llvm::Module& operator*() const { return *module; }
  llvm::Module* operator->() const { return module.get(); }
  explicit operator bool() const { return module != nullptr; }
};

class LlvmBackend : public Backend {
 public:
  explicit LlvmBackend(Profile profile, const BackendOptions& options = {});
  ~LlvmBackend() override;
  std::string name() const override { return "llvm"; }
  EmitResult emit(std::string_view bitcode, const std::string& label) override;

  // The steps, for services that parse once and emit many times: a module in a fresh
  // context that reports code generation's errors to codegen().
  ParsedModule parse(std::string_view bitcode, const std::string& label, const ParseChecks& checks = {});
  // The same with the function bodies left unread until materialized (parse_lazy_bitcode);
  // nothing is verified. `bitcode` must outlive the module.
  ParsedModule parse_lazy(std::string_view bitcode, const std::string& label);
  bool verifies() const { return options_.verify; }
  // Generates code for a module (which is consumed: codegen rewrites IR).
  std::string codegen(llvm::Module& module, const std::string& label);

 private:
  llvm::TargetMachine& machine();
  Profile profile_;
  BackendOptions options_;
  std::unique_ptr<llvm::TargetMachine> machine_;
};

// Counts defined functions and their instructions (for receipts).
void count_module(const llvm::Module& module, uint64_t& functions, uint64_t& instructions);
void initialize_llvm_x86();

}  // namespace kiln
