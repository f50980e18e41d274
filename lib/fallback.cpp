#include "fallback.h"

#include <llvm/IR/Comdat.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalValue.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <unistd.h>

#include "elf_combine.h"
#include "error.h"
#include "fs.h"
#include "kiln_config.h"
#include "process.h"

namespace kiln {

namespace {

// Names starting with "llvm." are reserved for the compiler (llvm.used,
// llvm.embedded.module, llvm.cmdline, ...): the code generator treats some of them
// specially and no function body refers to them, so they keep their linkage.
bool reserved_name(const llvm::GlobalValue& gv) { return gv.hasName() && gv.getName().starts_with("llvm."); }

// Moves every member of `from` into a comdat named `to` with the same selection
// kind, and removes `from` from the module.
void rename_comdat(llvm::Module& module, llvm::Comdat* from, llvm::StringRef to) {
  llvm::Comdat* renamed = module.getOrInsertComdat(to);
  renamed->setSelectionKind(from->getSelectionKind());
  std::vector<llvm::GlobalObject*> users(from->getUsers().begin(), from->getUsers().end());
  for (llvm::GlobalObject* go : users) go->setComdat(renamed);
  module.getComdatSymbolTable().erase(from->getName());
}

std::string one_line(const std::string& text, size_t lines) {
  std::string out;
  size_t start = 0;
  for (size_t n = 0; n < lines && start < text.size(); ++n) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    size_t first = line.find_first_not_of(" \t");
    if (first != std::string::npos) {
      line = line.substr(first);
      if (!out.empty()) out += ": ";
      out += line;
    }
    start = end + 1;
  }
  return out;
}

}  // namespace

size_t expose_local_symbols(llvm::Module& module, const std::string& tag) {
  // Collect first: renaming while walking the symbol lists is safe for the lists
  // but not for the comdat table, and a renamed symbol must not be seen twice.
  std::vector<llvm::GlobalValue*> locals;
  for (llvm::GlobalValue& gv : module.global_values()) {
    if (!gv.hasLocalLinkage() || gv.isDeclaration() || reserved_name(gv)) continue;
    locals.push_back(&gv);
  }
  const std::string suffix = ".kiln." + tag;
  size_t anonymous = 0;
  for (llvm::GlobalValue* gv : locals) {
    std::string old_name = gv->getName().str();
    // A comdat named after a local symbol is keyed on it: its ELF group signature
    // is a local symbol, which linkers never deduplicate. Once the symbol is
    // global, a group with the old name could merge with another object's group
    // of that name, so the comdat takes the symbol's new (unique) name too.
    llvm::Comdat* keyed = nullptr;
    if (!old_name.empty()) {
      auto it = module.getComdatSymbolTable().find(old_name);
      if (it != module.getComdatSymbolTable().end()) keyed = &it->second;
    }
    std::string wanted = old_name.empty() ? "__kiln_anon." + std::to_string(anonymous++) + suffix : old_name + suffix;
    // The mark outlives the linkage that says so: the combiner drops such symbols.
    auto* variable = llvm::dyn_cast<llvm::GlobalVariable>(gv);
    if (variable && gv->hasPrivateLinkage())
      variable->setMetadata(kPrivateMark, llvm::MDNode::get(module.getContext(), {}));
    gv->setName(wanted);  // LLVM appends a number if the name is taken
    // The linkage goes first: a local symbol cannot have hidden visibility.
    gv->setLinkage(llvm::GlobalValue::ExternalLinkage);
    gv->setVisibility(llvm::GlobalValue::HiddenVisibility);
    gv->setDSOLocal(true);
    // unnamed_addr, thread-locality, section, alignment and comdat membership stay.
    if (keyed) rename_comdat(module, keyed, gv->getName());
  }
  return locals.size();
}

bool was_private_variable(const llvm::GlobalValue& gv) {
  const auto* variable = llvm::dyn_cast<llvm::GlobalVariable>(&gv);
  return variable && variable->getMetadata(kPrivateMark) != nullptr;
}

std::vector<std::string> private_variables(const llvm::Module& module) {
  std::vector<std::string> names;
  for (const llvm::GlobalVariable& g : module.globals())
    if (!g.isDeclaration() && was_private_variable(g)) names.push_back(g.getName().str());
  return names;
}

namespace {

void check_split_size(const llvm::Module& module, const std::vector<bool>& emitted_by_stamp) {
  if (emitted_by_stamp.size() != module.size())
    throw KilnError(kExitInternal, module.getModuleIdentifier(),
                    "the stamp split marks " + std::to_string(emitted_by_stamp.size()) +
                        " functions but the module has " + std::to_string(module.size()));
}

// Stamp's functions become external declarations in the llvm half. A function whose
// body was never read (lazy loading) is a definition still to be materialized: deleting
// its body also makes it no longer materializable, so it is never read.
void drop_stamp_bodies(llvm::Module& half, const std::vector<bool>& emitted_by_stamp) {
  size_t index = 0;
  for (llvm::Function& f : half) {
    bool marked = emitted_by_stamp[index++];
    if (!marked || f.isDeclaration()) continue;
    f.deleteBody();  // also drops the body's metadata and sets external linkage
    f.setLinkage(llvm::GlobalValue::ExternalLinkage);
    if (f.hasPersonalityFn()) f.setPersonalityFn(nullptr);
    if (f.hasPrefixData()) f.setPrefixData(nullptr);
    if (f.hasPrologueData()) f.setPrologueData(nullptr);
    f.setComdat(nullptr);
  }
}

void verify_half(const llvm::Module& half) {
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(half, &os)) {
    os.flush();
    throw KilnError(kExitInternal, half.getModuleIdentifier(),
                    "the llvm half of the stamp split does not verify: " + one_line(problems, 2));
  }
}

}  // namespace

std::unique_ptr<llvm::Module> fallback_module(const llvm::Module& module, const std::vector<bool>& emitted_by_stamp) {
  check_split_size(module, emitted_by_stamp);
  // CloneModule creates the functions in the order of the source module.
  std::unique_ptr<llvm::Module> half = llvm::CloneModule(module);
  drop_stamp_bodies(*half, emitted_by_stamp);
  verify_half(*half);
  return half;
}

void make_fallback_half(llvm::Module& lazy, const std::vector<bool>& emitted_by_stamp) {
  check_split_size(lazy, emitted_by_stamp);
  drop_stamp_bodies(lazy, emitted_by_stamp);
  if (llvm::Error e = lazy.materializeAll()) {
    std::string message = llvm::toString(std::move(e));
    throw KilnError(kExitBadInput, lazy.getModuleIdentifier(),
                    "truncated or corrupt bitcode: " + one_line(message, 1));
  }
  // Were a dropped body read after all, both halves would define the function.
  size_t index = 0;
  for (const llvm::Function& f : lazy)
    if (emitted_by_stamp[index++] && !f.isDeclaration())
      throw KilnError(kExitInternal, lazy.getModuleIdentifier(), "stamp's function " + f.getName().str() +
                                                                    " was materialized in the llvm half");
  verify_half(lazy);
}

std::string combine_objects(const std::vector<std::string>& objects, const std::string& label) {
  const std::string lld = std::string(KILN_LLVM_BINDIR) + "/ld.lld";
  if (::access(lld.c_str(), X_OK) != 0)
    throw KilnError(kExitMissingTool, lld, "not found; combining objects needs LLVM 22's linker (install lld-22)");
  if (objects.empty()) throw KilnError(kExitInternal, label, "no objects to combine");

  TempDir dir("kiln-combine");
  // lld runs in the directory with relative names, so that its messages name the
  // inputs by their position ("input1.o") rather than by a temporary path.
  std::vector<std::string> argv = {lld, "-r", "-o", "out.o"};
  for (size_t i = 0; i < objects.size(); ++i) {
    std::string name = "input" + std::to_string(i) + ".o";
    write_file_atomic(dir.path + "/" + name, objects[i]);
    argv.push_back(name);
  }
  ProcessOptions options;
  options.cwd = dir.path;
  options.quiet = true;
  // run_process cannot capture stderr; the shell sends lld's to a file instead.
  ProcessResult result = run_shell("exec " + shell_join(argv) + " 2>lld.err", options);
  if (result.exit_code != 0) {
    std::string message;
    try {
      message = one_line(read_file(dir.path + "/lld.err"), 1);
    } catch (const KilnError&) {}
    const std::string prefix = "ld.lld: ";
    if (message.compare(0, prefix.size(), prefix) == 0) message = message.substr(prefix.size());
    if (message.empty())
      message = result.signaled ? "killed by signal " + std::to_string(result.exit_code - 128)
                                : "exit status " + std::to_string(result.exit_code);
    throw KilnError(kExitFailed, label, "ld.lld -r failed: " + message);
  }
  return read_file(dir.path + "/out.o");
}

std::string combine_objects(const std::vector<std::string>& objects, const std::string& label, const std::string& tag,
                            const std::vector<std::string>& temporaries) {
  std::vector<std::string_view> views(objects.begin(), objects.end());
  CombineResult combined = combine_relocatable(views, tag, temporaries);
  if (combined.ok()) return std::move(combined.object);
  // What the in-process combiner does not handle, ld.lld -r does. The reason is neither
  // reported nor counted anywhere: the object is just as good, only slower to make.
  // ld.lld -r knows neither the tag nor the temporaries: the module's local symbols
  // stayed global NAME.kiln.TAG (in backtraces, perf, nm; defined twice where two
  // objects of one bitcode meet). The combiner, on lld's one object, makes them local
  // NAME again, which it can where it refused only to join two (their notes, say).
  std::string linked = combine_objects(objects, label);
  CombineResult local = combine_relocatable({std::string_view(linked)}, tag, temporaries);
  return local.ok() ? std::move(local.object) : linked;
}

}  // namespace kiln
