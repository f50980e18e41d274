// lib/base/jobserver: the GNU make jobserver client that keeps kiln's threads inside
// cargo -jN. Jobservers here are made in-process: a pipe (or FIFO) holding K tokens.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fs.h"
#include "jobserver.h"

using namespace kiln;

namespace {

// K distinct token bytes, so that a test sees that the byte read is the byte written back.
std::string tokens_of(int k) {
  std::string t;
  for (int i = 0; i < k; ++i) t += static_cast<char>('a' + i);
  return t;
}

// Every byte the pipe (or FIFO) holds now, without waiting.
std::string drain(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::string out;
  char c;
  while (::read(fd, &c, 1) == 1) out += c;
  std::sort(out.begin(), out.end());
  return out;
}

// A make-style pipe jobserver with K tokens in it.
struct PipeJobs {
  int fds[2] = {-1, -1};
  explicit PipeJobs(int k) {
    REQUIRE(::pipe(fds) == 0);
    std::string t = tokens_of(k);
    REQUIRE(::write(fds[1], t.data(), t.size()) == static_cast<ssize_t>(t.size()));
  }
  ~PipeJobs() {
    ::close(fds[0]);
    ::close(fds[1]);
  }
  JobserverAuth auth() const {
    JobserverAuth a;
    a.kind = JobserverAuth::kPipe;
    a.read_fd = fds[0];
    a.write_fd = fds[1];
    return a;
  }
};

// Runs the jobserver loop over many short items; returns the most bodies seen at once.
unsigned run_loop(Jobserver& jobs, size_t n, unsigned threads, ParallelPeak* peak = nullptr) {
  std::atomic<unsigned> running{0}, most{0};
  std::vector<std::atomic<int>> seen(n);
  ParallelPeak p = parallel_for_jobserver(jobs, n, threads, [&](size_t i) {
    unsigned now = ++running;
    for (unsigned m = most.load(); now > m && !most.compare_exchange_weak(m, now);) {
    }
    ++seen[i];
    std::this_thread::sleep_for(std::chrono::microseconds(500));
    --running;
  });
  for (size_t i = 0; i < n; ++i) REQUIRE(seen[i] == 1);
  REQUIRE(p.threads == most.load());
  if (peak) *peak = p;
  return most.load();
}

}  // namespace

TEST_CASE("MAKEFLAGS: the jobserver forms make and cargo write", "[jobserver]") {
  JobserverAuth a = parse_makeflags("-j --jobserver-fds=6,7 --jobserver-auth=6,7");  // cargo's
  REQUIRE(a.kind == JobserverAuth::kPipe);
  REQUIRE((a.read_fd == 6 && a.write_fd == 6 + 1));
  a = parse_makeflags(" -j4 --jobserver-fds=3,4");  // make before 4.2
  REQUIRE((a.kind == JobserverAuth::kPipe && a.read_fd == 3 && a.write_fd == 4));
  a = parse_makeflags("-j --jobserver-auth=3,4 --jobserver-auth=5,6");  // the last wins
  REQUIRE((a.kind == JobserverAuth::kPipe && a.read_fd == 5 && a.write_fd == 6));
  a = parse_makeflags("rs -j8 --jobserver-auth=fifo:/tmp/GMfifo123");  // make 4.4
  REQUIRE((a.kind == JobserverAuth::kFifo && a.fifo == "/tmp/GMfifo123"));
  a = parse_makeflags("--jobserver-auth=fifo:/tmp/a\\ b -- X=1");  // an escaped blank
  REQUIRE((a.kind == JobserverAuth::kFifo && a.fifo == "/tmp/a b"));
  for (const char* none : {"", "-j4", "k -- CC=gcc", "--jobserver-auth=-2,-2", "--jobserver-auth=sem_name",
                           "--jobserver-auth=3", "--jobserver-auth=3,x", "--jobserver-auth=fifo:"})
    REQUIRE(parse_makeflags(none).kind == JobserverAuth::kNone);
}

TEST_CASE("closed or foreign descriptors mean no jobserver", "[jobserver]") {
  JobserverAuth a;
  {
    PipeJobs p(1);
    a = p.auth();
    REQUIRE(Jobserver::from_auth(a).active());
  }  // both ends closed now
  REQUIRE_FALSE(Jobserver::from_auth(a).active());
  PipeJobs p(1);
  JobserverAuth half = p.auth();
  half.write_fd = 1000;  // never opened
  REQUIRE_FALSE(Jobserver::from_auth(half).active());
  std::string dir = make_temp_dir("kiln-jobserver");
  write_file_atomic(dir + "/plain", "x");
  int file = ::open((dir + "/plain").c_str(), O_RDWR | O_CLOEXEC);  // open, but not a pipe
  JobserverAuth regular = p.auth();
  regular.read_fd = regular.write_fd = file;
  REQUIRE_FALSE(Jobserver::from_auth(regular).active());
  ::close(file);
  JobserverAuth fifo;
  fifo.kind = JobserverAuth::kFifo;
  fifo.fifo = dir + "/plain";  // a file, not a FIFO
  REQUIRE_FALSE(Jobserver::from_auth(fifo).active());
  fifo.fifo = dir + "/missing";
  REQUIRE_FALSE(Jobserver::from_auth(fifo).active());
  remove_tree(dir);
  Jobserver none;
  REQUIRE_FALSE(none.active());
  REQUIRE_FALSE(none.try_acquire());
}

TEST_CASE("CARGO_MAKEFLAGS first, MAKEFLAGS else", "[jobserver]") {
  PipeJobs p(1);
  std::string flags = "-j --jobserver-auth=" + std::to_string(p.fds[0]) + "," + std::to_string(p.fds[1]);
  ::unsetenv("CARGO_MAKEFLAGS");
  ::setenv("MAKEFLAGS", flags.c_str(), 1);
  REQUIRE(Jobserver::from_environment().active());
  ::setenv("CARGO_MAKEFLAGS", "-j --jobserver-auth=1000,1001", 1);
  REQUIRE_FALSE(Jobserver::from_environment().active());
  ::setenv("CARGO_MAKEFLAGS", flags.c_str(), 1);
  ::unsetenv("MAKEFLAGS");
  REQUIRE(Jobserver::from_environment().active());
  ::unsetenv("CARGO_MAKEFLAGS");
  REQUIRE_FALSE(Jobserver::from_environment().active());
}

TEST_CASE("a token is the byte read, and goes back when dropped", "[jobserver]") {
  PipeJobs p(0);
  REQUIRE(::write(p.fds[1], "x", 1) == 1);
  Jobserver jobs = Jobserver::from_auth(p.auth());
  {
    JobToken t = jobs.try_acquire();
    REQUIRE(t);
    REQUIRE_FALSE(jobs.try_acquire());  // the only one is taken
    JobToken moved = std::move(t);
    REQUIRE_FALSE(t);
  }
  REQUIRE(drain(p.fds[0]) == "x");
}

TEST_CASE("the jobserver loop runs at most 1 + K bodies and returns every token", "[jobserver]") {
  for (int k : {0, 1, 3}) {
    PipeJobs p(k);
    Jobserver jobs = Jobserver::from_auth(p.auth());
    REQUIRE(jobs.active());
    ParallelPeak peak;
    unsigned most = run_loop(jobs, 300, 8, &peak);
    INFO("K=" << k << " most=" << most);
    REQUIRE(most <= static_cast<unsigned>(k) + 1);
    REQUIRE(peak.tokens <= static_cast<unsigned>(k));
    if (k > 0) REQUIRE(most >= 2);  // the tokens were used
    REQUIRE(drain(p.fds[0]) == tokens_of(k));
  }
}

TEST_CASE("a body's exception is rethrown and every token is back", "[jobserver]") {
  PipeJobs p(3);
  Jobserver jobs = Jobserver::from_auth(p.auth());
  std::atomic<size_t> ran{0};
  auto body = [&](size_t i) {
    ++ran;
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    if (i == 20) throw std::runtime_error("unit 20 failed");
  };
  REQUIRE_THROWS_WITH(parallel_for_jobserver(jobs, 10000, 4, body), "unit 20 failed");
  REQUIRE(ran < 10000);  // the failure stopped the handing out
  REQUIRE(drain(p.fds[0]) == tokens_of(3));
}

TEST_CASE("the FIFO form: tokens come from and go back to the named FIFO", "[jobserver]") {
  std::string dir = make_temp_dir("kiln-jobserver");
  std::string path = dir + "/fifo";
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  int keep = ::open(path.c_str(), O_RDWR | O_CLOEXEC);  // make's own end
  REQUIRE(::write(keep, "ab", 2) == 2);
  {
    ::setenv("CARGO_MAKEFLAGS", ("-j --jobserver-auth=fifo:" + path).c_str(), 1);
    Jobserver jobs = Jobserver::from_environment();
    ::unsetenv("CARGO_MAKEFLAGS");
    REQUIRE(jobs.active());
    REQUIRE(run_loop(jobs, 200, 6) <= 3);
  }
  REQUIRE(drain(keep) == "ab");
  ::close(keep);
  remove_tree(dir);
}

TEST_CASE("workers waiting for a token others hold do not keep the loop from ending", "[jobserver]") {
  // Every token is out with other jobs, which give it back only once this job has ended
  // (cargo does so for the rustc it runs): worker 0 does all the work alone.
  PipeJobs p(0);
  Jobserver jobs = Jobserver::from_auth(p.auth());
  auto done = std::async(std::launch::async, [&] { return run_loop(jobs, 20, 4); });
  bool ended = done.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  if (!ended) REQUIRE(::write(p.fds[1], "zzz", 3) == 3);  // free the waiters, then fail
  REQUIRE(ended);
  REQUIRE(done.get() == 1);
  REQUIRE(drain(p.fds[0]).empty());
}

TEST_CASE("a wait interrupted by a signal goes on waiting", "[jobserver]") {
  struct sigaction sa {}, old {};
  sa.sa_handler = [](int) {};
  sa.sa_flags = 0;  // no SA_RESTART: poll() and read() fail with EINTR
  ::sigaction(SIGUSR1, &sa, &old);
  PipeJobs p(0);
  Jobserver jobs = Jobserver::from_auth(p.auth());
  std::promise<pthread_t> who;
  auto got = std::async(std::launch::async, [&] {
    who.set_value(::pthread_self());
    return static_cast<bool>(jobs.acquire());
  });
  pthread_t waiter = who.get_future().get();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ::pthread_kill(waiter, SIGUSR1);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(::write(p.fds[1], "q", 1) == 1);
  REQUIRE(got.get());
  REQUIRE(drain(p.fds[0]) == "q");
  ::sigaction(SIGUSR1, &old, nullptr);
}

TEST_CASE("without a jobserver the loop is parallel_for", "[jobserver]") {
  Jobserver none;
  ParallelPeak peak;
  REQUIRE(run_loop(none, 100, 3, &peak) <= 3);
  REQUIRE(peak.tokens == 0);
  REQUIRE(parallel_for_jobserver(none, 0, 4, [](size_t) {}).threads == 0);
}

TEST_CASE("KILN_TRACE_EMIT_THREADS-style traces append one line per loop", "[jobserver]") {
  std::string dir = make_temp_dir("kiln-jobserver");
  ::setenv("KILN_TEST_TRACE", (dir + "/trace").c_str(), 1);
  trace_parallel_peak("KILN_TEST_TRACE", {2, 1});
  trace_parallel_peak("KILN_TEST_TRACE", {1, 0});
  ::unsetenv("KILN_TEST_TRACE");
  trace_parallel_peak("KILN_TEST_TRACE", {9, 9});  // unset: nothing written
  REQUIRE(read_file(dir + "/trace") == "max 2 tokens 1\nmax 1 tokens 0\n");
  remove_tree(dir);
}

// A system that refuses threads (a container's limit on processes): the loops go on with
// the threads they got, every item done, every token back; std::thread's throw used to
// unwind past running threads, which ends the process (std::terminate) with tokens out.
// The limit is RLIMIT_NPROC of a user with no other process (root is exempt from it).
TEST_CASE("loops finish every item with the threads the system gives, tokens all back", "[jobserver][parallel]") {
  if (::geteuid() != 0) {
    WARN("skipped: needs root, to run as a user whose process limit can be made small");
    return;
  }
  int p[2];
  REQUIRE(::pipe(p) == 0);
  for (int i = 0; i < 8; ++i) REQUIRE(::write(p[1], "+", 1) == 1);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) _exit(9);
    const struct rlimit few { 3, 3 };
    ::setrlimit(RLIMIT_NPROC, &few);
    JobserverAuth auth;
    auth.kind = JobserverAuth::kPipe;
    auth.read_fd = p[0], auth.write_fd = p[1];
    Jobserver jobs = Jobserver::from_auth(auth);
    std::atomic<int> done{0};
    auto item = [&](size_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ++done;
    };
    try {
      parallel_for_jobserver(jobs, 64, 16, item);
      parallel_for(64, 16, item);
    } catch (...) {
      _exit(8);
    }
    _exit(done == 128 ? 0 : 7);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  ::fcntl(p[0], F_SETFL, O_NONBLOCK);
  char buf[64];
  CHECK(::read(p[0], buf, sizeof buf) == 8);  // every token back
  ::close(p[0]);
  ::close(p[1]);
}
