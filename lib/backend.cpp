#include "backend.h"

#include "backend_cmd.h"
#include "backend_llvm.h"
#include "backend_stamp.h"
#include "error.h"
#include "hash.h"
#include "selection.h"

#include <cstdlib>
#include <cstring>

namespace kiln {

namespace {

// A cmd: back end under a selection (kiln-selection(5)): it takes whole modules, so a
// module goes to it when any line could select something in it, else to llvm.
class SelectedModulesBackend : public Backend {
 public:
  SelectedModulesBackend(std::unique_ptr<Backend> candidate, std::unique_ptr<Backend> trusted,
                         const Selection& selection)
      : candidate_(std::move(candidate)), trusted_(std::move(trusted)), selection_(selection) {}
  std::string name() const override { return candidate_->name(); }
  EmitResult emit(std::string_view bitcode, const std::string& label) override {
    const std::string id = xxh3_128_hex(bitcode);
    EmitResult r = (selection_.selects_module(id) ? candidate_ : trusted_)->emit(bitcode, label);
    r.selection = selection_.digest_for(id);
    return r;
  }

 private:
  std::unique_ptr<Backend> candidate_, trusted_;
  const Selection& selection_;
};

}  // namespace

std::unique_ptr<Backend> make_backend(const std::string& spec, Profile profile) {
  return make_backend(spec, profile, BackendOptions::from_environment());
}

std::unique_ptr<Backend> make_backend(const std::string& spec, Profile profile, const BackendOptions& options) {
  check_backend_spec(spec);
  const Selection* selection = active_selection();
  if (spec == "llvm") return std::make_unique<LlvmBackend>(profile, options);
  if (spec.rfind("cmd:", 0) == 0) {
    auto command = std::make_unique<CommandBackend>(spec.substr(4));
    if (!selection) return command;
    return std::make_unique<SelectedModulesBackend>(std::move(command), std::make_unique<LlvmBackend>(profile, options),
                                                    *selection);
  }
  return std::make_unique<StampBackend>(profile, options);  // check_backend_spec left only stamp
}

}  // namespace kiln
