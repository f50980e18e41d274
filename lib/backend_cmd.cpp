#include "backend_cmd.h"

#include "error.h"
#include "fs.h"
#include "process.h"
#include "timeutil.h"

namespace kiln {

CommandBackend::CommandBackend(std::string command_template) : template_(std::move(command_template)) {
  if (template_.find("{in}") == std::string::npos || template_.find("{out}") == std::string::npos)
    throw KilnError(kExitUsage, "", "a cmd: back end needs {in} and {out} in its command: cmd:" + template_);
}

static std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos; pos += to.size())
    text.replace(pos, from.size(), to);
  return text;
}

EmitResult CommandBackend::emit(std::string_view bitcode, const std::string& label) {
  EmitResult result;
  std::string dir = make_temp_dir("kiln-cmd");
  struct Cleanup {
    std::string d;
    ~Cleanup() { remove_tree(d); }
  } cleanup{dir};
  std::string in = dir + "/in.bc", out = dir + "/out.o";
  Stopwatch clock;
  write_file_atomic(in, bitcode);
  result.stages.write = clock.lap();
  std::string command = replace_all(replace_all(template_, "{in}", shell_quote(in)), "{out}", shell_quote(out));
  ProcessResult run = run_shell(command);
  result.stages.codegen = clock.lap();
  if (run.exit_code == 127) throw KilnError(kExitMissingTool, label, "back end command not found: " + template_);
  if (run.exit_code != 0)
    throw KilnError(kExitFailed, label, "back end command failed with status " + std::to_string(run.exit_code) + ": " + command);
  if (!path_exists(out)) throw KilnError(kExitFailed, label, "back end command wrote no object: " + command);
  result.object = read_file(out);
  result.stages.read = clock.lap();
  std::string problem = object_problem(result.object);
  if (!problem.empty()) throw KilnError(kExitFailed, label, "back end command: " + problem);
  return result;
}

}  // namespace kiln
