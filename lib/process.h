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
  bool timed_out = false;  // run_shell_supervised: stopped at its timeout
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

// ---- Supervised runs (kiln-measure's builds, the cmd: back end) ----------------------
// The command runs in a process group of its own, so that a timeout can stop all of
// it (make, cargo and their compilers), not only the shell. While such a group runs,
// SIGINT, SIGTERM and SIGHUP sent to kiln (when kiln does not ignore them) are
// forwarded to the group instead of killing kiln first and orphaning the build;
// kiln waits for the group's leader and then throws KilnError with code 128 + the
// signal's number. With no supervised group running, those signals act as usual.

// Runs /bin/sh -c command. timeout_seconds > 0: when it has not finished by then, its
// whole process group gets SIGTERM, and SIGKILL 2 seconds later, and the result says
// timed_out. Its standard input is /dev/null (a process outside the terminal's
// foreground group that reads the terminal is stopped). Does not support
// ProcessOptions::capture_stdout.
ProcessResult run_shell_supervised(const std::string& command, const ProcessOptions& options, double timeout_seconds);

}  // namespace kiln
