// Reading LLVM bitcode with clear, one-line errors: empty, foreign (not bitcode),
// truncated or corrupt input, and modules that do not target x86-64 Linux ELF.
#pragma once
#include <memory>
#include <string>
#include <string_view>

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace kiln {

// Throws KilnError(kExitBadInput) naming `path` when the bytes are not LLVM bitcode.
void check_bitcode_magic(std::string_view bytes, const std::string& path);
// Parses bitcode into ctx; throws KilnError naming `path` with LLVM's reason.
std::unique_ptr<llvm::Module> parse_bitcode(llvm::LLVMContext& ctx, std::string_view bytes, const std::string& path);
// The same with the function bodies left in the bitcode until materialized (LLVM's lazy
// loading; metadata is read in full when the module is materialized). `bytes` must
// outlive the module.
std::unique_ptr<llvm::Module> parse_lazy_bitcode(llvm::LLVMContext& ctx, std::string_view bytes,
                                                 const std::string& path);
// Cheap look-ups that do not materialise the module.
std::string bitcode_triple(std::string_view bytes);
std::string bitcode_producer(std::string_view bytes);
// Empty when the triple is x86-64 Linux ELF (what kiln emits), else why not.
std::string triple_problem(const std::string& triple);
// Empty when the module verifies, else the verifier's first message.
std::string verify_problem(const llvm::Module& module);

// What is wrong with a parsed module (empty: nothing, or not checked).
struct ModuleProblems {
  std::string verify, triple;
};
// What parse_checked_module checks after parsing, and where it reports.
struct ParseChecks {
  bool verify = true;  // the IR verifier: invalid IR can crash the code generator
  bool triple = true;  // x86-64 Linux ELF, what kiln emits (triple_problem)
  // Set: the problems found are returned here (empty: none), not thrown.
  ModuleProblems* problems = nullptr;
  double* parse_seconds = nullptr;  // set: the parse's own time, without the checks
};
// The one read of a module: parse_bitcode (its errors), then the verifier, then the
// triple, as `checks` asks. The first problem (the verifier's before the triple's) is
// thrown as KilnError(kExitBadInput, label, problem) unless checks.problems is set.
std::unique_ptr<llvm::Module> parse_checked_module(llvm::LLVMContext& ctx, std::string_view bytes,
                                                   const std::string& label, const ParseChecks& checks = {});
// A short description of what a non-bitcode file looks like (for error messages).
std::string describe_foreign_bytes(std::string_view bytes);

}  // namespace kiln
