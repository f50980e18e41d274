#include "backend_cmd.h"

#include "error.h"
#include "fs.h"
#include "process.h"
#include "timeutil.h"

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>

namespace kiln {

double seconds_from_environment(const char* name, double fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (*end != '\0' || !std::isfinite(v) || v < 0)
    throw KilnError(kExitUsage, "",
                    std::string(name) + " must be a number of seconds (0: none), not '" + text + "'");
  return v;
}

double cmd_timeout_from_environment() { return seconds_from_environment("KILN_CMD_TIMEOUT", kDefaultCmdTimeout); }

namespace {

uint64_t le(std::string_view o, size_t off, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(o[off + i])) << (8 * i);
  return v;
}

// [offset, offset + size) lies inside a file of file_size bytes (no wrap-around).
bool in_file(uint64_t offset, uint64_t size, uint64_t file_size) {
  return offset <= file_size && size <= file_size - offset;
}

}  // namespace

// A back end that writes a bare header (or a truncated file) must fail here, with the
// reason, rather than be recorded as ok and break the link or the size report later.
std::string relocatable_object_problem(std::string_view o) {
  std::string header = object_problem(o);
  if (!header.empty()) return header;
  constexpr uint64_t kEhdrSize = 64, kShdrSize = 64;
  constexpr uint32_t kShtNull = 0, kShtStrtab = 3, kShtNobits = 8;
  const uint64_t size = o.size();
  if (o[6] != 1 || le(o, 20, 4) != 1) return "ELF version is not 1 (EV_CURRENT)";
  if (le(o, 52, 2) != kEhdrSize) return "ELF header size (e_ehsize) is not 64";
  uint64_t shoff = le(o, 40, 8), shentsize = le(o, 58, 2), shnum = le(o, 60, 2), shstrndx = le(o, 62, 2);
  if (shoff == 0) return "no section header table (e_shoff is 0)";
  if (shentsize != kShdrSize) return "section header size (e_shentsize) is " + std::to_string(shentsize) + ", not 64";
  if (shoff < kEhdrSize || !in_file(shoff, kShdrSize, size))
    return "section header table offset (e_shoff " + std::to_string(shoff) + ") is outside the file";
  auto shdr = [&](uint64_t i) { return o.substr(shoff + i * kShdrSize, kShdrSize); };
  // More than 0xff00 sections: the count is section 0's sh_size, the string table's
  // index its sh_link (the ELF extended numbering).
  if (shnum == 0) shnum = le(shdr(0), 32, 8);
  if (shstrndx == 0xffff) shstrndx = le(shdr(0), 40, 4);
  if (shnum < 2) return "no sections (e_shnum is " + std::to_string(shnum) + ")";
  if (shnum > (size - shoff) / kShdrSize)
    return "section header table (" + std::to_string(shnum) + " entries at " + std::to_string(shoff) +
        ") runs past the end of the file (" + std::to_string(size) + " bytes)";
  if (le(shdr(0), 4, 4) != kShtNull) return "section 0 is not the null section";
  if (shstrndx == 0 || shstrndx >= shnum)
    return "section name string table index (e_shstrndx " + std::to_string(shstrndx) + ") is not a section";
  std::string_view names = shdr(shstrndx);
  uint64_t names_offset = le(names, 24, 8), names_size = le(names, 32, 8);
  if (le(names, 4, 4) != kShtStrtab || names_size == 0) return "section e_shstrndx names is not a string table";
  for (uint64_t i = 1; i < shnum; ++i) {
    std::string_view h = shdr(i);
    uint64_t type = le(h, 4, 4), offset = le(h, 24, 8), length = le(h, 32, 8);
    if (type != kShtNobits && !in_file(offset, length, size))
      return "section " + std::to_string(i) + " (offset " + std::to_string(offset) + ", " + std::to_string(length) +
          " bytes) runs past the end of the file (" + std::to_string(size) + " bytes)";
    if (le(h, 0, 4) >= names_size) return "section " + std::to_string(i) + "'s name is outside the string table";
  }
  if (!in_file(names_offset, names_size, size) || o[names_offset + names_size - 1] != '\0')
    return "the section name string table is not NUL-terminated";
  return "";
}

CommandBackend::CommandBackend(std::string command_template)
    : template_(std::move(command_template)), timeout_seconds_(cmd_timeout_from_environment()) {}

static std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

static std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos; pos += to.size())
    text.replace(pos, from.size(), to);
  return text;
}

EmitResult CommandBackend::emit(std::string_view bitcode, const std::string& label) {
  EmitResult result;
  // A stop signal from here on is reported once the scratch directory is gone, not
  // with it left behind in TMPDIR (declared first: it ends last).
  DeferredSignals deferred;
  std::string dir = make_temp_dir("kiln-cmd");
  struct Cleanup {
    std::string d;
    ~Cleanup() { remove_tree(d); }
  } cleanup{dir};
  std::string in = dir + "/in.bc", out = dir + "/out.o";
  Stopwatch clock;
  write_file_atomic(in, bitcode);
  result.stages.write = clock.lap();
  std::string command = replace_all(replace_all(template_, "{in}", shell_quote(in)), "{out}", shell_quote(out));
  // Its own process group, so that the timeout stops the command and all it started.
  ProcessOptions options;
  options.stdout_to_stderr = true;  // what it says is not kiln's output (an object on -o /dev/stdout)
  ProcessResult run = run_shell_supervised(command, options, timeout_seconds_);
  result.stages.codegen = clock.lap();
  if (run.timed_out)
    throw KilnError(kExitFailed, label,
                    "back end command timed out after " + format_seconds(timeout_seconds_) +
                        " s (KILN_CMD_TIMEOUT) and was killed: " + command);
  if (run.exit_code == 127) throw KilnError(kExitMissingTool, label, "back end command not found: " + template_);
  if (run.exit_code != 0)
    throw KilnError(kExitFailed, label,
                    "back end command failed with status " + std::to_string(run.exit_code) + ": " + command);
  if (!path_exists(out)) throw KilnError(kExitFailed, label, "back end command wrote no object: " + command);
  result.object = read_file(out);
  result.stages.read = clock.lap();
  std::string problem = relocatable_object_problem(result.object);
  if (!problem.empty()) throw KilnError(kExitFailed, label, "back end command wrote a broken object: " + problem);
  throw_if_interrupted();
  return result;
}

}  // namespace kiln
