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
// Cheap look-ups that do not materialise the module.
std::string bitcode_triple(std::string_view bytes);
std::string bitcode_producer(std::string_view bytes);
// Empty when the triple is x86-64 Linux ELF (what kiln emits), else why not.
std::string triple_problem(const std::string& triple);
// Empty when the module verifies, else the verifier's first message.
std::string verify_problem(const llvm::Module& module);
// A short description of what a non-bitcode file looks like (for error messages).
std::string describe_foreign_bytes(std::string_view bytes);

}  // namespace kiln
