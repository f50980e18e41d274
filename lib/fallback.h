// Per-function fallback for the stamp back end. stamp emits only function bodies; the
// `llvm` back end emits everything else (all global variables, aliases, and the
// functions stamp cannot compile). The two objects are then combined into one
// relocatable object.
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace llvm {
class GlobalValue;
class Module;
}

namespace kiln {

// Gives every symbol with local linkage (internal or private) that is defined in
// the module a unique external name with hidden visibility, "<old>.kiln.<tag>", so
// that the two halves can refer to each other's symbols; nothing outside the final
// link unit can see them. Unnamed globals get a name too. Run on the module before
// it is exported for stamp, so that stamp's relocations use the final names.
// Returns how many symbols were renamed. The variables that were private (LLVM's .L
// symbols, which its object mostly omits) are marked so (kPrivateMark metadata), for
// was_private_variable and private_variables.
size_t expose_local_symbols(llvm::Module& module, const std::string& tag);

// The metadata kind expose_local_symbols marks formerly private variables with.
constexpr const char* kPrivateMark = "kiln.private";
// Whether `gv` is a variable that was private before expose_local_symbols renamed it.
bool was_private_variable(const llvm::GlobalValue& gv);
// The names (NAME.kiln.TAG) of the module's variables that were private: what the
// combiner is to give no symbol in the final object (elf_combine.h, temporaries).
std::vector<std::string> private_variables(const llvm::Module& module);

// The fallback module, a copy for the llvm back end: the functions marked in
// `emitted_by_stamp` (indexed like the module's function list, declarations
// included) lose their bodies and become external declarations; all else stays.
std::unique_ptr<llvm::Module> fallback_module(const llvm::Module& module, const std::vector<bool>& emitted_by_stamp);

// The same half made in place from a lazily read module (parse_lazy_bitcode): the
// functions marked in `emitted_by_stamp` become declarations without their bodies ever
// being read, the others are materialized with the metadata, and the half is verified.
// No copy of the module is made.
void make_fallback_half(llvm::Module& lazy, const std::vector<bool>& emitted_by_stamp);

// Combines relocatable objects into one with `ld.lld -r` (LLVM 22's lld, from
// KILN_LLVM_BINDIR). Throws KilnError(kExitMissingTool) when lld is missing and
// KilnError(kExitFailed) naming `label` when it fails.
std::string combine_objects(const std::vector<std::string>& objects, const std::string& label);

// The same for the two parts of a module split with expose_local_symbols(module, tag):
// combined in process (lib/stamp/elf_combine.h), where the renamed symbols the result
// defines become local under their own names again; what that does not handle goes to
// ld.lld -r as above (and keeps the renamed names). `temporaries`: the symbols of
// formerly private variables, which the in-process combiner leaves out
// (private_variables; stamp's StampData::was_private).
std::string combine_objects(const std::vector<std::string>& objects, const std::string& label, const std::string& tag,
                            const std::vector<std::string>& temporaries = {});

}  // namespace kiln
