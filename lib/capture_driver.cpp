// kiln-capture's driver: checks the options, installs the compiler wrappers in a
// temporary directory, runs the build in a process group of its own, and writes the
// corpus's manifest after it. It links no LLVM (kiln's core only): it starts in about
// a millisecond, where a program that links LLVM statically takes 3.6, and that start
// is paid on every build, an incremental rebuild's included. The wrappers that need
// LLVM are kiln-capture-llvm (capture.cpp).
#include "capture.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <future>
#include <memory>

#include "backend.h"
#include "capture_service.h"
#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "hwprofile.h"
#include "json.h"
#include "json_writer.h"
#include "kiln_config.h"
#include "process.h"
#include "stamp_service.h"
#include "timeutil.h"

namespace kiln {

static std::string first_line_of(const std::vector<std::string>& argv) {
  try {
    ProcessOptions o;
    o.capture_stdout = true;
    o.quiet = true;
    ProcessResult r = run_process(argv, o);
    std::string out = r.captured_stdout;
    return out.substr(0, out.find('\n'));
  } catch (const KilnError&) {
    return "";
  }
}

// CORPUS/compiler-versions.jsonl: a compiler's `--version` line per binary (its path
// and identity), so that every capture after the first reads it instead of starting
// the compiler (clang --version costs 16 ms of CPU). For rustc, the binary cargo ran
// (build_rustc_version), not `rustc` in PATH, which is rustup's proxy, whose answer
// depends on the directory and the environment.
constexpr const char* kCompilerVersions = "compiler-versions.jsonl";

static std::string cached_compiler_version(const std::string& corpus_dir, const std::string& path,
                                           const std::string& identity) {
  if (identity.empty()) return "";
  std::string text;
  try {
    text = read_file(corpus_dir + "/" + kCompilerVersions);
  } catch (const KilnError&) {
    return "";  // none yet
  }
  simdjson::dom::parser parser;
  std::string found;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) break;  // a torn last line is no entry
    simdjson::dom::element e;
    if (parser.parse(text.data() + at, end - at).get(e) == simdjson::SUCCESS && e.is_object() &&
        get_string_or(e, "path", "") == path && get_string_or(e, "identity", "") == identity)
      found = get_string_or(e, "version", "");
    at = end + 1;
  }
  return found;
}

static void remember_compiler_version(const std::string& corpus_dir, const std::string& path,
                                      const std::string& identity, const std::string& version) {
  if (identity.empty() || version.empty()) return;
  JsonWriter w;
  w.begin_object().field("v", int64_t(1)).field("path", path).field("identity", identity).field("version", version);
  w.end_object();
  try {
    append_line_locked(corpus_dir + "/" + kCompilerVersions, w.str());
  } catch (const KilnError&) {  // a cache: one that cannot be written asks again next time
  }
}

// The first line of `rustc -V` of the rustc that the build's first rustc wrapper ran,
// which it named in the capture's kBuildRustcFile; empty where the build ran no rustc.
// From the corpus's cache where that binary is in it, else asked now, after the build:
// once per toolchain (10 ms of CPU through rustup's proxy, which the driver asked on
// every build while it ran, at a cost to the build on two cores).
static std::string build_rustc_version(const std::string& corpus_dir, const std::string& temp_dir) {
  const std::string noted = temp_dir + "/" + kBuildRustcFile;
  if (!path_exists(noted)) return "";
  std::string rustc;
  try {
    rustc = read_file(noted);
  } catch (const KilnError&) {
    return "";
  }
  if (!rustc.empty() && rustc.back() == '\n') rustc.pop_back();
  if (rustc.find('/') == std::string::npos) rustc = find_program(rustc);
  if (rustc.empty()) return "";
  const std::string identity = file_identity(rustc);
  std::string version = cached_compiler_version(corpus_dir, rustc, identity);
  if (version.empty()) {
    version = first_line_of({rustc, "-V"});
    remember_compiler_version(corpus_dir, rustc, identity, version);
  }
  return version;
}

std::string host_description() {
  struct utsname u {};
  if (::uname(&u) != 0) return "";
  return std::string(u.sysname) + " " + u.release + " " + u.machine;
}

// Cargo profile settings for kiln's profiles, applied to dev and test builds
// through cargo's environment overrides (see kiln-capture(1)).
static void add_profile_environment(const std::string& profile, std::vector<std::string>& env) {
  if (profile.empty() || profile == "release") return;  // release: the project's own release profile
  const char* opt = profile == "fast" ? "1" : "2";
  for (const char* p : {"DEV", "TEST"}) {
    std::string prefix = std::string("CARGO_PROFILE_") + p + "_";
    env.push_back(prefix + "OPT_LEVEL=" + opt);
    env.push_back(prefix + "CODEGEN_UNITS=16");
    env.push_back(prefix + "LTO=false");
    env.push_back(prefix + "DEBUG=0");
  }
}

namespace {

constexpr const char* kLockName = "kiln.lock";

std::string temp_base() {
  const char* base = std::getenv("TMPDIR");
  return base && *base ? base : "/tmp";
}

// The capture's temporary directory, $TMPDIR/kiln-capture-XXXXXX: the wrapper links,
// the wrappers' scratch files, and kiln.lock, held with flock by kiln-capture and,
// through the inherited descriptor, by every process of the build. Whoever can take
// that lock knows that the directory's owners are all gone (kill -9).
class CaptureTempDir {
 public:
  CaptureTempDir() : path_(absolute_path(make_temp_dir("kiln-capture"))) {
    // Locked under another name, then renamed: a sweeping capture never sees the
    // lock file unlocked.
    std::string fresh = path_ + "/" + kLockName + ".new";
    fd_ = ::open(fresh.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
    if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0 || ::rename(fresh.c_str(), (path_ + "/" + kLockName).c_str()) != 0) {
      int err = errno;
      remove_tree(path_);
      if (fd_ >= 0) ::close(fd_);
      throw KilnError(kExitIo, path_, "cannot create the capture's lock file: " + errno_reason(err));
    }
  }
  ~CaptureTempDir() {
    remove_tree(path_);
    ::close(fd_);
  }
  CaptureTempDir(const CaptureTempDir&) = delete;
  CaptureTempDir& operator=(const CaptureTempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// kiln's own temporary directories: PREFIX-XXXXXX as mkdtemp names them.
bool is_kiln_temp_name(const std::string& name) {
  for (const char* prefix : {"kiln-capture-", "kiln-combine-", "kiln-cmd-"}) {
    size_t n = std::strlen(prefix);
    if (name.size() == n + 6 && name.compare(0, n, prefix) == 0 &&
        name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", n) ==
            std::string::npos)
      return true;
  }
  return false;
}

// A capture's directory with no lock in it, left by a capture killed while it made the
// directory or removed it: empty, or holding only the lock file it had not yet
// renamed. Removed once a minute old, when no live capture can be between its
// mkdtemp and its lock (microseconds apart); anything else in it keeps it.
void remove_if_lockless(const std::string& dir, const struct stat& st) {
  if (std::time(nullptr) - st.st_mtime < 60) return;
  const std::string fresh = dir + "/" + kLockName + ".new";
  struct stat f {};
  if (::lstat(fresh.c_str(), &f) == 0 && S_ISREG(f.st_mode) && f.st_size == 0) ::unlink(fresh.c_str());
  ::rmdir(dir.c_str());  // fails, and leaves it, unless it is empty
}

// Removes the temporary directories that a capture killed with SIGKILL left in TMPDIR:
// only kiln's, owned by this user, holding a kiln.lock that nobody holds any more.
// A directory without that lock file is left, unless remove_if_lockless finds it empty.
void remove_stale_temp_dirs() {
  std::string base = temp_base();
  DIR* d = ::opendir(base.c_str());
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (!is_kiln_temp_name(name)) continue;
    std::string dir = base + "/" + name;
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
    int fd = ::open((dir + "/" + kLockName).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      if (errno == ENOENT && name.rfind("kiln-capture-", 0) == 0) remove_if_lockless(dir, st);
      continue;
    }
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      remove_tree(dir);  // still holding the lock, so no new owner can appear meanwhile
    }
    ::close(fd);
  }
  ::closedir(d);
}

// An existing corpus this user cannot write would let the whole build run and then
// fail every record: refuse it before the build starts.
void check_corpus_writable(const std::string& corpus_dir) {
  auto check = [](const std::string& path) {
    if (::faccessat(AT_FDCWD, path.c_str(), W_OK, AT_EACCESS) != 0)
      throw KilnError(kExitIo, path, "cannot write to the corpus: " + errno_reason(errno));
  };
  for (const std::string& dir : {corpus_dir, corpus_dir + "/blobs"}) {
    if (!is_directory(dir)) continue;
    check(dir);
    DIR* d = ::opendir(dir.c_str());
    if (!d) throw KilnError(kExitIo, dir, "cannot read the corpus: " + errno_reason(errno));
    std::vector<std::string> entries;
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") entries.push_back(dir + "/" + name);
    }
    ::closedir(d);
    for (const auto& path : entries) {
      bool jsonl = path.size() > 6 && path.compare(path.size() - 6, 6, ".jsonl") == 0;
      bool blob_dir = dir != corpus_dir && is_directory(path);
      if (jsonl || blob_dir || basename_of(path) == kCorpusManifestName) check(path);
    }
  }
}

// Make, Ninja and the cc crate split CC on blanks, and make's recipes go through a
// shell, so CC can only be an absolute path when that path has no character either
// would interpret.
bool safe_in_command_line(const std::string& path) {
  return path.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./+,@%=") ==
      std::string::npos;
}

}  // namespace

// The build's stamp service (--device), named in its environment; without --device,
// none: a build's service is its own (kiln-capture(1)), so a build inside another's,
// or a variable left in the shell, must not send its modules to one it did not ask for.
static std::unique_ptr<StampServiceProcess> start_build_service(const CaptureOptions& options,
                                                                const std::string& link_dir,
                                                                const std::string& corpus_dir, ProcessOptions& run) {
  if (options.device.empty()) {
    run.unset_env.push_back(kEnvStampService);
    return nullptr;
  }
  const std::string socket = link_dir + "/stamp.sock";
  auto service = std::make_unique<StampServiceProcess>(options.device, socket, corpus_dir + "/service.jsonl");
  run.set_env.push_back(std::string(kEnvStampService) + "=" + socket);
  return service;
}

// The environment that installs the wrappers. CC and CXX name the links by their
// absolute paths where those are safe on a command line, else by their names, with the
// link directory first in PATH (a PATH entry may hold anything but ':').
static std::vector<std::string> wrapper_environment(const CaptureOptions& options, const std::string& corpus_dir,
                                                    const std::string& link_dir, const std::string& cc_dir,
                                                    const std::string& real_cc, const std::string& real_cxx,
                                                    const std::string& rustc_wrapper) {
  std::vector<std::string> env = {
      std::string("RUSTC_WRAPPER=") + rustc_wrapper,
      std::string(kEnvRole) + "=rustc",
      std::string(kEnvCorpus) + "=" + corpus_dir,
      std::string(kEnvBackend) + "=" + options.backend,
      std::string(kEnvProfile) + "=" + (options.profile.empty() ? "fast" : options.profile),
      std::string(kEnvFallback) + "=" + (options.fallback ? "1" : "0"),
      std::string(kEnvRoute) + "=" + options.route,
      std::string("KILN_VERIFY=") + (options.verify ? "1" : "0"),
      std::string(kEnvRealCc) + "=" + real_cc,
      std::string(kEnvRealCxx) + "=" + real_cxx,
      std::string(kEnvTmpdir) + "=" + link_dir,
  };
  if (safe_in_command_line(cc_dir)) {
    env.push_back("CC=" + cc_dir + "/kiln-cc");
    env.push_back("CXX=" + cc_dir + "/kiln-c++");
  } else if (cc_dir.find(':') == std::string::npos) {
    const char* path = std::getenv("PATH");
    env.push_back("PATH=" + cc_dir + (path && *path ? std::string(":") + path : std::string()));
    env.push_back("CC=kiln-cc");
    env.push_back("CXX=kiln-c++");
  } else {
    throw KilnError(kExitIo, cc_dir,
                    "cannot hold the compiler wrappers: its path contains ':' and characters a build splits CC on");
  }
  add_profile_environment(options.profile, env);
  return env;
}

// The object cache's bound in bytes: KILN_OBJECT_CACHE_MB (MiB, a whole number; 0 keeps
// no object past the build), 4096 when unset. Every miss adds an object, so without a
// bound a corpus that sees many rebuilds would grow until the disk is full.
static uint64_t object_cache_limit() {
  const char* env = std::getenv("KILN_OBJECT_CACHE_MB");
  if (!env || !*env) return uint64_t(4096) << 20;
  char* end = nullptr;
  errno = 0;
  unsigned long long mib = std::strtoull(env, &end, 10);
  if (*end != '\0' || errno != 0 || !std::isdigit(static_cast<unsigned char>(env[0])) || mib > (uint64_t(1) << 40))
    throw KilnError(kExitUsage, "KILN_OBJECT_CACHE_MB", std::string("'") + env + "': expected a whole number of MiB");
  return uint64_t(mib) << 20;
}

// Stops the build's stamp service and says how it ended: a line on a terminal, and a
// warning wherever it died before the build ended (its modules after that ran on the CPU,
// as their receipts say).
static void report_service_end(StampServiceProcess& service, const std::string& corpus_dir) {
  std::string how = service.stop();
  if (how != "stopped")
    std::fprintf(stderr, "kiln-capture: warning: the stamp service on %s %s; the modules it did not take were emitted "
                 "on the CPU (see their receipts)\n", service.device_name().c_str(), how.c_str());
  else if (::isatty(2))
    std::fprintf(stderr, "kiln-capture: the stamp service on %s stopped; its batches: %s/service.jsonl\n",
                 service.device_name().c_str(), corpus_dir.c_str());
}

std::string find_rustc_plugin() {
  const char* env = std::getenv(kEnvRustcPlugin);
  std::string path;
  if (env && *env) {
    path = env;
  } else {
    std::string self = self_executable();
    std::string dir = self.substr(0, self.find_last_of('/'));
    path = dir.substr(0, dir.find_last_of('/') + 1) + "lib/kiln-rustc-plugin.so";
  }
  if (::access(path.c_str(), R_OK) != 0)
    throw KilnError(kExitMissingTool, path, "kiln's plugin for rustc is not there (build it, or set " +
                                                std::string(kEnvRustcPlugin) + ")");
  return absolute_path(path);
}

// A program of kiln's beside this one; `what` says what it is for when it is missing.
static std::string sibling_program(const char* name, const std::string& what) {
  std::string self = self_executable();
  std::string path = self.substr(0, self.find_last_of('/') + 1) + name;
  if (::access(path.c_str(), X_OK) != 0) throw KilnError(kExitMissingTool, path, what + " is not there (build it)");
  return path;
}

// The plugin route's rustc wrapper: it links no LLVM, and cargo starts it for every
// rustc call.
static std::string find_rustc_wrapper() {
  return sibling_program("kiln-rustc-wrapper", "kiln's rustc wrapper for --route plugin");
}

// The directory of kiln-capture-llvm when kiln-cc and kiln-c++ beside it are links to
// it (as the build and the installation make them), else "".
static std::string installed_cc_links(const std::string& llvm_half) {
  const std::string dir = llvm_half.substr(0, llvm_half.find_last_of('/'));
  char* target = ::realpath(llvm_half.c_str(), nullptr);
  if (!target) return "";
  const std::string real = target;
  std::free(target);
  for (const char* name : {"kiln-cc", "kiln-c++"}) {
    char* link = ::realpath((dir + "/" + name).c_str(), nullptr);
    const bool same = link && real == link;
    std::free(link);
    if (!same) return "";
  }
  return dir;
}

std::string find_capture_llvm() {
  return sibling_program(kCaptureLlvmName, "kiln-capture's half that links LLVM (its compiler wrappers)");
}

namespace {

// The manifest describes the latest build that added to the corpus; the object cache is
// bounded after it.
void record_build(const CaptureOptions& options, const std::string& corpus_dir, const CorpusManifest& m,
                  int build_exit_code, double build_seconds, uint64_t cache_limit) {
  Corpus corpus = Corpus::open(corpus_dir);
  CorpusManifest& cm = corpus.manifest();
  cm.kiln_version = m.kiln_version;
  cm.llvm_version = m.llvm_version;
  if (!m.rustc_version.empty()) cm.rustc_version = m.rustc_version;  // else no rustc ran: the last that did
  cm.clang_version = m.clang_version;
  cm.host = m.host;
  cm.hardware_json = m.hardware_json;
  cm.origin = "capture";
  cm.build_command = options.command;
  cm.build_cwd = m.build_cwd;
  cm.build_seconds = build_seconds;
  cm.build_exit_code = build_exit_code;
  cm.backend = options.backend;
  cm.profile = options.profile;
  corpus.save_manifest();
  corpus.prune_objects(cache_limit);
}

// The size of the corpus's invocations file (0 when there is none): every compiler call
// kiln's wrappers saw appends a line to it.
off_t invocations_size(const std::string& corpus_dir) {
  struct stat st {};
  return ::stat((corpus_dir + "/" + kInvocationsFileName).c_str(), &st) == 0 ? st.st_size : 0;
}

// What the user should know once the build is done. Always: a successful build that sent no
// compiler call through kiln (a compiler the Makefile names itself, one CMake cached
// in an earlier configure, nothing left to rebuild) captured nothing, which a scripted
// build would otherwise never learn. At a terminal, the summary: the corpus's
// invocations file grows with every build, and reading it back is time a scripted
// build should not wait for.
void tell_about_capture(const CaptureOptions& options, const std::string& corpus_dir, off_t invocations_before,
                        int build_exit_code) {
  if (build_exit_code == 0 && invocations_size(corpus_dir) == invocations_before)
    std::fprintf(stderr,
                 "kiln-capture: warning: no compiler call went through kiln in this build: nothing was "
                 "captured (was everything up to date, or does the build name its compiler itself instead "
                 "of $CC, or use one CMake cached before?)\n");
  if (!::isatty(2)) return;
  Corpus corpus = Corpus::open(corpus_dir);
  size_t captured = 0, passed = 0, fell_back = 0, failed = 0;
  for (const auto& inv : corpus.invocations()) {
    if (inv.action == "captured") ++captured;
    else if (inv.action == "passthrough") ++passed;
    else if (inv.action == "fallback") ++fell_back;
    else if (inv.action == "failed") ++failed;
  }
  std::fprintf(
      stderr,
      "kiln-capture: %s: %zu modules; invocations: %zu captured, %zu passed through, %zu fell back, %zu failed\n",
      corpus_dir.c_str(), corpus.modules().size(), captured, passed, fell_back, failed);
  if (options.backend != "native")
    std::fprintf(stderr,
                 "kiln-capture: note: the build's outputs hold objects from --backend %s; a later plain build "
                 "reuses them where nothing changed (cargo clean, or a clean build, to rebuild them natively)\n",
                 options.backend.c_str());
}

// Wrappers the user set for rustc that this build's RUSTC_WRAPPER (kiln's) takes the
// place of: cargo gives RUSTC_WRAPPER precedence over the others.
void warn_of_replaced_wrappers() {
  for (const char* name : {"RUSTC_WRAPPER", "CARGO_BUILD_RUSTC_WRAPPER"})
    if (const char* existing = std::getenv(name); existing && *existing)
      std::fprintf(stderr, "kiln-capture: warning: replacing %s=%s for this build\n", name, existing);
}

// A workspace wrapper set for the build: cargo runs the workspace's own crates through
// it, so the rustc wrapper passes them through uncaptured (read_wrapper_line).
void warn_of_workspace_wrapper() {
  for (const char* name : {"RUSTC_WORKSPACE_WRAPPER", "CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER"})
    if (const char* wrapper = std::getenv(name); wrapper && *wrapper)
      std::fprintf(stderr,
                   "kiln-capture: warning: %s=%s is set: the workspace's own crates run through it, "
                   "uncaptured (passed through)\n",
                   name, wrapper);
}

// C and C++ compile with kiln's clang (its bitcode is what the corpus keeps): a CC or
// CXX the user set (gcc, a cross compiler, ccache in front) is not run, which a build
// that depends on it (gcc-only flags, another target) shows only as odd failures.
void warn_of_replaced_compilers(const std::string& real_cc, const std::string& real_cxx) {
  for (auto [name, ours] : {std::pair{"CC", &real_cc}, std::pair{"CXX", &real_cxx}})
    if (const char* theirs = std::getenv(name); theirs && *theirs && find_program(theirs) != *ours)
      std::fprintf(stderr, "kiln-capture: warning: %s=%s is not run: C and C++ compile with %s in this build\n", name,
                   theirs, ours->c_str());
}

}  // namespace

int run_capture(const CaptureOptions& options) {
  // Everything that can be checked is checked before anything is created.
  if (options.command.empty()) throw KilnError(kExitUsage, "", "no build command given after --");
  if (!options.device.empty() && options.backend != "stamp")
    throw KilnError(kExitUsage, "--device", "runs stamp's stages: it needs --backend stamp");
  std::string plugin, rustc_wrapper;
  if (options.route == "plugin") {
    if (options.backend != "stamp") throw KilnError(kExitUsage, "--route", "plugin runs stamp inside rustc: it needs --backend stamp");
    if (!options.device.empty()) throw KilnError(kExitUsage, "--route", "plugin runs stamp's stages in rustc, not in a --device service");
    plugin = find_rustc_plugin();
    rustc_wrapper = find_rustc_wrapper();
  } else if (options.route != "bitcode") {
    throw KilnError(kExitUsage, "--route", "'" + options.route + "': expected bitcode or plugin");
  }
  // The compiler wrappers that link LLVM (kiln-cc and kiln-c++ on every route, rustc's
  // on the bitcode route) are kiln-capture-llvm; this driver links none, so that it
  // starts at once.
  const std::string llvm_half = find_capture_llvm();
  if (rustc_wrapper.empty()) rustc_wrapper = llvm_half;
  const uint64_t cache_limit = object_cache_limit();
  if (options.backend != "native") {
    parse_profile(options.profile.empty() ? "fast" : options.profile);
    check_backend_spec(options.backend);
  }
  if (find_program(options.command[0]).empty())
    throw KilnError(kExitMissingTool, options.command[0], "program not found in PATH");
  std::string corpus_dir = absolute_path(options.corpus_dir);
  CorpusManifest m;
  m.kiln_version = KILN_VERSION;
  m.llvm_version = KILN_LLVM_VERSION;
  std::string real_cc = find_program("clang-22");
  if (real_cc.empty()) real_cc = std::string(KILN_LLVM_BINDIR) + "/clang";
  std::string real_cxx = find_program("clang++-22");
  if (real_cxx.empty()) real_cxx = std::string(KILN_LLVM_BINDIR) + "/clang++";
  // The C compiler's version and the hardware profile are found while the build runs
  // and written to the manifest after it (rustc's is the one the build ran, asked after
  // it, build_rustc_version): `rustc -V` and `clang --version` took 0.3 s before the
  // build could start, a quarter of an incremental rebuild, and the profile asks the
  // CUDA runtime for devices (its start alone is 0.1 s and more where a GPU is). One
  // after the other on one thread, which
  // (with the processes it starts) runs only when the build leaves a core idle
  // (SCHED_IDLE): the queries cost 40 ms of CPU, which on two cores came out of the
  // build's own. (Every wait in kiln is for its own pid, so the queries and the build
  // do not reap each other's children.)
  struct BuildFacts {
    std::string clang_version, hardware_json;
    bool clang_asked = false;  // not from the corpus's cache: remember it there
  };
  const std::string cc_identity = file_identity(real_cc);
  std::future<BuildFacts> facts = std::async(std::launch::async, [real_cc, corpus_dir, cc_identity] {
    BuildFacts f;
    sched_param idle{};
    ::sched_setscheduler(0, SCHED_IDLE, &idle);  // this thread; a failure leaves it as it was
    try {
      f.hardware_json = hardware_profile_json();
    } catch (const std::exception&) {  // a profile is a description, not worth failing a build for
    }
    f.clang_version = cached_compiler_version(corpus_dir, real_cc, cc_identity);
    if (f.clang_version.empty()) f.clang_version = first_line_of({real_cc, "--version"}), f.clang_asked = true;
    return f;
  });
  m.host = host_description();
  m.build_command = options.command;
  m.build_cwd = current_directory();
  m.profile = options.profile;
  m.backend = options.backend;
  m.origin = "capture";
  // The wrappers: cargo calls RUSTC_WRAPPER with rustc's path first; make, ninja and
  // cmake call CC and CXX, which are links to kiln-capture-llvm named kiln-cc and
  // kiln-c++; rustc on the plugin route links through kiln-linker (capture_plugin.cpp),
  // a link to kiln-rustc-wrapper.
  // Made before the corpus, as they go again when something fails.
  remove_stale_temp_dirs();
  CaptureTempDir temp;
  const std::string& link_dir = temp.path();
  std::string cc_dir = installed_cc_links(llvm_half);
  // An installation directory a build cannot name in CC (a blank in its path) would go
  // first in PATH, and every program beside kiln with it: this capture's own links then.
  if (!safe_in_command_line(cc_dir)) cc_dir.clear();
  if (cc_dir.empty()) {  // not installed beside it: links of this capture's own
    cc_dir = link_dir;
    if (::symlink(llvm_half.c_str(), (link_dir + "/kiln-cc").c_str()) != 0 ||
        ::symlink(llvm_half.c_str(), (link_dir + "/kiln-c++").c_str()) != 0)
      throw KilnError(kExitIo, link_dir, "cannot create compiler wrapper links: " + errno_reason(errno));
  }
  if (::symlink(rustc_wrapper.c_str(), (link_dir + "/" + kLinkerWrapperName).c_str()) != 0)
    throw KilnError(kExitIo, link_dir, "cannot create compiler wrapper links: " + errno_reason(errno));
  ProcessOptions run;
  run.set_env = wrapper_environment(options, corpus_dir, link_dir, cc_dir, real_cc, real_cxx, rustc_wrapper);
  if (!plugin.empty()) run.set_env.push_back(std::string(kEnvRustcPlugin) + "=" + plugin);
  // The service before the corpus: a device that cannot be opened leaves nothing behind.
  std::unique_ptr<StampServiceProcess> service = start_build_service(options, link_dir, corpus_dir, run);
  Corpus::create_or_open(corpus_dir, m);
  check_corpus_writable(corpus_dir);
  // A capture killed before a rename left its temporary file; sweep them while the
  // build runs (only files whose writer is gone; a failure to remove one is no error).
  std::future<size_t> swept = std::async(std::launch::async, [corpus_dir] {
    try {
      return Corpus::open(corpus_dir).remove_orphaned_temp_files();
    } catch (const KilnError&) {
      return size_t(0);
    }
  });
  warn_of_replaced_wrappers();
  warn_of_replaced_compilers(real_cc, real_cxx);
  warn_of_workspace_wrapper();
  const off_t invocations_before = invocations_size(corpus_dir);

  Stopwatch clock;
  int received_signal = 0;
  ProcessResult result = run_build_group(options.command, run, received_signal);
  if (service) report_service_end(*service, corpus_dir);
  const BuildFacts found = facts.get();
  m.rustc_version = build_rustc_version(corpus_dir, link_dir);
  m.clang_version = found.clang_version;
  m.hardware_json = found.hardware_json;
  if (found.clang_asked) remember_compiler_version(corpus_dir, real_cc, cc_identity, found.clang_version);
  swept.get();
  // Stopped by a signal: the build has been stopped with it; the temporary directory
  // goes on return, and the status says which signal.
  const int status = received_signal ? 128 + received_signal : result.exit_code;
  try {
    record_build(options, corpus_dir, m, result.exit_code, clock.seconds(), cache_limit);
    if (!received_signal) tell_about_capture(options, corpus_dir, invocations_before, result.exit_code);
  } catch (const KilnError& e) {
    // The build's own failure is what its user needs to see first; kiln's (a corpus
    // the build removed, a full disk) is the status only when the build succeeded.
    if (status == 0) throw;
    std::fprintf(stderr, "kiln-capture: warning: %s; the build's status %d is kiln-capture's\n", e.what(), status);
  }
  return status;
}

}  // namespace kiln
