// Running other programs: the wrapped build, the real compiler, external back ends,
// and the builds that kiln-measure times. Returns status and resource use (wait4).
#pragma once
#include <string>
#include <vector>

namespace kiln {

struct ProcessResult {
  int exit_code = -1;      // exit status, or 128 + signal number
  bool signaled = false;
  double wall_seconds = 0;
  double user_seconds = 0;
  double sys_seconds = 0;
  long peak_rss_kib = 0;   // ru_maxrss of the waited-for process tree's largest member
  std::string captured_stdout;  // only when ProcessOptions::capture_stdout
};

struct ProcessOptions {
  std::vector<std::string> set_env;    // "NAME=VALUE" entries added or replaced
  std::vector<std::string> unset_env;  // names removed
  std::string cwd;                     // empty: inherit
  bool capture_stdout = false;
  bool quiet = false;                  // send stdout and stderr to /dev/null
};

// Runs argv[0] (searched in PATH) and waits. Throws KilnError(kExitMissingTool) when
// the program cannot be found or started.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});
// Runs a shell command line with /bin/sh -c.
ProcessResult run_shell(const std::string& command, const ProcessOptions& options = {});
// Replaces the current process (used to pass invocations through unchanged).
[[noreturn]] void exec_process(const std::vector<std::string>& argv);

// Runs the build that kiln-capture wraps in a process group of its own. SIGINT, SIGTERM
// and SIGHUP sent to kiln-capture meanwhile are forwarded to that whole group, and
// the build is waited for; received_signal is the last one received, else 0. The
// terminal (when kiln-capture has it) is handed to the build and taken back after.
ProcessResult run_build_group(const std::vector<std::string>& argv, const ProcessOptions& options, int& received_signal);

std::string shell_quote(const std::string& arg);
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace kiln
