// The `cmd:` back end: any external program, run once per module, e.g.
//   cmd:llc-22 -O0 -filetype=obj -relocation-model=pic {in} -o {out}
// so that people writing their own back end can plug it in and compare.
#pragma once
#include "backend.h"

namespace kiln {

class CommandBackend : public Backend {
 public:
  explicit CommandBackend(std::string command_template);
  std::string name() const override { return "cmd:" + template_; }
  EmitResult emit(std::string_view bitcode, const std::string& label) override;

 private:
  std::string template_;
};

}  // namespace kiln
