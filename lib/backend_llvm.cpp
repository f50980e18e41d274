#include "backend_llvm.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/DiagnosticHandler.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Triple.h>

#include <mutex>

#include "bitcode.h"
#include "error.h"
#include "isolate.h"
#include "timeutil.h"

namespace kiln {

void initialize_llvm_x86() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
    LLVMInitializeX86AsmParser();
  });
}

static llvm::CodeGenOptLevel opt_level_for(Profile p) {
  // fast: what a debug build's code generator does (-O0); balanced: -O1; release: -O2.
  switch (p) {
    case Profile::fast:
      return llvm::CodeGenOptLevel::None;
    case Profile::balanced:
      return llvm::CodeGenOptLevel::Less;
    case Profile::release:
      return llvm::CodeGenOptLevel::Default;
  }
  return llvm::CodeGenOptLevel::None;
}

namespace {
// LLVM reports some errors in code generation (bad inline asm, unsupported features)
// as diagnostics; without a handler it prints them and calls exit(1), ending the
// whole tool. This keeps the first one, to fail that module with it.
struct ErrorCollector : llvm::DiagnosticHandler {
  std::string first_error;
  bool handleDiagnostics(const llvm::DiagnosticInfo& di) override {
    if (di.getSeverity() != llvm::DS_Error) return false;  // warnings and remarks as before
    if (first_error.empty()) {
      llvm::raw_string_ostream os(first_error);
      llvm::DiagnosticPrinterRawOStream printer(os);
      di.print(printer);
      os.flush();
      first_error = first_error.substr(0, first_error.find('\n'));  // not the source line and caret
      if (first_error.empty()) first_error = "(no message)";
    }
    return true;
  }
};
}  // namespace

ParsedModule::ParsedModule() = default;
ParsedModule::ParsedModule(ParsedModule&&) noexcept = default;
ParsedModule& ParsedModule::operator=(ParsedModule&& other) noexcept {
  module = std::move(other.module);  // the old module goes before its context
  context = std::move(other.context);
  return *this;
}
ParsedModule::~ParsedModule() = default;

LlvmBackend::LlvmBackend(Profile profile, const BackendOptions& backend_options)
    : profile_(profile), options_(backend_options) {}

// The target machine is made on first use: the stamp back end, which owns an llvm back
// end for its fallback, then pays nothing for LLVM on a module it takes whole.
llvm::TargetMachine& LlvmBackend::machine() {
  if (machine_) return *machine_;
  initialize_llvm_x86();
  llvm::Triple triple("x86_64-unknown-linux-gnu");
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) throw KilnError(kExitInternal, "", "LLVM has no x86-64 target: " + error);
  llvm::TargetOptions options;
  // rustc emits one section per function and datum so that the linker can drop
  // unused ones; clang's objects accept it too.
  options.FunctionSections = true;
  options.DataSections = true;
  options.UniqueSectionNames = true;
  machine_.reset(target->createTargetMachine(triple, "x86-64", "", options, llvm::Reloc::PIC_, llvm::CodeModel::Small,
                                             opt_level_for(profile_)));
  if (!machine_) throw KilnError(kExitInternal, "", "cannot create the x86-64 target machine");
  return *machine_;
}

LlvmBackend::~LlvmBackend() = default;

ParsedModule LlvmBackend::parse(std::string_view bitcode, const std::string& label, const ParseChecks& checks) {
  ParsedModule parsed;
  parsed.context = std::make_unique<llvm::LLVMContext>();
  parsed.context->setDiagnosticHandler(std::make_unique<ErrorCollector>());
  parsed.module = parse_checked_module(*parsed.context, bitcode, label, checks);
  return parsed;
}

ParsedModule LlvmBackend::parse_lazy(std::string_view bitcode, const std::string& label) {
  ParsedModule parsed;
  parsed.context = std::make_unique<llvm::LLVMContext>();
  parsed.context->setDiagnosticHandler(std::make_unique<ErrorCollector>());
  parsed.module = parse_lazy_bitcode(*parsed.context, bitcode, label);
  return parsed;
}

std::string LlvmBackend::codegen(llvm::Module& module, const std::string& label) {
  std::string problem = triple_problem(module.getTargetTriple().str());
  if (!problem.empty()) throw KilnError(kExitBadInput, label, problem);
  module.setDataLayout(machine().createDataLayout());
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  LlvmStage stage("generating code");
  llvm::legacy::PassManager pm;
  if (machine().addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    throw KilnError(kExitInternal, label, "LLVM cannot emit objects for this target");
  // The context's handler is ours when the module was parsed by this back end.
  auto* errors =
      const_cast<ErrorCollector*>(dynamic_cast<const ErrorCollector*>(module.getContext().getDiagHandlerPtr()));
  if (errors) errors->first_error.clear();
  pm.run(module);
  if (errors && !errors->first_error.empty()) throw KilnError(kExitBadInput, label, "LLVM: " + errors->first_error);
  return std::string(buffer.data(), buffer.size());
}

void count_module(const llvm::Module& module, uint64_t& functions, uint64_t& instructions) {
  for (const auto& f : module) {
    if (f.isDeclaration()) continue;
    ++functions;
    instructions += f.getInstructionCount();
  }
}

EmitResult LlvmBackend::emit(std::string_view bitcode, const std::string& label) {
  EmitResult result;
  Stopwatch clock;
  // The triple is codegen's check, for every caller.
  ParsedModule module =
      parse(bitcode, label, {.verify = options_.verify, .triple = false, .parse_seconds = &result.stages.parse});
  result.stages.verify = clock.lap() - result.stages.parse;
  count_module(*module, result.counts.functions_llvm, result.counts.instructions_llvm);
  result.object = codegen(*module, label);
  result.stages.codegen = clock.lap();
  return result;
}

}  // namespace kiln
