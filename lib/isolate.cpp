#include "isolate.h"

#include <llvm/Support/ErrorHandling.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "error.h"
#include "fs.h"
#include "backend_cmd.h"  // seconds_from_environment
#include "process.h"

namespace kiln {

namespace {

// A worker's exit status after LLVM's fatal-error handler ran; its message is in the
// worker's slot. Distinct from anything a job returns (jobs report through the socket).
constexpr int kLlvmFatalExit = 86;

// Memory shared between the supervisor and one worker (mmap MAP_SHARED before the
// fork): the worker writes its stage and LLVM's fatal message where the supervisor can
// read them after the worker is gone.
struct Slot {
  char stage[64];
  char fatal[2048];
};

Slot* g_slot = nullptr;  // this process's slot, when it is a worker
thread_local const char* t_stage = nullptr;

void copy_text(char* dest, size_t size, const char* text) {
  size_t n = std::min(size - 1, std::strlen(text));
  std::memcpy(dest, text, n);
  dest[n] = '\0';
  for (size_t i = 0; i < n; ++i)
    if (dest[i] == '\n' || dest[i] == '\r') dest[i] = ' ';
}

[[noreturn]] void on_llvm_fatal(void*, const char* reason, bool) {
  if (g_slot) {
    copy_text(g_slot->fatal, sizeof g_slot->fatal, reason && *reason ? reason : "(no message)");
    _exit(kLlvmFatalExit);
  }
  // Not a worker: one line, and the bad-input status (LLVM's own exit(1) would read
  // as "the job's answer is no"). write(2) and _exit: LLVM's state cannot be trusted.
  char line[2300];
  std::snprintf(line, sizeof line, "%s: error: LLVM ERROR%s%s: %s\n", program_invocation_short_name,
                t_stage ? " while " : "", t_stage ? t_stage : "", reason ? reason : "");
  for (char* c = line; *c && c[1]; ++c)
    if (*c == '\n') *c = ' ';
  ssize_t ignored = ::write(2, line, std::strlen(line));
  (void)ignored;
  _exit(kExitBadInput);
}

// A result frame: index (8 bytes), ok (1), code (4), length (8), text.
constexpr size_t kHeader = 21;

std::string frame(uint64_t index, bool ok, int32_t code, const std::string& text) {
  std::string f(kHeader, '\0');
  uint64_t len = text.size();
  std::memcpy(&f[0], &index, 8);
  f[8] = ok ? 1 : 0;
  std::memcpy(&f[9], &code, 4);
  std::memcpy(&f[13], &len, 8);
  return f + text;
}

// The worker: takes item numbers from the socket until it closes, answers each.
[[noreturn]] void worker_main(int fd, const IsolatedJob& job, const IsolatedLabel& label) {
  for (;;) {
    uint64_t index;
    if (!recv_exact(fd, reinterpret_cast<char*>(&index), 8)) _exit(0);
    copy_text(g_slot->stage, sizeof g_slot->stage, "");
    std::string reply;
    try {
      reply = frame(index, true, 0, job(index));
    } catch (const KilnError& e) {
      reply = frame(index, false, e.code(), e.what());
    } catch (const std::bad_alloc&) {
      reply = frame(index, false, kExitIo, label(index) + ": out of memory");
    } catch (const std::exception& e) {
      reply = frame(index, false, kExitInternal, label(index) + ": " + e.what());
    }
    if (!send_all(fd, reply.data(), reply.size())) _exit(0);
    // A stop signal reached the command this job ran (and ended it): the worker ends
    // by it too, for whoever is waiting for it to stop (its supervisor, or the handler
    // of a C wrapper that is being stopped).
    if (int sig = interrupt_signal()) {
      ::signal(sig, SIG_DFL);
      ::raise(sig);
    }
  }
}

std::string crash_signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

// ---- A signal to stop, while workers run ----
// SIGINT, SIGTERM or SIGHUP with its default action would end the supervisor at once,
// and PR_SET_PDEATHSIG then SIGKILLs its workers wherever they are: one running a cmd:
// back end never removed its scratch directory (a kiln-emit inside a timed-out
// kiln-measure build left one per run). While workers run, the signal is remembered
// instead; the supervisor passes it to every worker, waits for them to end (at most
// kStopGraceSeconds) and reports it as its own exit status, 128 + the signal.
constexpr std::array<int, 3> kStopSignals = {SIGINT, SIGTERM, SIGHUP};
constexpr double kStopGraceSeconds = 2;
std::atomic<int> g_stop_signal{0};
// run_isolated_one's running_worker, for the worker it forks.
volatile sig_atomic_t* g_running_worker = nullptr;

extern "C" void remember_stop(int sig) { g_stop_signal.store(sig); }

// Installed for one run_isolated, only for signals with their default action (one the
// process ignores stays ignored; a tool's own handler stays), and restored after it.
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal.store(0);
    for (size_t i = 0; i < kStopSignals.size(); ++i) {
      if (::sigaction(kStopSignals[i], nullptr, &old_[i]) != 0 || old_[i].sa_handler != SIG_DFL) continue;
      struct sigaction action {};
      action.sa_handler = remember_stop;
      sigemptyset(&action.sa_mask);
      installed_[i] = ::sigaction(kStopSignals[i], &action, nullptr) == 0;
    }
  }
  ~StopSignals() {
    for (size_t i = 0; i < kStopSignals.size(); ++i)
      if (installed_[i]) ::sigaction(kStopSignals[i], &old_[i], nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  // A new worker starts with the default actions (or ignores what the process
  // ignores), not with this process's handlers: a stop signal to a worker must stop
  // what it runs (a cmd: back end's command, which process.cpp's forwarding then
  // reaches), not act as the tool's own handler (the C wrapper's removes its output).
  void reset_in_worker() const {
    for (int sig : kStopSignals) {
      struct sigaction current {};
      if (::sigaction(sig, nullptr, &current) == 0 && current.sa_handler != SIG_IGN) ::signal(sig, SIG_DFL);
    }
  }

 private:
  std::array<struct sigaction, kStopSignals.size()> old_{};
  std::array<bool, kStopSignals.size()> installed_{};
};

struct Proc {
  pid_t pid = -1;
  int fd = -1;
  std::string buffer;  // bytes received, not yet a whole frame
  int64_t item = -1;   // the item it is working on; -1 when idle
  std::chrono::steady_clock::time_point since;  // when it was given the item
};

class Supervisor {
 public:
  Supervisor(unsigned n, const IsolatedJob& job, const IsolatedLabel& label, const StopSignals& signals)
      : job_(job), label_(label), signals_(signals), procs_(n) {
    void* mem = ::mmap(nullptr, sizeof(Slot) * n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) throw KilnError(kExitIo, "", "mmap: " + errno_reason(errno));
    slots_ = static_cast<Slot*>(mem);
  }

  ~Supervisor() {
    // Normally every worker is idle here; after an exception from done() some may be
    // busy. Either way they are stopped and reaped, never left behind.
    for (auto& p : procs_) {
      if (p.pid <= 0) continue;
      ::close(p.fd);
      ::kill(p.pid, SIGKILL);
      while (::waitpid(p.pid, nullptr, 0) < 0 && errno == EINTR) {}
    }
    ::munmap(slots_, sizeof(Slot) * procs_.size());
  }

  std::vector<Proc>& procs() { return procs_; }

  void spawn(size_t k) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      throw KilnError(kExitIo, "", "socketpair: " + errno_reason(errno));
    std::memset(&slots_[k], 0, sizeof(Slot));
    std::fflush(nullptr);  // or the child would write this process's buffered output again
    pid_t pid = ::fork();
    if (pid < 0) {
      int e = errno;
      ::close(sv[0]);
      ::close(sv[1]);
      throw KilnError(kExitIo, "", "fork: " + errno_reason(e));
    }
    if (pid == 0) {
      for (auto& p : procs_)
        if (p.fd >= 0) ::close(p.fd);
      ::close(sv[0]);
      signals_.reset_in_worker();
      // A worker left running by a supervisor that was killed would only waste time.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      // Crashes are expected here and reported by the supervisor: no core files.
      struct rlimit no_core {
        0, 0
      };
      ::setrlimit(RLIMIT_CORE, &no_core);
      // A crash must end the worker with its signal and nothing on stderr (which stays
      // the tool's, for what a cmd: back end says): handlers the process has (LLVM's
      // stack dumper, a test framework's) would print their own report.
      for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP}) ::signal(sig, SIG_DFL);
      g_slot = &slots_[k];
      install_llvm_fatal_handlers();
      worker_main(sv[1], job_, label_);
    }
    ::close(sv[1]);
    procs_[k] = Proc{pid, sv[0], {}, -1, {}};
    if (g_running_worker) *g_running_worker = pid;
  }

  void assign(Proc& p, size_t item) {
    uint64_t index = item;
    p.item = static_cast<int64_t>(item);
    p.since = std::chrono::steady_clock::now();
    // A worker that died before reading is noticed as end of file by the poll loop.
    send_all(p.fd, reinterpret_cast<const char*>(&index), 8);
  }

  // A stop signal came: every worker gets it, and the time to end (a cmd: back end's
  // worker stops its command and removes its scratch directory); the destructor
  // SIGKILLs any still running after that.
  void stop(int sig) {
    for (auto& p : procs_)
      if (p.pid > 0) ::kill(p.pid, sig);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kStopGraceSeconds);
    for (auto& p : procs_) {
      while (p.pid > 0 && std::chrono::steady_clock::now() < deadline) {
        if (::waitpid(p.pid, nullptr, WNOHANG) == p.pid) {
          ::close(p.fd);
          p = Proc{};
        } else {
          ::usleep(2000);
        }
      }
    }
  }

  // Worker k's item ran past the time limit: the worker gets SIGTERM (and stops what it
  // runs, a cmd: back end's command), SIGKILL after kStopGraceSeconds; then it is
  // reaped, its item reported as stopped.
  IsolatedResult stop_late(size_t k, double limit) {
    Proc& p = procs_[k];
    ::kill(p.pid, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kStopGraceSeconds);
    int status = 0;
    pid_t done = 0;
    while ((done = ::waitpid(p.pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
      ::usleep(2000);
    if (done == 0) {
      ::kill(p.pid, SIGKILL);
      while (::waitpid(p.pid, &status, 0) < 0 && errno == EINTR) {}
    }
    ::close(p.fd);
    const std::string stage = slots_[k].stage;
    IsolatedResult r;
    r.crashed = true;
    r.code = kExitBadInput;
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", limit);
    r.text = label_(static_cast<size_t>(p.item)) + ": stopped after " + seconds + " s (KILN_ITEM_TIMEOUT)" +
        (stage.empty() ? "" : " while " + stage);
    p = Proc{};
    return r;
  }

  // The worker is gone: reaps it and says what happened to its item.
  IsolatedResult reap(size_t k) {
    Proc& p = procs_[k];
    int status = 0;
    while (::waitpid(p.pid, &status, 0) < 0 && errno == EINTR) {}
    ::close(p.fd);
    const Slot& s = slots_[k];
    // Without a stage, the worker was not in LLVM (a back end of kiln's, a cmd: tool's).
    const std::string stage = s.stage;
    IsolatedResult r;
    r.crashed = true;
    r.code = kExitBadInput;
    std::string label = p.item >= 0 ? label_(static_cast<size_t>(p.item)) : "";
    const std::string during = stage.empty() ? "" : " while " + stage;
    if (WIFSIGNALED(status))
      r.text = label + (stage.empty() ? ": crashed (" : ": LLVM crashed (") + crash_signal_name(WTERMSIG(status)) +
          ")" + during;
    else if (WIFEXITED(status) && WEXITSTATUS(status) == kLlvmFatalExit)
      r.text = label + ": LLVM ERROR" + during + ": " + std::string(s.fatal);
    else
      r.text = label + ": the worker exited with status " +
          std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + during;
    p = Proc{};
    return r;
  }

 private:
  const IsolatedJob& job_;
  const IsolatedLabel& label_;
  const StopSignals& signals_;
  std::vector<Proc> procs_;
  Slot* slots_ = nullptr;
};

// Takes every whole frame out of p.buffer.
void take_frames(Proc& p, size_t& completed, const IsolatedDone& done) {
  while (p.buffer.size() >= kHeader) {
    uint64_t index, len;
    int32_t code;
    std::memcpy(&index, p.buffer.data(), 8);
    std::memcpy(&code, p.buffer.data() + 9, 4);
    std::memcpy(&len, p.buffer.data() + 13, 8);
    if (p.buffer.size() < kHeader + len) return;
    IsolatedResult r;
    r.ok = p.buffer[8] != 0;
    r.code = code;
    r.text = p.buffer.substr(kHeader, len);
    p.buffer.erase(0, kHeader + len);
    p.item = -1;
    ++completed;
    done(static_cast<size_t>(index), std::move(r));
  }
}

}  // namespace

bool send_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool recv_exact(int fd, char* data, size_t n) {
  while (n > 0) {
    ssize_t r = ::recv(fd, data, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    data += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

LlvmStage::LlvmStage(const char* what) : previous_(t_stage) {
  t_stage = what;
  if (g_slot) copy_text(g_slot->stage, sizeof g_slot->stage, what);
}

LlvmStage::~LlvmStage() {
  t_stage = previous_;
  if (g_slot) copy_text(g_slot->stage, sizeof g_slot->stage, previous_ ? previous_ : "");
}

void install_llvm_fatal_handlers() {
  llvm::remove_fatal_error_handler();
  llvm::install_fatal_error_handler(on_llvm_fatal);
  llvm::remove_bad_alloc_error_handler();
  llvm::install_bad_alloc_error_handler(on_llvm_fatal);
}

double item_timeout_from_environment() { return seconds_from_environment("KILN_ITEM_TIMEOUT", kDefaultItemTimeout); }

void run_isolated(size_t count, unsigned workers, const IsolatedJob& job, const IsolatedDone& done,
                  const IsolatedLabel& label) {
  if (count == 0) return;
  const double limit = item_timeout_from_environment();
  size_t n = std::min<size_t>(std::max(1u, workers), count);
  StopSignals signals;  // outlives the supervisor, which reaps every worker
  Supervisor sup(static_cast<unsigned>(n), job, label, signals);
  auto stop_if_signalled = [&] {
    if (int sig = g_stop_signal.load()) {
      sup.stop(sig);
      throw KilnError(static_cast<ExitCode>(128 + sig), "",
                      std::string("interrupted by ") + signal_name(sig) + "; its workers were stopped");
    }
  };
  auto& procs = sup.procs();
  size_t next = 0, completed = 0;
  for (size_t k = 0; k < n; ++k) {
    sup.spawn(k);
    sup.assign(procs[k], next++);
  }
  std::vector<pollfd> fds(n);
  while (completed < count) {
    stop_if_signalled();
    for (size_t k = 0; k < n; ++k) fds[k] = {procs[k].fd, POLLIN, 0};  // fd -1: ignored
    // A wait of at most 200 ms: a stop signal that came just before it (to this process
    // alone, so no worker ends) is then seen at the top of the loop all the same.
    if (::poll(fds.data(), fds.size(), 200) < 0) {
      if (errno == EINTR) continue;
      throw KilnError(kExitIo, "", "poll: " + errno_reason(errno));
    }
    for (size_t k = 0; k < n; ++k) {
      if (procs[k].fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t got = ::recv(procs[k].fd, buf, sizeof buf, 0);
      if (got < 0 && errno == EINTR) continue;
      if (got > 0) {
        procs[k].buffer.append(buf, static_cast<size_t>(got));
        take_frames(procs[k], completed, done);
        if (procs[k].item < 0 && next < count) sup.assign(procs[k], next++);
        continue;
      }
      // End of file: the worker died (it never exits while it holds an item), by the
      // stop signal too, perhaps: then that is what happened, not a crash.
      stop_if_signalled();
      int64_t item = procs[k].item;
      IsolatedResult r = sup.reap(k);
      if (item >= 0) {
        ++completed;
        done(static_cast<size_t>(item), std::move(r));
      }
      if (next < count) {
        sup.spawn(k);
        sup.assign(procs[k], next++);
      }
    }
    // An item past the time limit (LLVM looping on a hostile module, say) would hang
    // the whole run: its worker is stopped, the item reported, and the others go on.
    if (limit <= 0) continue;
    const auto now = std::chrono::steady_clock::now();
    for (size_t k = 0; k < n; ++k) {
      if (procs[k].item < 0 || std::chrono::duration<double>(now - procs[k].since).count() < limit) continue;
      const int64_t item = procs[k].item;
      IsolatedResult r = sup.stop_late(k, limit);
      ++completed;
      done(static_cast<size_t>(item), std::move(r));
      if (next < count) {
        sup.spawn(k);
        sup.assign(procs[k], next++);
      }
    }
  }
}

std::string run_isolated_one(const std::string& label, const std::function<std::string()>& job,
                             volatile sig_atomic_t* running_worker) {
  IsolatedResult result;
  g_running_worker = running_worker;
  try {
    run_isolated(
        1, 1, [&](size_t) { return job(); }, [&](size_t, IsolatedResult r) { result = std::move(r); },
        [&](size_t) { return label; });
  } catch (...) {
    if (running_worker) *running_worker = 0;
    g_running_worker = nullptr;
    throw;
  }
  if (running_worker) *running_worker = 0;
  g_running_worker = nullptr;
  if (!result.ok) throw KilnError(static_cast<ExitCode>(result.code), "", result.text);
  return result.text;
}

}  // namespace kiln
