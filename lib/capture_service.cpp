#include "capture_service.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "capture.h"
#include "error.h"
#include "fs.h"
#include "stamp_service.h"
#include "timeutil.h"

extern char** environ;

namespace kiln {

namespace {

constexpr double kStartTimeoutSeconds = 120;  // a CUDA context may take seconds
constexpr double kStopTimeoutSeconds = 30;

// The environment for the service, made before fork (the child may not allocate).
std::vector<std::string> service_environment(const std::string& device, const std::string& socket_path,
                                             const std::string& receipts) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string_view entry(*e);
    if (entry.rfind(std::string(kEnvRole) + "=", 0) == 0) continue;
    env.emplace_back(entry);
  }
  env.push_back(std::string(kEnvRole) + "=service");
  env.push_back(std::string(kEnvServiceDevice) + "=" + device);
  env.push_back(std::string(kEnvServiceSocket) + "=" + socket_path);
  env.push_back(std::string(kEnvServiceReceipts) + "=" + receipts);
  return env;
}

// One line from fd, waiting at most `seconds`; empty when none came.
std::string read_line(int fd, double seconds) {
  std::string line;
  Stopwatch clock;
  char c;
  while (line.size() < 4096) {
    const double left = seconds - clock.seconds();
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left * 1000) + 1) <= 0) break;
    ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || c == '\n') break;
    line += c;
  }
  return line;
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status))
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

double env_number(const char* name, double fallback, double low, double high) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  double x = std::strtod(v, &end);
  if (*end != '\0' || !(x >= low && x <= high)) {
    char range[64];
    std::snprintf(range, sizeof range, "from %g to %g", low, high);
    throw KilnError(kExitUsage, name, std::string("'") + v + "': expected a number " + range);
  }
  return x;
}

}  // namespace

StampServiceProcess::StampServiceProcess(const std::string& device, const std::string& socket_path,
                                         const std::string& receipts) {
  const std::string self = self_executable();
  std::vector<std::string> env = service_environment(device, socket_path, receipts);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string arg0 = "kiln-capture", arg1 = "--stamp-service", arg2 = socket_path;  // what ps shows
  char* argv[] = {arg0.data(), arg1.data(), arg2.data(), nullptr};
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) throw KilnError(kExitIo, "", "pipe: " + errno_reason(errno));
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw KilnError(kExitIo, "", "fork: " + errno_reason(errno));
  if (pid_ == 0) {
    ::setpgid(0, 0);  // out of the build's group and off the terminal: kiln-capture stops it
#ifdef __linux__
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // kiln-capture gone (kill -9): the service goes too
#endif
    if (::getppid() != parent) ::_exit(kExitIo);
    ::dup2(ready[1], STDOUT_FILENO);  // dup2 clears close-on-exec on the copy
    ::execve(self.c_str(), argv, envp.data());
    ::_exit(kExitIo);
  }
  ::close(ready[1]);
  std::string line = read_line(ready[0], kStartTimeoutSeconds);
  ::close(ready[0]);
  if (line.rfind("ready ", 0) == 0) {
    device_name_ = line.substr(6);
    return;
  }
  // It said why and is exiting, or it said nothing in time (or died): then it is killed.
  if (line.rfind("error: ", 0) != 0) ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  if (line.rfind("error: ", 0) == 0) {  // its own exit status: usage (a bad KILN_SERVICE_*), I/O or no device
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : kExitIo;
    const bool known = code == kExitUsage || code == kExitIo || code == kExitNoDevice;
    throw KilnError(known ? static_cast<ExitCode>(code) : kExitIo, "", line.substr(7));
  }
  throw KilnError(kExitIo, socket_path, "the stamp service did not start (" + describe_status(status) + ")");
}

StampServiceProcess::~StampServiceProcess() {
  if (pid_ > 0) stop();
}

std::string StampServiceProcess::stop() {
  if (pid_ <= 0) return "";
  int status = 0;
  pid_t done = ::waitpid(pid_, &status, WNOHANG);
  std::string how;
  if (done == pid_) {
    how = "died during the build (" + describe_status(status) + ")";
  } else {
    ::kill(pid_, SIGTERM);
    Stopwatch clock;
    while ((done = ::waitpid(pid_, &status, WNOHANG)) == 0 && clock.seconds() < kStopTimeoutSeconds) ::usleep(5000);
    if (done == 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      how = "did not stop within 30 s and was killed";
    } else {
      how = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "stopped" : "stopped badly (" + describe_status(status) + ")";
    }
  }
  pid_ = -1;
  return how;
}

int stamp_service_main() {
  StampServiceOptions o;
  auto text = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  o.socket_path = text(kEnvServiceSocket);
  o.device = text(kEnvServiceDevice);
  o.receipts_path = text(kEnvServiceReceipts);
  if (o.device != "cuda" && o.device != "cpu") {
    std::printf("error: --device '%s': expected cuda or cpu\n", o.device.c_str());
    return kExitUsage;
  }
  try {
    o.streams = static_cast<unsigned>(env_number(kEnvServiceStreams, 2, 1, 64));
    o.batch_instructions = static_cast<uint64_t>(env_number(kEnvServiceBatch, 32768, 1, 1e9));
    // The CPU executor gains nothing from batches: its modules do not wait.
    o.max_wait = env_number(kEnvServiceWaitMs, o.device == "cpu" ? 0 : 10, 0, 10000) / 1000;
    o.die_after = static_cast<uint64_t>(env_number(kEnvTestServiceDieAfter, 0, 0, 1e12));
  } catch (const KilnError& e) {
    std::printf("error: %s\n", e.what());
    return e.code();
  }
  const std::string batching = text(kEnvServiceBatching);
  if (!batching.empty() && batching != "adaptive" && batching != "fixed") {
    std::printf("error: %s: '%s': expected adaptive or fixed\n", kEnvServiceBatching, batching.c_str());
    return kExitUsage;
  }
  o.adaptive = batching != "fixed";
  std::fflush(stdout);
  return run_stamp_service(o, STDOUT_FILENO);
}

}  // namespace kiln
