// Running other programs: the wrapped build, the real compiler, external back ends,
// and the builds that kiln-measure times. Returns status and resource use (wait4).
#pragma once
#include <csignal>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

struct ProcessResult {
  int exit_code = -1;  // exit status, or 128 + signal number
  bool signaled = false;
  double wall_seconds = 0;
  double user_seconds = 0;
  double sys_seconds = 0;
  long peak_rss_kib = 0;        // ru_maxrss of the waited-for process tree's largest member
  std::string captured_stdout;  // only when ProcessOptions::capture_stdout
  bool timed_out = false;       // run_shell_supervised: stopped at its timeout
};

struct ProcessOptions {
  std::vector<std::string> set_env;    // "NAME=VALUE" entries added or replaced
  std::vector<std::string> unset_env;  // names removed
  std::string cwd;                     // empty: inherit
  bool capture_stdout = false;
  bool quiet = false;  // send stdout and stderr to /dev/null
  // The child's standard output goes to kiln's standard error: a tool that kiln runs
  // for a result in a file (a cmd: back end) must not mix its text into what kiln
  // prints on standard output (an object, a receipt, a summary).
  bool stdout_to_stderr = false;
  // Set: the child's standard error comes through a pipe, and each of its lines (with
  // its newline; a last one without) goes to this function and then, unchanged, on to
  // kiln's own standard error. A caller acts on what the child says while it still
  // runs (the rustc wrapper, on rustc's notice that it wrote its rlib). It must not
  // throw: the child would be left running. Not with capture_stdout or quiet.
  std::function<void(std::string_view line)> stderr_line;
  // Set: holds the child's pid while it runs (0 before and after), for a signal
  // handler that must stop the child before it acts (the C wrapper's, which removes the
  // output that child would otherwise write after it).
  volatile sig_atomic_t* running_child = nullptr;
};

// Runs argv[0] (searched in PATH) and waits. Throws KilnError(kExitMissingTool) when
// the program cannot be found or started.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});
// Runs a shell command line with /bin/sh -c.
ProcessResult run_shell(const std::string& command, const ProcessOptions& options = {});
// Replaces the current process (used to pass invocations through unchanged).
[[noreturn]] void exec_process(const std::vector<std::string>& argv);

// "SIGINT", "SIGTERM", "SIGHUP" (the signals kiln stops on), else "a signal".
const char* signal_name(int sig);

// ---- Commands in a process group of their own, with signals forwarded ----------------
// run_build_group and run_shell_supervised run their command in a process group of its
// own, so that a signal or a timeout stops all of it (make, cargo and their compilers),
// not only its first process. While such a group runs, SIGINT, SIGTERM and SIGHUP sent
// to kiln are forwarded to the group (to every group running, from any thread) instead
// of killing kiln first and orphaning the build, and kiln remembers the signal. The
// forwarding is installed on the first such command, for the signals with their
// default action only: one that kiln was told to ignore (nohup, a background job of a
// script) stays ignored, for kiln and for the command. With no group running, those
// signals act as usual.

// Runs the build that kiln-capture wraps, with the terminal (when kiln-capture has it)
// handed to the build and taken back after; when kiln-capture is killed outright
// (kill -9), the build's first process gets SIGTERM. Waits for the build;
// received_signal is the last forwarded signal, else 0.
ProcessResult run_build_group(const std::vector<std::string>& argv, const ProcessOptions& options,
                              int& received_signal);

std::string shell_quote(const std::string& arg);
std::string shell_join(const std::vector<std::string>& argv);

// ---- Supervised runs (kiln-measure's builds, the cmd: back end) ----------------------
// When a forwarded signal has arrived, kiln waits for the group's leader and then
// throws KilnError with code 128 + the signal's number, and refuses to start another.

// Runs /bin/sh -c command. timeout_seconds > 0: when it has not finished by then, its
// whole process group gets SIGTERM, and SIGKILL 2 seconds later, and the result says
// timed_out. Its standard input is /dev/null (a process outside the terminal's
// foreground group that reads the terminal is stopped). Does not support
// ProcessOptions::capture_stdout.
ProcessResult run_shell_supervised(const std::string& command, const ProcessOptions& options, double timeout_seconds);

// The stop signal (SIGINT, SIGTERM, SIGHUP) this process passed on to the commands it
// was running, or 0: once it is set, a command's failure is that signal's doing, and
// the caller is to stop, not to try something else.
int interrupt_signal();

// A scope in which SIGINT, SIGTERM and SIGHUP do not end kiln at once, so that what it
// made on disk (a cmd: back end's scratch directory) is removed first: a signal that
// arrives with no command running to forward it to is remembered, as a forwarded one
// is (the next run_shell_supervised, or throw_if_interrupted, throws KilnError 128 +
// the signal), and one nothing reported by the scope's end takes its usual effect
// there. Signals kiln was told to ignore stay ignored.
class DeferredSignals {
 public:
  DeferredSignals();
  ~DeferredSignals();
  DeferredSignals(const DeferredSignals&) = delete;
  DeferredSignals& operator=(const DeferredSignals&) = delete;

 private:
  int uncaught_;
};

// Throws KilnError(128 + the signal, "interrupted by SIGTERM") once a stop signal has
// been forwarded or deferred.
void throw_if_interrupted();

}  // namespace kiln
