// Untrusted modules can crash LLVM (mutated bitcode makes its reader dereference wild
// pointers or trip a trap) or make it call report_fatal_error, which exits the process
// (a verified module with "target-cpu"="i386" on x86-64 does). Work on such modules runs
// in forked worker processes so that a bad module fails alone, with its reason, and
// every other module still finishes.
#pragma once
#include <csignal>
#include <cstddef>
#include <functional>
#include <string>

namespace kiln {

struct IsolatedResult {
  bool ok = false;       // the job returned: text is its answer
  bool crashed = false;  // the worker died (a signal, or an LLVM fatal error); text says how
  int code = 0;          // when !ok: the job's KilnError code, kExitBadInput for a crash
  std::string text;      // ok: the job's answer; else one line "LABEL: REASON"
};

using IsolatedJob = std::function<std::string(size_t index)>;
using IsolatedDone = std::function<void(size_t index, IsolatedResult result)>;
using IsolatedLabel = std::function<std::string(size_t index)>;

// Runs job(i) for every i < count in up to `workers` worker processes forked from
// this one, and done(i, result) here as results arrive (in any order). A worker that
// dies is reaped, its item reported as crashed (label(i) names it), and a new worker
// takes the remaining items. So is one whose item runs longer than KILN_ITEM_TIMEOUT
// seconds (default kDefaultItemTimeout; 0: no limit), which is stopped: "LABEL: stopped
// after N s (KILN_ITEM_TIMEOUT)". A KILN_ITEM_TIMEOUT that is no number of seconds is
// a KilnError(kExitUsage). Workers are forked, so call this while the process runs
// no other threads. An exception from done() stops the workers and propagates.
void run_isolated(size_t count, unsigned workers, const IsolatedJob& job, const IsolatedDone& done,
                  const IsolatedLabel& label);
// Longer than KILN_CMD_TIMEOUT's default, so that a cmd: back end's own limit, which
// names its command, comes first.
inline constexpr double kDefaultItemTimeout = 900;
double item_timeout_from_environment();

// One item: returns job()'s answer, or throws KilnError with the job's code and line
// (a crash: kExitBadInput, "LABEL: LLVM crashed (SIGSEGV) while parsing").
// running_worker, when given, holds the worker's pid while it runs (0 after), for a
// signal handler that must stop it and wait before acting (the C wrapper's: the worker
// stops a cmd: back end's command, which its death would leave running).
std::string run_isolated_one(const std::string& label, const std::function<std::string()>& job,
                             volatile sig_atomic_t* running_worker = nullptr);

// Whole writes and reads on a socket (EINTR retried; a peer that closed, or died, is
// false, never SIGPIPE): the frames between a supervisor and its workers.
bool send_all(int fd, const char* data, size_t n);
bool recv_exact(int fd, char* data, size_t n);

// Names what this thread is doing with LLVM ("parsing", "generating code"), for the
// message if LLVM crashes or stops there; restores the previous stage when it ends.
class LlvmStage {
 public:
  explicit LlvmStage(const char* what);
  ~LlvmStage();
  LlvmStage(const LlvmStage&) = delete;
  LlvmStage& operator=(const LlvmStage&) = delete;

 private:
  const char* previous_;
};

// LLVM's fatal errors (report_fatal_error, its out-of-memory handler) end the process
// with LLVM's message instead of "LLVM ERROR" and exit(1): in a worker the message
// goes to the supervisor; elsewhere it is printed as one line and the exit status is 3.
void install_llvm_fatal_handlers();

}  // namespace kiln
