// What every wrapper process of a capture shares: its settings from the environment the
// driver set, the invocation's id, and its line in the corpus's invocations.jsonl.
// No LLVM here (kiln-rustc-wrapper links this).
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "capture.h"
#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "hash.h"
#include "timeutil.h"

namespace kiln {

WrapperSettings WrapperSettings::from_environment() {
  WrapperSettings s;
  const char* corpus = std::getenv(kEnvCorpus);
  if (!corpus || !*corpus)
    throw KilnError(kExitUsage, "", std::string(kEnvCorpus) + " is not set (run the build through kiln-capture)");
  s.corpus_dir = corpus;
  const char* backend = std::getenv(kEnvBackend);
  s.backend = backend && *backend ? backend : "native";
  const char* profile = std::getenv(kEnvProfile);
  s.profile = profile && *profile ? profile : "fast";
  const char* fallback = std::getenv(kEnvFallback);
  s.fallback = fallback && std::string(fallback) == "1";
  const char* route = std::getenv(kEnvRoute);
  if (route && std::string(route) == "plugin") {
    s.route = "plugin";
    const char* plugin = std::getenv(kEnvRustcPlugin);
    s.plugin = plugin ? plugin : "";
  }
  return s;
}

std::string args_hash(const std::vector<std::string>& args) {
  std::string joined;
  for (const auto& a : args) {
    joined += a;
    joined.push_back('\0');
  }
  return xxh3_128_hex(joined);
}

std::string new_invocation_id(const std::vector<std::string>& args) {
  auto now = std::chrono::system_clock::now().time_since_epoch().count();
  return args_hash(args).substr(0, 16) + "-" + std::to_string(::getpid()) + "-" + std::to_string(now % 1000000007);
}

std::string current_directory() {
  char buf[4096];
  return ::getcwd(buf, sizeof buf) ? std::string(buf) : std::string(".");
}

void record_invocation(const WrapperSettings& s, const std::string& tool, const std::string& id,
                       const std::string& action, const std::string& reason, const std::vector<std::string>& args,
                       int modules, double seconds, const Phases& phases) {
  InvocationRecord r;
  r.phases = phases;
  double startup = 0;
  for (const auto& [name, t] : phases)
    if (name == "startup") startup = t;
  r.start = unix_seconds_now() - seconds - startup;
  r.id = id;
  r.tool = tool;
  r.action = action;
  r.reason = reason;
  r.args = args;
  r.cwd = current_directory();
  r.time = iso8601_now();
  r.modules = modules;
  r.seconds = seconds;
  append_invocation_to(s.corpus_dir, r);
}

ProcessOptions use_capture_tmpdir() {
  ProcessOptions children;
  const char* dir = std::getenv(kEnvTmpdir);
  if (!dir || !*dir || !is_directory(dir)) return children;
  const char* build_tmpdir = std::getenv("TMPDIR");
  if (build_tmpdir) children.set_env.push_back(std::string("TMPDIR=") + build_tmpdir);
  else children.unset_env.push_back("TMPDIR");
  ::setenv("TMPDIR", dir, 1);
  return children;
}

}  // namespace kiln
