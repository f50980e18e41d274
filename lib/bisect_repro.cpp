// kiln-bisect's reproducer directory: everything about the culprits that a back-end
// developer needs offline, and a script that shows the failure and the pass.
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <set>

#include "bisect.h"
#include "bitcode.h"
#include "census.h"
#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "process.h"

namespace kiln {

namespace {

// The function's IR as text (llvm-dis's form of one function), with its module's name.
std::string function_ir(const std::string& bytes, const BisectCulprit& c) {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = parse_bitcode(context, bytes, c.module);
  llvm::Function* f = module->getFunction(c.function);
  if (!f) return "; " + c.function + ": not found in module " + c.module + "\n";
  std::string text = "; kiln-bisect suspect: " + c.function + "\n;   " + c.demangled + "\n; module " + c.module +
      " (crate " + c.crate + ", source " + module->getSourceFileName() + ")\n";
  llvm::raw_string_ostream os(text);
  f->print(os);
  os.flush();
  return text;
}

void run_or_note(const std::string& command, const std::string& dir) {
  ProcessOptions quiet;
  quiet.quiet = true;
  ProcessResult r = run_shell(command, quiet);
  if (r.exit_code != 0) append_line_locked(dir + "/NOTES", "exit " + std::to_string(r.exit_code) + ": " + command);
}

// The module on each back end: the candidate with only the suspects selected, and
// the trusted one; and the candidate's flat IR (the functions it emits, no LLVM needed).
void emit_repro_objects(const ReproInput& in, const std::string& module) {
  const std::string bc = in.dir + "/" + module + ".bc";
  const std::string selection = "KILN_SELECTION=" + shell_quote(in.dir + "/selection") + " ";
  const std::string emit = shell_quote(in.kiln_emit) + " " + shell_quote(bc);
  run_or_note(selection + emit + " -o " + shell_quote(in.dir + "/" + module + ".candidate.o") + " --no-verify --backend " +
                  shell_quote(in.options->candidate), in.dir);
  run_or_note(emit + " -o " + shell_quote(in.dir + "/" + module + ".trusted.o") + " --no-verify --backend " +
                  shell_quote(in.options->trusted), in.dir);
  if (in.options->candidate == "stamp")
    run_or_note(selection + emit + " --export-flat " + shell_quote(in.dir + "/" + module + ".flat"), in.dir);
}

std::string script(const ReproInput& in, const std::set<std::string>& modules) {
  const BisectOptions& o = *in.options;
  std::string s = "#!/bin/sh\n# kiln-bisect's reproducer. The suspects:\n";
  for (const auto& c : in.culprits)
    s += "#   module " + c.module + " (crate " + c.crate + ")" + (c.function.empty() ? "" : ": " + c.demangled) + "\n";
  s += "# Emits the module on each back end, then rebuilds the project through kiln-capture and\n"
       "# runs its test twice: with the suspects on " + o.candidate + " (the test should FAIL), and with\n"
       "# them on llvm like everything else (it should PASS). Exit 0 when it shows exactly that.\n"
       "set -u\nhere=$(cd \"$(dirname \"$0\")\" && pwd)\n";
  if (const char* fault = std::getenv("KILN_TEST_FAULT"); fault && *fault)
    s += "# The bisect ran with kiln's test-only fault switch on: without it there is no failure.\n"
         "export KILN_TEST_FAULT=" + shell_quote(fault) + "\n";
  s += "capture=" + shell_quote(in.kiln_capture) + "\nemit=" + shell_quote(in.kiln_emit) + "\n";
  s += "echo '== the module on each back end (objects and flat IR in '\"$here\"')'\nfor m in";
  for (const auto& m : modules) s += " " + m;
  s += "; do\n  KILN_SELECTION=\"$here/selection\" \"$emit\" \"$here/$m.bc\" -o \"$here/$m.candidate.o\" --no-verify --backend " +
       shell_quote(o.candidate) + " >/dev/null\n  \"$emit\" \"$here/$m.bc\" -o \"$here/$m.trusted.o\" --no-verify --backend " +
       shell_quote(o.trusted) + " >/dev/null\ndone\n";
  s += "cd " + shell_quote(o.build_dir) + " || exit 2\n";
  s += "probe() {  # selection file, log name; returns the test's status (3: the build failed)\n"
       "  { " + o.clean_command + "\n  } > \"$here/$2.log\" 2>&1 || return 2\n"
       "  \"$capture\" -o \"$here/corpus\" --backend " + shell_quote(o.candidate) +
       " --candidate-functions \"$1\" -- /bin/sh -c " + shell_quote(o.build_command) + " >> \"$here/$2.log\" 2>&1 || return 3\n"
       "  \"$capture\" -o \"$here/corpus\" --backend " + shell_quote(o.candidate) +
       " --candidate-functions \"$1\" -- /bin/sh -c " + shell_quote(o.test_command) + " >> \"$here/$2.log\" 2>&1\n}\n";
  s += "echo '== the suspects on " + o.candidate + ", everything else on llvm: the test should FAIL'\n"
       "probe \"$here/selection\" suspects-on-candidate; a=$?\n"
       "echo \"   exit $a (log: $here/suspects-on-candidate.log)\"\n"
       "echo '== everything on llvm, the suspects too: the test should PASS'\n"
       "probe \"$here/selection-none\" suspects-on-trusted; b=$?\n"
       "echo \"   exit $b (log: $here/suspects-on-trusted.log)\"\n"
       "if [ \"$a\" -ne 0 ] && [ \"$b\" -eq 0 ]; then echo 'reproduced: FAIL with the suspects on " + o.candidate +
       ", PASS without them'; exit 0; fi\n"
       "echo 'not reproduced'; exit 1\n";
  return s;
}

}  // namespace

void write_reproducer(const ReproInput& in) {
  // The directory is the bisect's own (inside its state directory): made afresh.
  if (path_exists(in.dir)) remove_tree(in.dir);
  make_dirs(in.dir);
  Corpus corpus = Corpus::open(in.corpus_dir);
  write_file_atomic(in.dir + "/selection", in.selection);
  write_file_atomic(in.dir + "/selection-none", "# kiln-selection 1\n");
  std::set<std::string> modules;
  for (const auto& c : in.culprits) modules.insert(c.module);
  for (const auto& m : modules) {
    std::string bytes = corpus.load_blob(m);
    write_file_atomic(in.dir + "/" + m + ".bc", bytes);
    write_file_atomic(in.dir + "/" + m + ".census.json", census_of_bytes(bytes, m, m).to_json() + "\n");
    emit_repro_objects(in, m);
  }
  int n = 0;
  for (const auto& c : in.culprits)
    if (!c.function.empty())
      write_file_atomic(in.dir + "/suspect-" + std::to_string(++n) + ".ll", function_ir(corpus.load_blob(c.module), c));
  const std::string path = in.dir + "/reproduce.sh";
  write_file_atomic(path, script(in, modules));
  if (::chmod(path.c_str(), 0755) != 0) throw KilnError(kExitIo, path, errno_reason(errno));
}

}  // namespace kiln
