// Starting programs (lib/process.h): what cannot start is an error naming the program
// and the reason, not a silent exit status of 127; a script without #! runs by /bin/sh
// as make and the shells run it; the children get no descriptor of kiln's own.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "error.h"
#include "fs.h"
#include "process.h"
#include "scratch_dir.h"
#include "test_helpers.h"

using namespace kiln;
using namespace kiln_test;

namespace {

std::string script(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  write_file_atomic(path, text);
  ::chmod(path.c_str(), 0755);
  return path;
}

// The KilnError a start throws: its code and its line.
std::pair<int, std::string> start_error(const std::function<void()>& start) {
  try {
    start();
  } catch (const KilnError& e) {
    return {e.code(), e.what()};
  }
  return {0, ""};
}

// The descriptors above 2 open on /dev/null that a child of this process keeps past
// exec: those this process has without close-on-exec (what its own parent left it).
std::set<int> inherited_dev_null() {
  std::set<int> fds;
  DIR* d = ::opendir("/proc/self/fd");
  REQUIRE(d);
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const int fd = std::stoi(e->d_name);
    char target[64] = {};
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    const int flags = ::fcntl(fd, F_GETFD);
    if (fd > 2 && fd != ::dirfd(d) && n > 0 && std::string(target) == "/dev/null" && flags >= 0 &&
        !(flags & FD_CLOEXEC))
      fds.insert(fd);
  }
  ::closedir(d);
  return fds;
}

// Those a child listed ("N\n" lines), above 2.
std::set<int> listed_above_2(const std::string& text) {
  std::set<int> fds;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && std::stoi(line) > 2) fds.insert(std::stoi(line));
  return fds;
}

}  // namespace

TEST_CASE("a program that cannot start is an error naming it and why", "[process]") {
  ScratchDir dir;
  const std::string no_interpreter = script(dir.path, "bad-interpreter", "#!/nonexistent/sh\necho hi\n");
  for (bool supervised : {false, true}) {
    INFO((supervised ? "run_shell_supervised" : "run_process"));
    auto start = [&](const std::string& program, const ProcessOptions& o) {
      if (supervised) run_shell_supervised("exec " + program, o, 10);
      else run_process({program}, o);
    };
    if (!supervised) {  // through sh -c, exec's failure is the shell's own message
      auto [code, line] = start_error([&] { start(no_interpreter, {}); });
      CHECK(code == kExitMissingTool);
      CHECK(line.find(no_interpreter + ": cannot run: No such file or directory (its #! interpreter?)") !=
            std::string::npos);
      auto [dcode, dline] = start_error([&] { start(dir.path, {}); });
      CHECK(dcode == kExitMissingTool);
      CHECK(dline.find("cannot run: Permission denied") != std::string::npos);
    }
    ProcessOptions elsewhere;
    elsewhere.cwd = dir.path + "/missing";
    auto [code, line] = start_error([&] { start("true", elsewhere); });
    CHECK(code == kExitIo);
    CHECK(line.find(elsewhere.cwd + ": cannot change to this directory to run ") != std::string::npos);
  }
}

TEST_CASE("a script without #! runs by /bin/sh, with its arguments", "[process]") {
  ScratchDir dir;
  const std::string plain = script(dir.path, "plain", "echo \"ran $# $1 $2\"\n");
  ProcessOptions o;
  o.capture_stdout = true;
  ProcessResult r = run_process({plain, "a", "b c"}, o);
  CHECK(r.exit_code == 0);
  CHECK(r.captured_stdout == "ran 2 a b c\n");
}

TEST_CASE("a quiet child gets /dev/null as stdout and stderr and no other descriptor of it", "[process]") {
  ScratchDir dir;
  const std::string listing = dir.path + "/fds";
  ProcessOptions quiet;
  quiet.quiet = true;
  // find lists its own descriptors open on /dev/null (through no shell, whose saved
  // descriptors would be its own).
  const std::vector<std::string> find = {"find", "/proc/self/fd/", "-lname", "/dev/null", "-fprintf", listing, "%f\n"};
  for (bool supervised : {false, true}) {
    INFO((supervised ? "run_shell_supervised" : "run_process"));
    ProcessResult r = supervised ? run_shell_supervised(shell_join(find), quiet, 10) : run_process(find, quiet);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(read_file(listing), "2\n"));                         // the test sees /dev/null through find
    CHECK(listed_above_2(read_file(listing)) == inherited_dev_null());  // one more: the /dev/null 1 and 2 copy
  }
}

// A stop signal inside a DeferredSignals scope (kiln-emit's cmd: back end between making
// its scratch directory and starting the command) no longer ends kiln at once with the
// directory left in TMPDIR: it is remembered and reported once the scope's files are
// removed. Each case runs in a child process, which the signal may end.
namespace {

// Runs `body` in a child and returns its wait status.
int in_child(const std::function<int()>& body) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::signal(SIGTERM, SIG_DFL);  // Catch's handler, which kiln's tools do not have
    int code = 99;
    try {
      code = body();
    } catch (...) {
      code = 98;
    }
    ::_exit(code);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return status;
}

}  // namespace

TEST_CASE("a stop signal in a DeferredSignals scope is reported after the scope's cleanup", "[process][signals]") {
  ScratchDir dir;
  const std::string made = dir.path + "/scratch", alive = dir.path + "/alive";
  int status = in_child([&] {
    if (interrupt_signal() != 0) return 90;
    try {
      DeferredSignals deferred;
      write_file_atomic(made, "x");
      ::raise(SIGTERM);
      write_file_atomic(alive, "still running after SIGTERM");
      throw_if_interrupted();
      return 91;
    } catch (const KilnError& e) {
      // The scope is gone: its destructor did not end the process while the error unwound.
      remove_tree(made);
      return e.code() == 128 + SIGTERM && std::string(e.what()).find("interrupted by SIGTERM") != std::string::npos
          ? 43
          : 92;
    }
  });
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 43);
  CHECK(path_exists(alive));
  CHECK(!path_exists(made));
}

TEST_CASE("a stop signal nothing reported takes its usual effect at the scope's end", "[process][signals]") {
  ScratchDir dir;
  const std::string alive = dir.path + "/alive", after = dir.path + "/after";
  int status = in_child([&] {
    {
      DeferredSignals deferred;
      ::raise(SIGTERM);
      write_file_atomic(alive, "x");
    }
    write_file_atomic(after, "the scope's end should not be passed");
    return 0;
  });
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  CHECK(path_exists(alive));
  CHECK(!path_exists(after));
}

TEST_CASE("a signal kiln was told to ignore stays ignored in a DeferredSignals scope", "[process][signals]") {
  int status = in_child([] {
    ::signal(SIGHUP, SIG_IGN);  // nohup
    {
      DeferredSignals deferred;
      ::raise(SIGHUP);
    }
    return interrupt_signal() == 0 ? 0 : 1;
  });
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
