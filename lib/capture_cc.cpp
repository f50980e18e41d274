// The C/C++ compiler wrapper (CC=kiln-cc, CXX=kiln-c++ around clang-22). A compile-only
// invocation (-c, one source) runs clang with -emit-llvm into the same output path,
// stores that bitcode, and writes the object emitted by the selected back end over it,
// so dependency files and output names stay exactly as the build expects.
// Preprocessing, assembly, link and multi-source invocations pass through.
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bitcode.h"
#include "capture.h"
#include "capture_args.h"
#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "isolate.h"
#include "process.h"
#include "timeutil.h"

namespace kiln {

namespace {

bool is_source(const std::string& a) {
  static const char* const kExt[] = {".c", ".cc", ".cpp", ".cxx", ".c++", ".C", ".i", ".ii"};
  for (const char* e : kExt) {
    size_t n = std::strlen(e);
    if (a.size() > n && a.compare(a.size() - n, n, e) == 0) return true;
  }
  return false;
}

// clang options whose value is the next argument (a value is not an input).
bool clang_takes_value(const std::string& a) {
  static const char* const kFlags[] = {"-o",
                                       "-I",
                                       "-D",
                                       "-U",
                                       "-include",
                                       "-isystem",
                                       "-iquote",
                                       "-idirafter",
                                       "-MF",
                                       "-MT",
                                       "-MQ",
                                       "-x",
                                       "-arch",
                                       "-target",
                                       "--target",
                                       "-Xclang",
                                       "-Xlinker",
                                       "-Xassembler",
                                       "-L",
                                       "-l",
                                       "-imacros",
                                       "-isysroot",
                                       "--sysroot",
                                       "-std",
                                       "-MJ",
                                       "-mllvm",
                                       "-include-pch",
                                       "-resource-dir",
                                       "-iprefix",
                                       "-iwithprefix",
                                       "-ivfsoverlay",
                                       "--param",
                                       "-Xpreprocessor",
                                       "-working-directory",
                                       "-gcc-toolchain",
                                       "-iwithprefixbefore",
                                       "-cxx-isystem",
                                       "-T",
                                       "-u",
                                       "-z",
                                       "-e",
                                       "--output"};
  for (const char* f : kFlags)
    if (a == f) return true;
  return false;
}

}  // namespace

CcCall parse_cc_args(const std::vector<std::string>& args) {
  CcCall c;
  c.args = args;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-c") c.compile_only = true;
    else if (a == "-E" || a == "-S" || a == "-M" || a == "-MM" || a == "-fsyntax-only") c.other_mode = true;
    else if (a == "-emit-llvm" || a.rfind("-flto", 0) == 0) c.already_bitcode = true;
    else if ((a == "-o" || a == "--output") && i + 1 < args.size()) c.output = args[++i];
    else if (a.rfind("--output=", 0) == 0) c.output = a.substr(9);
    else if (a.rfind("-o", 0) == 0 && a.size() > 2) c.output = a.substr(2);
    else if (a.size() > 1 && a[0] == '@') c.response_file = true;
    else if (a == "-x") {
      c.language_override = true;
      ++i;
    } else if (clang_takes_value(a)) ++i;  // before -g...: -gcc-toolchain DIR
    else if (a.rfind("-O", 0) == 0) c.opt_level = a.size() > 2 ? a.substr(2) : "1";
    else if (a == "-g0") c.debuginfo = 0;
    else if (a == "-g1" || a == "-gline-tables-only") c.debuginfo = 1;
    else if (a.rfind("-g", 0) == 0 && a.rfind("-gno", 0) != 0) c.debuginfo = 2;
    else if (a == "-" || (!a.empty() && a[0] != '-')) {
      ++c.inputs;
      if (is_source(a)) c.sources.push_back(a);
    }
  }
  return c;
}

std::string passthrough_reason(const CcCall& c) {
  // Its -o or its sources may be in the file: the object could go elsewhere than kiln thinks.
  if (c.response_file) return "a response file (@FILE), whose arguments kiln does not read";
  if (!c.compile_only) return c.sources.empty() ? "link or query" : "compile and link in one step";
  if (c.other_mode) return "preprocess, assembly or dependency-only output";
  if (c.already_bitcode) return "already emits bitcode (-emit-llvm or -flto)";
  if (c.language_override) return "explicit -x language";
  if (c.sources.size() != 1) return c.sources.empty() ? "no C or C++ source" : "several sources in one invocation";
  // clang makes an object of each (and refuses -o with several outputs).
  if (c.inputs != 1) return "an input beside the C or C++ source (assembly, an object)";
  // Bitcode sent to standard output or a device cannot be read back, and such an
  // output must never be removed.
  struct stat st {};
  if (c.output == "-" || (::stat(c.output.c_str(), &st) == 0 && !S_ISREG(st.st_mode)))
    return "output is not a regular file (-o - or a device)";
  return "";
}

std::string default_output(const std::string& source) {
  std::string base = basename_of(source);
  auto dot = base.find_last_of('.');
  return base.substr(0, dot) + ".o";
}

namespace {

// Removes what the wrapper left at the output path: a regular file only, never the
// device or directory that the build named.
void remove_output(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(path.c_str());
}

// The output path while it may hold bitcode that the build must never take for its
// object: a signal that stops the build removes it before this wrapper dies, and so
// does a crash of the wrapper itself. The compiler the wrapper runs is stopped first
// (and waited for), or it could write the output after its removal: make passes a
// signal to its own children only, not to the compiler under this wrapper.
char g_bitcode_output[4096];
// The child now running: the compiler (run_process's running_child) or the back end's
// worker (run_isolated_one's running_worker), which stops a cmd: command it runs.
volatile sig_atomic_t g_compiler = 0;

extern "C" void remove_bitcode_and_die(int sig) {
  const pid_t compiler = g_compiler;
  if (compiler > 0 && ::kill(compiler, sig == SIGINT || sig == SIGHUP ? sig : SIGTERM) == 0)
    while (::waitpid(compiler, nullptr, 0) < 0 && errno == EINTR) {}
  if (g_bitcode_output[0]) ::unlink(g_bitcode_output);
  ::signal(sig, SIG_DFL);
  ::raise(sig);  // delivered, with the default action, when this handler returns
}

struct BitcodeGuard {
  explicit BitcodeGuard(const std::string& path) {
    std::string absolute = absolute_path(path);
    if (absolute.size() >= sizeof g_bitcode_output) return;
    std::memcpy(g_bitcode_output, absolute.c_str(), absolute.size() + 1);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) {
      struct sigaction sa {
      }, old{};
      sa.sa_handler = remove_bitcode_and_die;
      sigemptyset(&sa.sa_mask);
      ::sigaction(sig, nullptr, &old);
      if (old.sa_handler != SIG_IGN) ::sigaction(sig, &sa, nullptr);
    }
  }
  ~BitcodeGuard() { g_bitcode_output[0] = '\0'; }
};

struct Compile {
  const WrapperSettings& s;
  const CcCall& c;
  const std::vector<std::string>& args;    // as the build gave them
  const std::vector<std::string>& native;  // the real compiler and those arguments
  const ProcessOptions& children;          // the build's own TMPDIR for the compilers
  std::string tool, real, id, output;
  Stopwatch clock;
};

// Compiles to bitcode at the output path, stores it, and puts the object there.
// Returns the wrapper's status; a KilnError leaves the output path to the caller.
int capture_compile(Compile& k) {
  const WrapperSettings& s = k.s;
  std::vector<std::string> bitcode_args = k.native;
  if (k.c.output.empty()) bitcode_args.insert(bitcode_args.end(), {"-o", k.output});
  bitcode_args.push_back("-emit-llvm");
  ProcessResult r = run_process(bitcode_args, k.children);
  if (r.exit_code != 0) {  // a compile error is the user's: clang has said why
    record_invocation(s, k.tool, k.id, "failed", k.real + " exited with status " + std::to_string(r.exit_code), k.args,
                      0, k.clock.seconds());
    return r.exit_code;
  }
  std::string bytes = read_file(k.output);
  Corpus corpus = Corpus::open(s.corpus_dir);
  ModuleRecord m;
  m.bytes = bytes.size();
  m.triple = bitcode_triple(bytes);
  m.producer = bitcode_producer(bytes);
  m.tool = k.tool;
  m.crate = k.c.sources[0];
  m.cgu = basename_of(k.c.sources[0]);
  m.args = k.args;
  m.args_hash = args_hash(k.args);
  m.opt_level = k.c.opt_level;
  m.debuginfo = k.c.debuginfo;
  m.cwd = current_directory();
  m.invocation = k.id;
  m.time = iso8601_now();
  m.id = corpus.store_blob(bytes);
  corpus.append_module(m);

  if (s.backend == "native") {
    // The build keeps clang's own object: compile again, unchanged.
    int rc = run_process(k.native, k.children).exit_code;
    if (rc != 0) remove_output(k.output);  // clang kept our bitcode there
    record_invocation(s, k.tool, k.id, rc == 0 ? "captured" : "failed",
                      rc == 0 ? "" : k.real + " exited with status " + std::to_string(rc), k.args, 1,
                      k.clock.seconds());
    return rc;
  }
  try {
    // In a worker process: a back end that crashes, or LLVM's fatal error, is this
    // module's failure (the output removed, --fallback's compile), not the wrapper's death.
    std::string object = run_isolated_one(
        "the back end", [&] { return emit_for_capture(s, bytes, m.id, k.output); }, &g_compiler);
    write_file_atomic(k.output, object, Durability::kAtomic);  // the compiler's own output: clang does not sync it
  } catch (const std::exception& e) {
    remove_output(k.output);
    if (!s.fallback) {
      std::fprintf(stderr, "kiln-capture: error: %s (%s): %s\n", k.c.sources[0].c_str(), m.id.c_str(), e.what());
      record_invocation(s, k.tool, k.id, "failed", e.what(), k.args, 1, k.clock.seconds());
      return kExitFailed;
    }
    std::fprintf(stderr, "kiln-capture: warning: %s: %s; falling back to %s\n", k.c.sources[0].c_str(), e.what(),
                 k.real.c_str());
    int rc = run_process(k.native, k.children).exit_code;
    record_invocation(s, k.tool, k.id, "fallback", e.what(), k.args, 1, k.clock.seconds());
    return rc;
  }
  record_invocation(s, k.tool, k.id, "captured", "", k.args, 1, k.clock.seconds());
  return 0;
}

}  // namespace

int cc_wrapper_main(int argc, char** argv, bool cxx) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const char* real_env = std::getenv(cxx ? kEnvRealCxx : kEnvRealCc);
  std::string real = real_env && *real_env ? real_env : (cxx ? "clang++-22" : "clang-22");
  std::string tool = cxx ? "clang++" : "clang";
  WrapperSettings s = WrapperSettings::from_environment();
  CcCall c = parse_cc_args(args);
  std::string id = new_invocation_id(args);
  std::string reason = passthrough_reason(c);
  std::vector<std::string> native = args;
  native.insert(native.begin(), real);
  if (!reason.empty()) {
    record_invocation(s, tool, id, "passthrough", reason, args, 0, 0);
    exec_process(native);
  }
  ProcessOptions children = use_capture_tmpdir();
  children.running_child = &g_compiler;
  std::string output = c.output.empty() ? default_output(c.sources[0]) : c.output;
  Compile k{s, c, args, native, children, tool, real, id, output, {}};
  BitcodeGuard guard(output);
  try {
    return capture_compile(k);
  } catch (const std::exception& e) {
    // Kiln failed this module (a full disk, say): the build must not find our bitcode
    // at its object path, so that a later build compiles the file again.
    remove_output(output);
    std::fprintf(stderr, "kiln-capture: error: %s: %s\n", c.sources[0].c_str(), e.what());
    try {
      record_invocation(s, tool, id, "failed", e.what(), args, 0, k.clock.seconds());
    } catch (const std::exception&) {  // the same full disk, most likely: the message above says it
    }
    return kExitFailed;
  }
}

}  // namespace kiln
