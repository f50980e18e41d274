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

// How a child ended, and what it cost, into result.
static void record_end(ProcessResult& result, int status, const struct rusage& usage, double wall_seconds) {
  result.wall_seconds = wall_seconds;
  result.user_seconds = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6;
  result.sys_seconds = usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
  result.peak_rss_kib = usage.ru_maxrss;
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signaled = true;
    result.exit_code = 128 + WTERMSIG(status);
  }
}

// What execve needs to run argv with the options' environment. The pointers point
// into argv (the caller's) and into env, whose buffer a move of the image keeps.
struct ExecImage {
  std::string program;
  std::vector<std::string> env;
  std::vector<char*> argv, envp;
};

static ExecImage exec_image(const std::vector<std::string>& argv, const ProcessOptions& options) {
  if (argv.empty()) throw KilnError(kExitUsage, "", "empty command");
  ExecImage image;
  image.program = find_program(argv[0]);
  if (image.program.empty()) throw KilnError(kExitMissingTool, argv[0], "program not found in PATH");
  image.env = build_environment(options);
  for (const auto& a : argv) image.argv.push_back(const_cast<char*>(a.c_str()));
  image.argv.push_back(nullptr);
  for (const auto& e : image.env) image.envp.push_back(const_cast<char*>(e.c_str()));
  image.envp.push_back(nullptr);
  return image;
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  ExecImage image = exec_image(argv, options);
  const std::string& program = image.program;
  std::vector<char*>& cargv = image.argv;
  std::vector<char*>& cenv = image.envp;

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
  record_end(result, status, usage, std::chrono::duration<double>(end - start).count());
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
  ExecImage image = exec_image(argv, options);
  const std::string& program = image.program;
  std::vector<char*>& cargv = image.argv;
  std::vector<char*>& cenv = image.envp;

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
  record_end(result, status, usage, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return result;
}

}  // namespace kiln

// ---- Supervised runs: own process group, timeout, forwarded signals ------------------
// (kiln-measure's builds and the cmd: back end; see process.h.)
#include <poll.h>
#include <sys/syscall.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <csignal>
#include <mutex>

namespace kiln {

namespace {

constexpr std::array<int, 3> kForwardedSignals = {SIGINT, SIGTERM, SIGHUP};
// Process groups of the supervised commands now running (0: free slot). A fixed
// array of atomics, because the signal handler reads it.
std::array<std::atomic<pid_t>, 256> g_groups{};
std::atomic<int> g_interrupt{0};
std::once_flag g_handlers_installed;

extern "C" void forward_to_groups(int sig) {
  int saved_errno = errno;
  bool forwarded = false;
  for (auto& group : g_groups) {
    pid_t g = group.load();
    if (g > 0 && ::kill(-g, sig) == 0) forwarded = true;
  }
  if (forwarded) {
    g_interrupt.store(sig);
  } else {
    // Nothing running to stop: the signal's usual effect, once this handler returns.
    ::signal(sig, SIG_DFL);
    ::raise(sig);
  }
  errno = saved_errno;
}

// Only signals with their default action get the handler: one kiln was told to
// ignore (nohup, a background job) stays ignored, and a tool's own handler stays.
void install_handlers() {
  for (int sig : kForwardedSignals) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction action {};
    action.sa_handler = forward_to_groups;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    ::sigaction(sig, &action, nullptr);
  }
}

sigset_t forwarded_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kForwardedSignals) sigaddset(&set, sig);
  return set;
}

std::atomic<pid_t>* register_group(pid_t group) {
  for (auto& slot : g_groups) {
    pid_t expected = 0;
    if (slot.compare_exchange_strong(expected, group)) return &slot;
  }
  return nullptr;  // more than 256 at once: this one is not forwarded to, only timed
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
  }
}

// Waits for pid. At the deadline (timeout > 0) its group gets SIGTERM, and SIGKILL
// kKillGraceSeconds later: the grace lets a nested kiln (a kiln-capture wrapper
// running a cmd: back end in a group of its own) stop its own group, and cargo
// release its locks. A pidfd wakes the wait the moment the child exits, so wall
// times stay exact.
constexpr double kKillGraceSeconds = 2;

int wait_with_deadline(pid_t pid, double timeout_seconds, std::chrono::steady_clock::time_point start,
                       struct rusage* usage, bool* timed_out) {
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  int status = 0;
  bool killed = false;
  for (;;) {
    pid_t r = ::wait4(pid, &status, killed || timeout_seconds <= 0 ? 0 : WNOHANG, usage);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      int e = errno;
      if (pidfd >= 0) ::close(pidfd);
      throw KilnError(kExitIo, "", "wait: " + errno_reason(e));
    }
    if (r < 0) continue;
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!*timed_out && elapsed >= timeout_seconds) {
      ::kill(-pid, SIGTERM);
      *timed_out = true;
    }
    if (*timed_out && elapsed >= timeout_seconds + kKillGraceSeconds) {
      ::kill(-pid, SIGKILL);
      killed = true;
      continue;
    }
    double next = *timed_out ? timeout_seconds + kKillGraceSeconds : timeout_seconds;
    int wait_ms = static_cast<int>(std::min((next - elapsed) * 1000 + 1, 60000.0));
    if (pidfd >= 0) {
      struct pollfd p {pidfd, POLLIN, 0};
      ::poll(&p, 1, wait_ms);
    } else {
      ::usleep(1000);  // no pidfd (old kernel): poll the child every millisecond
    }
  }
  // Members of a timed-out group that outlived its leader (SIGTERM ignored) go too.
  if (*timed_out) ::kill(-pid, SIGKILL);
  if (pidfd >= 0) ::close(pidfd);
  return status;
}

}  // namespace

ProcessResult run_shell_supervised(const std::string& command, const ProcessOptions& options, double timeout_seconds) {
  if (options.capture_stdout) throw KilnError(kExitInternal, "", "run_shell_supervised cannot capture stdout");
  std::call_once(g_handlers_installed, install_handlers);
  if (int sig = g_interrupt.load())
    throw KilnError(static_cast<ExitCode>(128 + sig), "", std::string("interrupted by ") + signal_name(sig));
  std::string program = "/bin/sh";
  std::vector<std::string> argv = {program, "-c", command};
  std::vector<std::string> env = build_environment(options);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  // Signals wait until the group is registered, so none finds a child to orphan.
  sigset_t block = forwarded_set(), previous;
  ::pthread_sigmask(SIG_BLOCK, &block, &previous);
  auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw KilnError(kExitIo, program, "fork: " + errno_reason(e));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    // The child must not run kiln's forwarding handler before exec replaces it.
    for (int sig : kForwardedSignals) {
      struct sigaction current {};
      if (::sigaction(sig, nullptr, &current) == 0 && current.sa_handler == forward_to_groups) ::signal(sig, SIG_DFL);
    }
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    if (!options.cwd.empty() && ::chdir(options.cwd.c_str()) != 0) _exit(127);
    // Outside the terminal's foreground group, reading the terminal would stop the
    // command (SIGTTIN) until its timeout; it reads end-of-file instead.
    int devnull_in = ::open("/dev/null", O_RDONLY);
    if (devnull_in >= 0) ::dup2(devnull_in, 0);
    if (options.quiet) {
      int devnull = ::open("/dev/null", O_WRONLY);
      ::dup2(devnull, 1);
      ::dup2(devnull, 2);
    }
    ::execve(program.c_str(), cargv.data(), cenv.data());
    _exit(127);
  }
  ::setpgid(pid, pid);  // also here: whichever of parent and child runs first
  std::atomic<pid_t>* slot = register_group(pid);
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);

  ProcessResult result;
  struct rusage usage {};
  int status = 0;
  try {
    status = wait_with_deadline(pid, timeout_seconds, start, &usage, &result.timed_out);
  } catch (...) {
    if (slot) slot->store(0);
    throw;
  }
  if (slot) slot->store(0);
  record_end(result, status, usage, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (int sig = g_interrupt.load())
    throw KilnError(static_cast<ExitCode>(128 + sig), "",
                    std::string("interrupted by ") + signal_name(sig) + "; the running command was stopped");
  return result;
}

}  // namespace kiln
