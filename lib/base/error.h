// Errors and exit codes shared by every kiln tool. A KilnError carries the path it is
// about and a reason, and maps to one documented exit code (EXIT STATUS in each man page).
#pragma once
#include <stdexcept>
#include <string>

namespace kiln {

enum ExitCode : int {
  kExitOk = 0,
  kExitFailed = 1,       // the job ran and its verdict is "no" (gate failed, mismatch, ...)
  kExitUsage = 2,        // bad command line
  kExitBadInput = 3,     // unreadable, truncated, foreign or corrupt input
  kExitNewerSchema = 4,  // a file written by a newer kiln
  kExitIo = 5,           // missing file, permission denied, disk full
  kExitMissingTool = 6,  // an external program kiln needs is not installed
  kExitNoDevice = 7,     // a GPU was asked for and none is usable
  kExitInternal = 70,    // a bug in kiln
};

class KilnError : public std::runtime_error {
 public:
  KilnError(ExitCode code, std::string path, const std::string& reason)
      : std::runtime_error(path.empty() ? reason : path + ": " + reason), code_(code), path_(std::move(path)) {}
  ExitCode code() const { return code_; }
  const std::string& path() const { return path_; }

 private:
  ExitCode code_;
  std::string path_;
};

// Runs a tool body, turning any KilnError or std::exception into the one-line
// "TOOL: error: PATH: REASON" message and its exit code.
int run_tool(const char* tool, int (*body)(int, char**), int argc, char** argv);

}  // namespace kiln
