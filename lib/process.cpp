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
