#include "process.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "error.h"
#include "fs.h"

extern char** environ;

namespace kiln {

std::string shell_quote(const std::string& arg) {
  if (!arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") == std::string::npos)
    return arg;
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'') out += "'\\''";
    else out.push_back(c);
  }
  out += "'";
  return out;
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (i) out.push_back(' ');
    out += shell_quote(argv[i]);
  }
  return out;
}

static std::vector<std::string> build_environment(const ProcessOptions& options) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string entry(*e);
    std::string name = entry.substr(0, entry.find('='));
    bool drop = false;
    for (const auto& u : options.unset_env) drop |= (u == name);
    for (const auto& s : options.set_env) drop |= (s.substr(0, s.find('=')) == name);
    if (!drop) env.push_back(entry);
  }
  for (const auto& s : options.set_env) env.push_back(s);
  return env;
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  if (argv.empty()) throw KilnError(kExitUsage, "", "empty command");
  std::string program = find_program(argv[0]);
  if (program.empty()) throw KilnError(kExitMissingTool, argv[0], "program not found in PATH");
  std::vector<std::string> env = build_environment(options);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  int out_pipe[2] = {-1, -1};
  if (options.capture_stdout && ::pipe2(out_pipe, O_CLOEXEC) != 0)
    throw KilnError(kExitIo, argv[0], "pipe: " + errno_reason(errno));

  auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid < 0) throw KilnError(kExitIo, argv[0], "fork: " + errno_reason(errno));
  if (pid == 0) {
    if (!options.cwd.empty() && ::chdir(options.cwd.c_str()) != 0) _exit(127);
    if (options.capture_stdout) ::dup2(out_pipe[1], 1);
    if (options.quiet) {
      int devnull = ::open("/dev/null", O_WRONLY);
      if (!options.capture_stdout) ::dup2(devnull, 1);
      ::dup2(devnull, 2);
    }
    ::execve(program.c_str(), cargv.data(), cenv.data());
    _exit(127);
  }
  ProcessResult result;
  if (options.capture_stdout) {
    ::close(out_pipe[1]);
    char buf[4096];
    for (;;) {
      ssize_t n = ::read(out_pipe[0], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      result.captured_stdout.append(buf, static_cast<size_t>(n));
    }
    ::close(out_pipe[0]);
  }
  int status = 0;
  struct rusage usage {};
  while (::wait4(pid, &status, 0, &usage) < 0) {
    if (errno != EINTR) throw KilnError(kExitIo, argv[0], "wait: " + errno_reason(errno));
  }
  auto end = std::chrono::steady_clock::now();
  result.wall_seconds = std::chrono::duration<double>(end - start).count();
  result.user_seconds = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6;
  result.sys_seconds = usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
  result.peak_rss_kib = usage.ru_maxrss;
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signaled = true;
    result.exit_code = 128 + WTERMSIG(status);
  }
  return result;
}

ProcessResult run_shell(const std::string& command, const ProcessOptions& options) {
  return run_process({"/bin/sh", "-c", command}, options);
}

void exec_process(const std::vector<std::string>& argv) {
  std::string program = find_program(argv.at(0));
  if (program.empty()) throw KilnError(kExitMissingTool, argv[0], "program not found in PATH");
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  ::execv(program.c_str(), cargv.data());
  throw KilnError(kExitMissingTool, program, "cannot execute: " + errno_reason(errno));
}

}  // namespace kiln

// ---- The build that kiln-capture wraps: its own process group, signals forwarded ----

#include <csignal>
#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace kiln {

namespace {

// Set by forward_signal, read after the build has been waited for.
volatile sig_atomic_t g_build_group = 0;
volatile sig_atomic_t g_received_signal = 0;

extern "C" void forward_signal(int sig) {
  g_received_signal = sig;
  if (g_build_group > 0) ::kill(-static_cast<pid_t>(g_build_group), sig);
}

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP};

// Hands the terminal's foreground from group `from` to `to` (with SIGTTOU blocked, as
// a shell does); only when `from` (kiln-capture's group) holds it now, so that a
// background capture never takes the terminal from the shell.
void give_terminal(pid_t from, pid_t to) {
  if (!::isatty(0) || ::tcgetpgrp(0) != from) return;
  sigset_t ttou, prev;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  ::sigprocmask(SIG_BLOCK, &ttou, &prev);
  ::tcsetpgrp(0, to);
  ::sigprocmask(SIG_SETMASK, &prev, nullptr);
}

// Waits for the build; when the terminal stops it (^Z), stops this process too, so the
// shell sees the job stop, and once continued, continues the build (giving it the
// terminal again when the shell gave it to us: fg, not bg).
int wait_for_build(pid_t pid, const std::string& name, struct rusage& usage) {
  int status = 0;
  for (;;) {
    if (::wait4(pid, &status, WUNTRACED, &usage) < 0) {
      if (errno == EINTR) continue;
      throw KilnError(kExitIo, name, "wait: " + errno_reason(errno));
    }
    if (!WIFSTOPPED(status)) return status;
    int sig = WSTOPSIG(status);
    if (sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU) continue;
    give_terminal(pid, ::getpgrp());
    ::raise(SIGSTOP);
    give_terminal(::getpgrp(), pid);
    ::kill(-pid, SIGCONT);
  }
}

}  // namespace

ProcessResult run_build_group(const std::vector<std::string>& argv, const ProcessOptions& options, int& received_signal) {
  if (argv.empty()) throw KilnError(kExitUsage, "", "empty command");
  std::string program = find_program(argv[0]);
  if (program.empty()) throw KilnError(kExitMissingTool, argv[0], "program not found in PATH");
  std::vector<std::string> env = build_environment(options);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  // Signals that were ignored when kiln-capture started (nohup, a background job of a
  // script) stay ignored, for kiln-capture and for the build.
  struct sigaction forward {}, old[3];
  forward.sa_handler = forward_signal;
  sigemptyset(&forward.sa_mask);
  sigset_t block, prev;
  sigemptyset(&block);
  for (int i = 0; i < 3; ++i) {
    ::sigaction(kForwarded[i], nullptr, &old[i]);
    if (old[i].sa_handler != SIG_IGN) ::sigaction(kForwarded[i], &forward, nullptr);
    sigaddset(&block, kForwarded[i]);
  }
  g_received_signal = 0;
  pid_t own_group = ::getpgrp();
  pid_t parent = ::getpid();
  // Blocked across fork, so the handler never runs before the group exists.
  ::sigprocmask(SIG_BLOCK, &block, &prev);
  auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    ::sigprocmask(SIG_SETMASK, &prev, nullptr);
    for (int i = 0; i < 3; ++i) ::sigaction(kForwarded[i], &old[i], nullptr);
    throw KilnError(kExitIo, argv[0], "fork: " + errno_reason(err));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
#ifdef __linux__
    // kill -9 of kiln-capture cannot be forwarded: have the kernel send SIGTERM to the
    // build's first process then (make passes it on to its jobs).
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) _exit(128 + SIGTERM);  // already gone before prctl
#endif
    give_terminal(own_group, ::getpid());
    // Back to the original dispositions before unblocking: a signal already sent to
    // the group must act on the build, not on this copy of kiln-capture's handler.
    for (int i = 0; i < 3; ++i) ::sigaction(kForwarded[i], &old[i], nullptr);
    ::sigprocmask(SIG_SETMASK, &prev, nullptr);
    ::execve(program.c_str(), cargv.data(), cenv.data());
    _exit(127);
  }
  ::setpgid(pid, pid);  // also here: whichever of the two runs first
  give_terminal(own_group, pid);
  g_build_group = pid;
  if (g_received_signal) ::kill(-pid, g_received_signal);
  ::sigprocmask(SIG_SETMASK, &prev, nullptr);

  struct rusage usage {};
  int status = 0;
  try {
    status = wait_for_build(pid, argv[0], usage);
  } catch (...) {
    g_build_group = 0;
    for (int i = 0; i < 3; ++i) ::sigaction(kForwarded[i], &old[i], nullptr);
    throw;
  }
  give_terminal(pid, own_group);
  g_build_group = 0;
  for (int i = 0; i < 3; ++i) ::sigaction(kForwarded[i], &old[i], nullptr);
  received_signal = g_received_signal;

  ProcessResult result;
  result.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.user_seconds = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6;
  result.sys_seconds = usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
  result.peak_rss_kib = usage.ru_maxrss;
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signaled = true;
    result.exit_code = 128 + WTERMSIG(status);
  }
  return result;
}

}  // namespace kiln
