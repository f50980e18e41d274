// A GNU make jobserver client, as rustc's own code generator has one. Cargo -jN (and
// make -jN) hands every job one implicit token and keeps N-1 more in a pipe or FIFO;
// a job that wants more threads reads a byte (a token) for each extra thread and
// writes the same byte back when that thread is done. Without this, every rustc that
// kiln wraps would run up to hardware_threads() emitters and `cargo -jN` would mean
// N times the machine.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "parallel.h"

namespace kiln {

// Where a MAKEFLAGS value says the jobserver is.
struct JobserverAuth {
  enum Kind { kNone, kPipe, kFifo } kind = kNone;
  int read_fd = -1, write_fd = -1;  // kPipe: inherited descriptors
  std::string fifo;                 // kFifo: the FIFO's path
};
// Parses --jobserver-auth=R,W, --jobserver-auth=fifo:PATH and the older
// --jobserver-fds=R,W; as in make, the last --jobserver-auth wins.
JobserverAuth parse_makeflags(const std::string& flags);

class Jobserver;

// One token taken from a jobserver; the destructor writes the very byte it read back,
// so a token goes home on every path, exceptions included. It points at its Jobserver,
// which must stay where it is until every token is back.
class JobToken {
 public:
  JobToken() = default;
  JobToken(Jobserver* owner, char byte) : owner_(owner), byte_(byte) {}
  JobToken(JobToken&& o) noexcept : owner_(o.owner_), byte_(o.byte_) { o.owner_ = nullptr; }
  JobToken& operator=(JobToken&& o) noexcept;
  JobToken(const JobToken&) = delete;
  JobToken& operator=(const JobToken&) = delete;
  ~JobToken() { release(); }
  explicit operator bool() const { return owner_ != nullptr; }
  void release();

 private:
  Jobserver* owner_ = nullptr;
  char byte_ = 0;
};

class Jobserver {
 public:
  Jobserver() = default;  // none: active() is false
  // CARGO_MAKEFLAGS (what cargo gives rustc), else MAKEFLAGS. Descriptors that are
  // not open pipes, or a FIFO that will not open, mean no jobserver.
  static Jobserver from_environment();
  static Jobserver from_auth(const JobserverAuth& auth);
  Jobserver(Jobserver&& o) noexcept;
  Jobserver& operator=(Jobserver&& o) noexcept;
  Jobserver(const Jobserver&) = delete;
  Jobserver& operator=(const Jobserver&) = delete;
  ~Jobserver();

  bool active() const { return read_fd_ >= 0; }
  JobToken try_acquire();  // empty when no token is free now
  JobToken acquire();      // waits; empty only when the jobserver is gone
  // Waits for a token or for stop_fd to become readable (then empty), so that a
  // thread waiting for a token can be told that its work is gone.
  JobToken acquire_unless(int stop_fd);
  void release(char byte);

 private:
  JobToken wait_for_token(int stop_fd, int timeout_ms);
  void close_all();
  int read_fd_ = -1, write_fd_ = -1;  // the same descriptor for a FIFO
  bool own_read_ = false;             // read_fd_ was opened here (and is closed here)
};

// Readable, for poll(), once raise() has been called: the "no more work" signal for
// threads blocked on a token.
class StopSignal {
 public:
  StopSignal();
  ~StopSignal();
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;
  bool ok() const { return fds_[0] >= 0; }
  void raise();
  int fd() const { return fds_[0]; }

 private:
  int fds_[2] = {-1, -1};
  std::atomic<bool> raised_{false};
};

// How many at once, at most (of bodies running, of tokens held).
class PeakCounter {
 public:
  void enter() {
    unsigned now = ++count_, seen = peak_.load();
    while (now > seen && !peak_.compare_exchange_weak(seen, now)) {
    }
  }
  void leave() { --count_; }
  unsigned peak() const { return peak_.load(); }
  struct Scope {  // enter() now, leave() on every way out
    explicit Scope(PeakCounter& c) : c(c) { c.enter(); }
    ~Scope() { c.leave(); }
    PeakCounter& c;
  };

 private:
  std::atomic<unsigned> count_{0}, peak_{0};
};

struct ParallelPeak {
  unsigned threads = 0;  // most bodies running at once
  unsigned tokens = 0;   // most jobserver tokens held at once (0 without a jobserver)
};

namespace detail {

// The jobserver loop. Worker 0 runs on the implicit token and never waits; worker k>0
// takes a token before each item and gives it back after, so at most 1 + tokens held
// bodies run. Handing out the last index raises `no_more`, which wakes the workers
// still waiting for a token: without that, two wrapped rustcs could each wait for the
// token the other's cargo job holds until it exits, and neither would.
template <class Body>
void parallel_for_tokens(Jobserver& jobs, size_t n, unsigned threads, Body& body, PeakCounter& held) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  StopSignal no_more;
  auto take = [&]() -> size_t {
    size_t i = failed.load() ? n : next.fetch_add(1);
    if (i + 1 >= n) no_more.raise();
    return std::min(i, n);
  };
  auto work = [&](unsigned worker) {
    try {
      if (worker == 0) {
        for (size_t i; (i = take()) < n;) body(i);
        return;
      }
      while (JobToken token = jobs.acquire_unless(no_more.fd())) {
        PeakCounter::Scope holding(held);
        size_t i = take();
        if (i >= n) return;
        body(i);
      }  // the token goes back after every item, so other jobs get their turn
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!first_error) first_error = std::current_exception();
      failed = true;
      no_more.raise();
    }
  };
  if (!no_more.ok()) threads = 1;  // out of descriptors: waiters could not be woken
  std::vector<std::thread> pool;
  start_threads(pool, threads, work);
  work(0);
  for (auto& t : pool) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace detail

// parallel_for (one index at a time, the first exception stops the handing out and is
// rethrown) on at most `threads` threads, each thread beyond the first only while it
// holds a token of `jobs`. Without an active jobserver it is parallel_for itself.
template <class Body>
ParallelPeak parallel_for_jobserver(Jobserver& jobs, size_t n, unsigned threads, Body&& body) {
  PeakCounter running, held;
  auto counted = [&](size_t i) {
    PeakCounter::Scope in(running);
    body(i);
  };
  threads = static_cast<unsigned>(std::min<size_t>(std::max(1u, threads), std::max<size_t>(1, n)));
  if (!jobs.active() || threads == 1) parallel_for(n, threads, counted);
  else detail::parallel_for_tokens(jobs, n, threads, counted, held);
  return {running.peak(), held.peak()};
}

// With ENV_VAR naming a file, appends "max N tokens M\n" to it (one write, so many
// processes can share the file): a debugging and test view of what a loop used.
void trace_parallel_peak(const char* env_var, const ParallelPeak& peak);

}  // namespace kiln
