// Small helpers that several unit-test files use: one definition each, since meson
// compiles the test files a few to a unit (a second definition would clash there).
#pragma once
#include <llvm/Support/Error.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln_config.h"
#include "process.h"

namespace kiln_test {

// The value, or the error as an exception (which fails the test that called it).
template <typename T>
T must(llvm::Expected<T> value) {
  if (!value) throw std::runtime_error(llvm::toString(value.takeError()));
  return std::move(*value);
}

// The path of one of LLVM's tools (llvm-readelf, ...).
inline std::string llvm_tool(const char* name) { return std::string(KILN_LLVM_BINDIR) + "/" + name; }

// A command line's stdout and stderr together, and its status.
inline kiln::ProcessResult shell(const std::string& command) {
  kiln::ProcessOptions capture;
  capture.capture_stdout = true;
  return kiln::run_shell(command + " 2>&1", capture);
}

// Sets an environment variable for one scope, then puts back what was there.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(const std::string& n, const std::string& value) : name(n) {
    if (const char* v = std::getenv(n.c_str())) old = v;
    ::setenv(n.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() { old ? (void)::setenv(name.c_str(), old->c_str(), 1) : (void)::unsetenv(name.c_str()); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

// stamp's frame shapes around BODY (stamp_object.h): biased, push rbp; lea rbp, [rsp -
// 112]; BODY; lea rsp, [rbp + 112]; pop rbp; ret (BODY at kFramedBody), or plain,
// push rbp; mov rbp, rsp; BODY; leave; ret (BODY at kPlainFramedBody).
constexpr uint32_t kFramedBody = 6, kPlainFramedBody = 4;
inline std::vector<uint8_t> stamp_framed(const std::vector<uint8_t>& body, bool biased = true) {
  std::vector<uint8_t> code = biased ? std::vector<uint8_t>{0x55, 0x48, 0x8D, 0x6C, 0x24, 0x90}
                                     : std::vector<uint8_t>{0x55, 0x48, 0x89, 0xE5};
  code.insert(code.end(), body.begin(), body.end());
  if (biased) code.insert(code.end(), {0x48, 0x8D, 0x65, 0x70, 0x5D});
  else code.push_back(0xC9);
  code.push_back(0xC3);
  return code;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// `text` with the first `from` replaced by `to`; `from` must be there.
inline std::string replaced(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  if (at == std::string::npos) throw std::runtime_error("not in the test text: " + from);
  return text.replace(at, from.size(), to);
}

// Every .bc file under `dir`, sorted.
inline std::vector<std::string> bitcode_files_under(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == ".bc") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace kiln_test
