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
  if (!arg.empty() &&
      arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") ==
          std::string::npos)
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
  std::vector<char*> shell_argv;  // /bin/sh PROGRAM ARGS...: for a script without #!
};

// A child's failed start, told to its parent on a close-on-exec pipe whose end of file
// (at execve) says the start succeeded: without it a program that could not run (a
// script without #! where there is no shell, a missing #! interpreter, no permission, a
// directory) or a cwd that could not be entered was only an exit status of 127.
struct StartFailure {
  int stage = 0;  // kStartChdir or kStartExec
  int error = 0;  // errno
};
constexpr int kStartChdir = 1, kStartExec = 2;

// In the child: tells the parent why it could not start, and ends.
[[noreturn]] static void fail_start(int report_fd, int stage) {
  const StartFailure f{stage, errno};
  ssize_t ignored = ::write(report_fd, &f, sizeof f);
  (void)ignored;
  _exit(127);
}

// In the child: execve, and a file the kernel cannot execute (ENOEXEC: no #! line)
// run by /bin/sh as execvp and shells do; only returns on failure.
static void exec_image_in_child(const ExecImage& image) {
  ::execve(image.program.c_str(), image.argv.data(), image.envp.data());
  if (errno == ENOEXEC) {
    ::execve("/bin/sh", image.shell_argv.data(), image.envp.data());
    errno = ENOEXEC;  // what the program's own failure was
  }
}

// In the parent: after the fork, waits for the child's report (its execve closes the
// pipe); on a failure reaps the child and throws, naming the program (or cwd).
static void check_start(int report[2], pid_t pid, const std::string& program, const ProcessOptions& options) {
  ::close(report[1]);
  StartFailure f;
  ssize_t got;
  do got = ::read(report[0], &f, sizeof f);
  while (got < 0 && errno == EINTR);
  ::close(report[0]);
  if (got != static_cast<ssize_t>(sizeof f)) return;
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {}
  if (f.stage == kStartChdir)
    throw KilnError(kExitIo, options.cwd,
                    "cannot change to this directory to run " + program + ": " + errno_reason(f.error));
  std::string reason = errno_reason(f.error);
  if (f.error == ENOENT) reason += " (its #! interpreter?)";
  throw KilnError(kExitMissingTool, program, "cannot run: " + reason);
}

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
  image.shell_argv = {const_cast<char*>("/bin/sh"), const_cast<char*>(image.program.c_str())};
  image.shell_argv.insert(image.shell_argv.end(), image.argv.begin() + 1, image.argv.end());
  return image;
}

// Writes all of `bytes` to `fd`, as far as it can: a reader that went away loses the
// rest, as it would have lost the child's own writes.
static void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

// Until `from` ends: each line read from it to `line`, then to standard error.
static void relay_lines(int from, const std::function<void(std::string_view)>& line) {
  std::string pending;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(from, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<size_t>(n));
    size_t done = 0;
    for (size_t end; (end = pending.find('\n', done)) != std::string::npos; done = end + 1) {
      const std::string_view l(pending.data() + done, end + 1 - done);
      line(l);
      write_all(2, l);
    }
    pending.erase(0, done);
  }
  if (!pending.empty()) {
    line(pending);
    write_all(2, pending);
  }
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  ExecImage image = exec_image(argv, options);
  const std::string& program = image.program;

  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  const bool err_lines = static_cast<bool>(options.stderr_line);
  if (err_lines && (options.capture_stdout || options.quiet))
    throw KilnError(kExitInternal, argv[0], "stderr_line goes with neither capture_stdout nor quiet");
  if (options.capture_stdout && ::pipe2(out_pipe, O_CLOEXEC) != 0)
    throw KilnError(kExitIo, argv[0], "pipe: " + errno_reason(errno));
  if (err_lines && ::pipe2(err_pipe, O_CLOEXEC) != 0) throw KilnError(kExitIo, argv[0], "pipe: " + errno_reason(errno));

  int report[2] = {-1, -1};
  auto close_pipes = [&] {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], report[0], report[1]})
      if (fd >= 0) ::close(fd);
  };
  if (::pipe2(report, O_CLOEXEC) != 0) {
    const int e = errno;
    close_pipes();
    throw KilnError(kExitIo, argv[0], "pipe: " + errno_reason(e));
  }

  auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    close_pipes();
    throw KilnError(kExitIo, argv[0], "fork: " + errno_reason(e));
  }
  if (pid == 0) {
    if (!options.cwd.empty() && ::chdir(options.cwd.c_str()) != 0) fail_start(report[1], kStartChdir);
    if (options.capture_stdout) ::dup2(out_pipe[1], 1);
    if (err_lines) ::dup2(err_pipe[1], 2);
    if (options.quiet) {
      // Close-on-exec: dup2's copies stay open in the program, the original does not.
      int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
      if (!options.capture_stdout) ::dup2(devnull, 1);
      ::dup2(devnull, 2);
    }
    exec_image_in_child(image);
    fail_start(report[1], kStartExec);
  }
  if (options.running_child) *options.running_child = pid;
  try {
    check_start(report, pid, program, options);
  } catch (...) {
    if (options.running_child) *options.running_child = 0;
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
      if (fd >= 0) ::close(fd);
    throw;
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
  if (err_lines) {
    ::close(err_pipe[1]);
    relay_lines(err_pipe[0], options.stderr_line);
    ::close(err_pipe[0]);
  }
  int status = 0;
  struct rusage usage {};
  while (::wait4(pid, &status, 0, &usage) < 0) {
    if (errno != EINTR) throw KilnError(kExitIo, argv[0], "wait: " + errno_reason(errno));
  }
  if (options.running_child) *options.running_child = 0;
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

// ---- Commands in a process group of their own, with signals forwarded -------------
// One mechanism for the build that kiln-capture wraps (run_build_group) and the
// supervised commands (run_shell_supervised; kiln-measure's builds, the cmd: back
// end): the child starts its own process group, which is registered while it runs;
// SIGINT, SIGTERM and SIGHUP sent to kiln are forwarded to every registered group
// and remembered, and with no group registered they act as usual.

#include <poll.h>
#include <sys/syscall.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <csignal>
#include <mutex>
#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace kiln {

namespace {

constexpr std::array<int, 3> kForwardedSignals = {SIGINT, SIGTERM, SIGHUP};
// Process groups of the commands now running (0: free slot). A fixed array of
// atomics, because the signal handler reads it.
std::array<std::atomic<pid_t>, 256> g_groups{};
// The last forwarded signal; once set, run_shell_supervised starts nothing more.
std::atomic<int> g_interrupt{0};
std::once_flag g_handlers_installed;
// How many DeferredSignals scopes are open (any thread): while one is, a stop signal
// with no group to forward to is remembered instead of acting at once.
std::atomic<int> g_deferring{0};

extern "C" void forward_to_groups(int sig) {
  int saved_errno = errno;
  bool running = false;
  for (auto& group : g_groups) {
    pid_t g = group.load();
    if (g > 0) {
      ::kill(-g, sig);
      running = true;
    }
  }
  if (running || g_deferring.load() > 0) {
    g_interrupt.store(sig);  // the running commands' callers, or the deferring scope, report it
  } else {
    // Nothing running to stop: the signal's usual effect, once this handler returns.
    ::signal(sig, SIG_DFL);
    ::raise(sig);
  }
  errno = saved_errno;
}

// Installed once, on the first command started. Only signals with their default
// action get the handler: one kiln was told to ignore (nohup, a background job of a
// script) stays ignored, for kiln and for the command, and a tool's own handler (the
// C wrapper's, which removes its bitcode) stays.
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

bool any_group_running() {
  return std::any_of(g_groups.begin(), g_groups.end(), [](const std::atomic<pid_t>& g) { return g.load() > 0; });
}

// Hands the terminal's foreground from group `from` to `to` (with SIGTTOU blocked, as
// a shell does); only when `from` (kiln-capture's group) holds it now, so that a
// background capture never takes the terminal from the shell.
void give_terminal(pid_t from, pid_t to) {
  if (!::isatty(0) || ::tcgetpgrp(0) != from) return;
  sigset_t ttou, prev;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  ::pthread_sigmask(SIG_BLOCK, &ttou, &prev);
  ::tcsetpgrp(0, to);
  ::pthread_sigmask(SIG_SETMASK, &prev, nullptr);
}

// How the child of a group starts, besides its own group and the forwarding.
enum class GroupChild {
  build,       // kiln-capture's build: gets the terminal, SIGTERM when kiln-capture dies
  supervised,  // standard input /dev/null (outside the foreground group)
};

// A command running in its own registered process group; the destructor takes the
// group off the register.
struct GroupRun {
  pid_t pid = -1;
  std::atomic<pid_t>* slot = nullptr;
  std::chrono::steady_clock::time_point start;
  GroupRun() = default;
  GroupRun(const GroupRun&) = delete;
  GroupRun& operator=(const GroupRun&) = delete;
  ~GroupRun() {
    if (slot) slot->store(0);
  }
};

// In the child of start_group: everything up to execve; never returns.
[[noreturn]] void exec_group_child(const ExecImage& image, const ProcessOptions& options, GroupChild kind, pid_t parent,
                                   pid_t parent_group, const sigset_t& previous, int report_fd) {
  ::setpgid(0, 0);
  if (kind == GroupChild::build) {
#ifdef __linux__
    // kill -9 of kiln-capture cannot be forwarded: have the kernel send SIGTERM to the
    // build's first process then (make passes it on to its jobs).
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) _exit(128 + SIGTERM);  // already gone before prctl
#endif
    give_terminal(parent_group, ::getpid());
  }
  // Back to the default action before unblocking: a signal already sent to the group
  // must act on the command, not on this copy of kiln's forwarding handler.
  for (int sig : kForwardedSignals) {
    struct sigaction current {};
    if (::sigaction(sig, nullptr, &current) == 0 && current.sa_handler == forward_to_groups) ::signal(sig, SIG_DFL);
  }
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (!options.cwd.empty() && ::chdir(options.cwd.c_str()) != 0) fail_start(report_fd, kStartChdir);
  if (options.stdout_to_stderr) ::dup2(2, 1);
  // /dev/null close-on-exec: dup2's copies stay open in the command, the original not.
  if (kind == GroupChild::supervised) {
    // Outside the terminal's foreground group, reading the terminal would stop the
    // command (SIGTTIN) until its timeout; it reads end-of-file instead.
    int devnull_in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull_in >= 0) ::dup2(devnull_in, 0);
  }
  if (options.quiet) {
    int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
  }
  exec_image_in_child(image);
  fail_start(report_fd, kStartExec);
}

// Starts the image in a process group of its own and registers the group. The
// forwarded signals stay blocked until the group is registered, so that none finds a
// child to orphan; one that arrives meanwhile is forwarded once it is.
void start_group(const ExecImage& image, const ProcessOptions& options, GroupChild kind, GroupRun& run) {
  sigset_t block = forwarded_set(), previous;
  ::pthread_sigmask(SIG_BLOCK, &block, &previous);
  std::call_once(g_handlers_installed, install_handlers);
  pid_t parent = ::getpid(), parent_group = ::getpgrp();
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    int e = errno;
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw KilnError(kExitIo, image.argv[0], "pipe: " + errno_reason(e));
  }
  run.start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(report[0]);
    ::close(report[1]);
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw KilnError(kExitIo, image.argv[0], "fork: " + errno_reason(e));
  }
  if (pid == 0) exec_group_child(image, options, kind, parent, parent_group, previous, report[1]);
  ::setpgid(pid, pid);  // also here: whichever of parent and child runs first
  if (kind == GroupChild::build) give_terminal(parent_group, pid);
  run.pid = pid;
  run.slot = register_group(pid);
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  try {
    check_start(report, pid, image.program, options);
  } catch (...) {
    if (kind == GroupChild::build) give_terminal(pid, parent_group);
    run.pid = -1;
    throw;
  }
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
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
    double elapsed = seconds_since(start);
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
      struct pollfd p {
        pidfd, POLLIN, 0
      };
      ::poll(&p, 1, wait_ms);
    } else {
      ::usleep(1000);  // no pidfd (old kernel): poll the child every millisecond
    }
  }
  // Members of a timed-out group that outlived its leader get what is left of the grace
  // (a nested kiln-emit still stopping its back end and removing its scratch directory
  // after the shell it ran in has gone), then SIGKILL (one that ignored SIGTERM).
  if (*timed_out) {
    while (!killed && ::kill(-pid, 0) == 0 && seconds_since(start) < timeout_seconds + kKillGraceSeconds)
      ::usleep(5000);
    ::kill(-pid, SIGKILL);
  }
  if (pidfd >= 0) ::close(pidfd);
  return status;
}

}  // namespace

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "a signal";
  }
}

// How long a stopped build's other processes get to end after its first process did,
// before SIGKILL: more than a cmd: back end's grace (kKillGraceSeconds), which a kiln
// compiler wrapper waits out before it removes its bitcode.
constexpr double kBuildDrainSeconds = 5;

// After a stop signal ended the build's first process (make, a shell), the rest of its
// group may still be stopping: a kiln compiler wrapper removes the bitcode it left at
// the object path only once its back end's command has stopped. Waits for the group
// to empty, so that once kiln-capture has exited nothing of the build runs and no
// bitcode waits at an object path; what is left at the deadline gets SIGKILL. kiln is
// the build's subreaper (run_build_group), so the group's orphans are its children and
// it reaps them here: a zombie nobody reaps (a container's init may not, promptly)
// would still count as a member of the group.
void drain_stopped_build(pid_t group) {
  const auto start = std::chrono::steady_clock::now();
  bool killed = false;
  for (;;) {
    siginfo_t info{};
    while (::waitid(P_PGID, static_cast<id_t>(group), &info, WEXITED | WNOHANG) == 0 && info.si_pid != 0) info = {};
    if (::kill(-group, 0) != 0 && errno == ESRCH) return;
    if (!killed && seconds_since(start) >= kBuildDrainSeconds) {
      ::kill(-group, SIGKILL);
      killed = true;
    }
    if (seconds_since(start) >= kBuildDrainSeconds + 1) return;  // members that are not ours to reap
    ::usleep(5000);
  }
}

ProcessResult run_build_group(const std::vector<std::string>& argv, const ProcessOptions& options,
                              int& received_signal) {
  ExecImage image = exec_image(argv, options);
  // The build's orphans become kiln's children (drain_stopped_build reaps them).
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  GroupRun run;
  start_group(image, options, GroupChild::build, run);
  struct rusage usage {};
  int status = wait_for_build(run.pid, argv[0], usage);
  give_terminal(run.pid, ::getpgrp());
  received_signal = g_interrupt.load();
  const bool stopped =
      WIFSIGNALED(status) && (WTERMSIG(status) == SIGINT || WTERMSIG(status) == SIGTERM || WTERMSIG(status) == SIGHUP);
  if (received_signal || stopped) drain_stopped_build(run.pid);
  ProcessResult result;
  record_end(result, status, usage, seconds_since(run.start));
  return result;
}

int interrupt_signal() { return g_interrupt.load(); }

// install_handlers at each scope, not once: a signal that had a handler of someone
// else's at the first install (a test framework's) and has its default action now
// gets the forwarding; a handler kiln did not install is never replaced.
DeferredSignals::DeferredSignals() : uncaught_(std::uncaught_exceptions()) {
  install_handlers();
  g_deferring.fetch_add(1);
}

// A signal that arrived in the scope and that nothing reported (no supervised run
// threw for it) takes its usual effect now, once what the scope made is gone; not
// while an exception unwinds (it is reported by whoever catches it), nor while another
// scope or a forwarded-to group still runs (they report it).
DeferredSignals::~DeferredSignals() {
  if (g_deferring.fetch_sub(1) != 1 || std::uncaught_exceptions() != uncaught_ || any_group_running()) return;
  if (int sig = g_interrupt.load()) {
    ::signal(sig, SIG_DFL);
    ::raise(sig);
  }
}

void throw_if_interrupted() {
  if (int sig = g_interrupt.load())
    throw KilnError(static_cast<ExitCode>(128 + sig), "", std::string("interrupted by ") + signal_name(sig));
}

ProcessResult run_shell_supervised(const std::string& command, const ProcessOptions& options, double timeout_seconds) {
  if (options.capture_stdout) throw KilnError(kExitInternal, "", "run_shell_supervised cannot capture stdout");
  throw_if_interrupted();
  const std::vector<std::string> argv = {"/bin/sh", "-c", command};  // the image points into it
  ExecImage image = exec_image(argv, options);
  GroupRun run;
  start_group(image, options, GroupChild::supervised, run);
  ProcessResult result;
  struct rusage usage {};
  int status = wait_with_deadline(run.pid, timeout_seconds, run.start, &usage, &result.timed_out);
  record_end(result, status, usage, seconds_since(run.start));
  if (int sig = g_interrupt.load())
    throw KilnError(static_cast<ExitCode>(128 + sig), "",
                    std::string("interrupted by ") + signal_name(sig) + "; the running command was stopped");
  return result;
}

}  // namespace kiln
