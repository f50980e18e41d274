#include "jobserver.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <utility>

namespace kiln {

namespace {

// MAKEFLAGS words; make escapes a blank inside a word (a FIFO path) with a backslash.
std::vector<std::string> split_words(const std::string& flags) {
  std::vector<std::string> words(1);
  for (size_t i = 0; i < flags.size(); ++i) {
    char c = flags[i];
    if (c == '\\' && i + 1 < flags.size()) words.back() += flags[++i];
    else if (c != ' ' && c != '\t') words.back() += c;
    else if (!words.back().empty()) words.emplace_back();
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

bool parse_fd(const std::string& s, int& fd) {
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  fd = std::atoi(s.c_str());
  return true;
}

// "R,W" or "fifo:PATH"; anything else (a Windows semaphore name, -2,-2) is no jobserver.
JobserverAuth parse_auth(const std::string& value) {
  JobserverAuth a;
  if (value.rfind("fifo:", 0) == 0 && value.size() > 5) {
    a.kind = JobserverAuth::kFifo;
    a.fifo = value.substr(5);
    return a;
  }
  size_t comma = value.find(',');
  if (comma != std::string::npos && parse_fd(value.substr(0, comma), a.read_fd) &&
      parse_fd(value.substr(comma + 1), a.write_fd))
    a.kind = JobserverAuth::kPipe;
  else
    a.read_fd = a.write_fd = -1;
  return a;
}

// An inherited descriptor is only trusted when it is open and a pipe: a number whose
// descriptor was not passed on may since name one of this process's own files.
bool open_pipe(int fd) {
  struct stat st {};
  return ::fcntl(fd, F_GETFD) != -1 && ::fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
}

// 1: a token in `byte`; 0: none now (another job took it first); -1: the jobserver is gone.
int read_token(int fd, char& byte) {
  for (;;) {
    ssize_t r = ::read(fd, &byte, 1);
    if (r == 1) return 1;
    if (r == 0) return -1;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
  }
}

}  // namespace

JobserverAuth parse_makeflags(const std::string& flags) {
  static const std::string kAuth = "--jobserver-auth=", kFds = "--jobserver-fds=";
  JobserverAuth auth, fds;
  for (const auto& w : split_words(flags)) {
    if (w.rfind(kAuth, 0) == 0) auth = parse_auth(w.substr(kAuth.size()));
    else if (w.rfind(kFds, 0) == 0) fds = parse_auth(w.substr(kFds.size()));
  }
  return auth.kind != JobserverAuth::kNone ? auth : fds;
}

JobToken& JobToken::operator=(JobToken&& o) noexcept {
  if (this != &o) {
    release();
    owner_ = std::exchange(o.owner_, nullptr);
    byte_ = o.byte_;
  }
  return *this;
}

void JobToken::release() {
  if (owner_) std::exchange(owner_, nullptr)->release(byte_);
}

Jobserver Jobserver::from_environment() {
  const char* flags = std::getenv("CARGO_MAKEFLAGS");
  if (!flags || !*flags) flags = std::getenv("MAKEFLAGS");
  return flags ? from_auth(parse_makeflags(flags)) : Jobserver();
}

Jobserver Jobserver::from_auth(const JobserverAuth& auth) {
  Jobserver j;
  if (auth.kind == JobserverAuth::kFifo) {
    // Opened read-write so that opening never waits for a writer; non-blocking so
    // that a token another job took between poll() and read() costs no wait.
    int fd = ::open(auth.fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    struct stat st {};
    if (fd < 0) return j;
    if (::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) {
      ::close(fd);
      return j;
    }
    j.read_fd_ = j.write_fd_ = fd;
    j.own_read_ = true;
    return j;
  }
  if (auth.kind != JobserverAuth::kPipe || !open_pipe(auth.read_fd) || !open_pipe(auth.write_fd)) return j;
  // The inherited read end is blocking and shared with make or cargo (whose mode must
  // not change); a private non-blocking opening of the same pipe, where /proc allows
  // it, lets a thread that lost a token to another job go back to poll().
  std::string self = "/proc/self/fd/" + std::to_string(auth.read_fd);
  int own = ::open(self.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  j.read_fd_ = own >= 0 ? own : auth.read_fd;
  j.own_read_ = own >= 0;
  j.write_fd_ = auth.write_fd;
  return j;
}

Jobserver::Jobserver(Jobserver&& o) noexcept
    : read_fd_(std::exchange(o.read_fd_, -1)), write_fd_(std::exchange(o.write_fd_, -1)),
      own_read_(std::exchange(o.own_read_, false)) {}

Jobserver& Jobserver::operator=(Jobserver&& o) noexcept {
  if (this != &o) {
    close_all();
    read_fd_ = std::exchange(o.read_fd_, -1);
    write_fd_ = std::exchange(o.write_fd_, -1);
    own_read_ = std::exchange(o.own_read_, false);
  }
  return *this;
}

Jobserver::~Jobserver() { close_all(); }

// Inherited descriptors stay open: they are the build's, for the compilers we run.
void Jobserver::close_all() {
  if (own_read_) ::close(read_fd_);
  read_fd_ = write_fd_ = -1;
  own_read_ = false;
}

JobToken Jobserver::try_acquire() { return wait_for_token(-1, 0); }
JobToken Jobserver::acquire() { return wait_for_token(-1, -1); }
JobToken Jobserver::acquire_unless(int stop_fd) { return wait_for_token(stop_fd, -1); }

// poll() on the jobserver (and stop_fd), then read one byte; timeout_ms as poll's.
JobToken Jobserver::wait_for_token(int stop_fd, int timeout_ms) {
  if (!active()) return {};
  for (;;) {
    pollfd p[2] = {{read_fd_, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    int r = ::poll(p, stop_fd >= 0 ? 2 : 1, timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0 || (stop_fd >= 0 && p[1].revents) || (p[0].revents & POLLNVAL)) return {};
    char byte = 0;
    int got = read_token(read_fd_, byte);
    if (got > 0) return JobToken(this, byte);
    if (got < 0 || timeout_ms == 0) return {};
  }
}

void Jobserver::release(char byte) {
  while (write_fd_ >= 0) {
    ssize_t r = ::write(write_fd_, &byte, 1);
    if (r == 1) return;
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {  // a full non-blocking FIFO
      pollfd p = {write_fd_, POLLOUT, 0};
      ::poll(&p, 1, -1);
      continue;
    }
    return;  // the jobserver is gone: nobody is left to hand the token to
  }
}

StopSignal::StopSignal() {
  if (::pipe2(fds_, O_CLOEXEC) != 0) fds_[0] = fds_[1] = -1;
}

StopSignal::~StopSignal() {
  for (int fd : fds_)
    if (fd >= 0) ::close(fd);
}

void StopSignal::raise() {
  if (fds_[1] < 0 || raised_.exchange(true)) return;
  char byte = 0;
  while (::write(fds_[1], &byte, 1) < 0 && errno == EINTR) {
  }
}

void trace_parallel_peak(const char* env_var, const ParallelPeak& peak) {
  const char* path = std::getenv(env_var);
  if (!path || !*path) return;
  // A debugging aid: a file it cannot write to must not fail the build.
  int fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  std::string line = "max " + std::to_string(peak.threads) + " tokens " + std::to_string(peak.tokens) + "\n";
  ssize_t written = ::write(fd, line.data(), line.size());
  (void)written;
  ::close(fd);
}

}  // namespace kiln
