// kiln's one parallel-for (as mold has one): every loop over modules, batches or
// instructions that runs on threads goes through it, so that thread counts, work
// sharing and errors behave the same everywhere.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace kiln {

// The number of threads a "use the machine" default means.
inline unsigned hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

// Starts work(1) .. work(threads - 1) on threads of `pool`, as many as the system gives:
// where it refuses one (a container's limit on processes, EAGAIN), the loop goes on with
// those started and the calling thread, which takes whatever they leave. A throw from
// std::thread's constructor while others ran would unwind past joinable threads, which
// ends the process (std::terminate), tokens and all.
template <class Work>
void start_threads(std::vector<std::thread>& pool, unsigned threads, Work& work) {
  pool.reserve(threads > 0 ? threads - 1 : 0);
  for (unsigned t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(work, t);
    } catch (const std::system_error&) {
      return;
    }
  }
}

// Calls body(i, worker) for every i in [0, n) on at most `threads` threads; worker is
// the thread's number in [0, threads), for per-thread state (scratch arrays, a GPU
// executor). Threads take `grain` consecutive indices at a time, in order, so a grain
// of 1 balances uneven items (modules) and a large grain keeps a thread on one
// contiguous range (instructions). The first exception a body throws stops the
// handing out of further indices and is rethrown here once every thread has stopped;
// bodies that want every item tried catch their own errors.
template <class Body>
void parallel_for_workers(size_t n, unsigned threads, size_t grain, Body&& body) {
  grain = std::max<size_t>(1, grain);
  const size_t chunks = (n + grain - 1) / grain;
  threads = static_cast<unsigned>(std::min<size_t>(std::max(1u, threads), chunks));
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) body(i, 0u);
    return;
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  auto work = [&](unsigned worker) {
    try {
      for (size_t c; !failed.load(std::memory_order_relaxed) && (c = next.fetch_add(1)) < chunks;) {
        const size_t end = std::min(n, (c + 1) * grain);
        for (size_t i = c * grain; i < end; ++i) body(i, worker);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!first_error) first_error = std::current_exception();
      failed = true;
    }
  };
  std::vector<std::thread> pool;
  start_threads(pool, threads, work);
  work(0);  // the calling thread is worker 0
  for (auto& t : pool) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

// The same without the worker number, one index at a time.
template <class Body>
void parallel_for(size_t n, unsigned threads, Body&& body) {
  parallel_for_workers(n, threads, 1, [&](size_t i, unsigned) { body(i); });
}

}  // namespace kiln
