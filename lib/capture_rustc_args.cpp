// What the rustc wrapper reads from rustc's command line, and the decisions it takes
// from it; shared by both wrapper programs (kiln-capture on the bitcode route,
// kiln-rustc-wrapper on the plugin route). No LLVM here.

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "capture.h"
#include "capture_args.h"
#include "capture_rustc.h"
#include "error.h"
#include "fs.h"
#include "process.h"
#include "timeutil.h"

namespace kiln {

namespace {

// rustc options whose value is the next argument when not attached.
bool rustc_takes_value(const std::string& a) {
  static const char* const kFlags[] = {"--crate-name",
                                       "--edition",
                                       "--error-format",
                                       "--json",
                                       "--crate-type",
                                       "--emit",
                                       "-C",
                                       "--codegen",
                                       "--cfg",
                                       "--check-cfg",
                                       "-L",
                                       "-l",
                                       "--extern",
                                       "--out-dir",
                                       "-o",
                                       "--target",
                                       "--cap-lints",
                                       "--explain",
                                       "-A",
                                       "-W",
                                       "-D",
                                       "-F",
                                       "--force-warn",
                                       "--print",
                                       "--sysroot",
                                       "-Z",
                                       "--remap-path-prefix",
                                       "--diagnostic-width",
                                       "--env-set",
                                       "--allow",
                                       "--warn",
                                       "--deny",
                                       "--forbid"};
  for (const char* f : kFlags)
    if (a == f) return true;
  return false;
}

// Value of "--flag X" or "--flag=X" at position i (advancing i past a separate value).
bool option_value(const std::vector<std::string>& args, size_t& i, const std::string& flag, std::string& value) {
  const std::string& a = args[i];
  if (a == flag && i + 1 < args.size()) {
    value = args[++i];
    return true;
  }
  if (a.size() > flag.size() && a.compare(0, flag.size(), flag) == 0 && a[flag.size()] == '=') {
    value = a.substr(flag.size() + 1);
    return true;
  }
  return false;
}

// Whether `--print KIND[=PATH]` makes rustc print and stop before compiling: every kind
// but native-static-libs and link-args, which rustc prints as it links and which stop
// nothing (rustc_driver_impl's print_crate_info returns Compilation::Continue when
// every --print is one of those two).
bool print_stops_rustc(const std::string& value) {
  const std::string kind = value.substr(0, value.find('='));
  return kind != "native-static-libs" && kind != "link-args";
}

int debuginfo_level(const std::string& v) {
  if (v == "0" || v == "none" || v == "false" || v == "n" || v == "no" || v == "off") return 0;
  if (v == "1" || v == "limited" || v.rfind("line-", 0) == 0) return 1;
  return 2;
}

}  // namespace

RustcCall parse_rustc_args(const std::vector<std::string>& args) {
  RustcCall c;
  c.args = args;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string v;
    if (a == "-vV" || a == "-V" || a == "--version") c.version = true;
    if (a.size() > 1 && a[0] == '@') {
      c.argfile = true;
      continue;
    }
    if (option_value(args, i, "--crate-name", v)) c.crate_name = v;
    else if (option_value(args, i, "--out-dir", v)) c.out_dir = v;
    else if (option_value(args, i, "--emit", v)) c.emit += (c.emit.empty() ? "" : ",") + v;
    else if (option_value(args, i, "--crate-type", v)) c.crate_types.push_back(v);
    else if (option_value(args, i, "--print", v)) c.print_query |= print_stops_rustc(v);
    else if (a == "-C" || a == "--codegen" || (a.rfind("-C", 0) == 0 && a.size() > 2)) {
      std::string setting = (a == "-C" || a == "--codegen") ? (i + 1 < args.size() ? args[++i] : "") : a.substr(2);
      auto eq = setting.find('=');
      std::string key = setting.substr(0, eq), val = eq == std::string::npos ? "" : setting.substr(eq + 1);
      if (key == "extra-filename") c.extra_filename = val;
      else if (key == "symbol-mangling-version") c.mangling_given = true;
      else if (key == "opt-level") c.opt_level = val;
      else if (key == "debuginfo") c.debuginfo = debuginfo_level(val);
    } else if (a == "-g") {
      c.debuginfo = 2;
    } else if (a == "-O") {
      c.opt_level = "3";  // rustc's -O
    } else if (rustc_takes_value(a)) {
      ++i;
    } else if (!a.empty() && (a[0] != '-' || a == "-") && c.input.empty()) {
      c.input = a;
      c.input_index = i;
    }
  }
  return c;
}

std::vector<std::string> plain_mangling_args(const RustcCall& c, bool nightly) {
  if (c.mangling_given || nightly) return {};
  return {"-Zunstable-options", "-Csymbol-mangling-version=legacy"};
}

bool bootstrap_gives_nightly(const char* value, const std::string& crate_name) {
  if (!value) return false;
  const std::string v = value;
  if (v == "1") return true;
  for (size_t at = 0; at <= v.size();) {
    const size_t comma = std::min(v.find(',', at), v.size());
    if (!crate_name.empty() && v.compare(at, comma - at, crate_name) == 0 && comma - at == crate_name.size())
      return true;
    at = comma + 1;
  }
  return false;
}

bool rustc_program_name(const std::string& program) {
  // An option or an @FILE (cargo's argument file) is rustc's argument, whatever its name.
  if (program.empty() || program[0] == '-' || program[0] == '@') return false;
  std::string name = basename_of(program);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, ".exe") == 0) name.resize(name.size() - 4);
  static const std::string kRustc = "rustc";
  if (name == kRustc) return true;
  // rustc-1.85 (a versioned install); not rustc-wrap.sh, a wrapper's name.
  if (name.size() > kRustc.size() + 1 && name.compare(0, kRustc.size() + 1, kRustc + "-") == 0 &&
      std::isdigit(static_cast<unsigned char>(name[kRustc.size() + 1])))
    return true;
  return name.size() > kRustc.size() + 1 &&
      name.compare(name.size() - kRustc.size() - 1, kRustc.size() + 1, "-" + kRustc) == 0;
}

CargoWrapperLine read_wrapper_line(const std::vector<std::string>& line) {
  CargoWrapperLine out;
  const bool through_workspace_wrapper = line.size() >= 2 && rustc_program_name(line[1]);
  const size_t rustc_at = through_workspace_wrapper ? 1 : 0;
  if (through_workspace_wrapper) out.workspace_wrapper = line[0];
  out.rustc = line.at(rustc_at);
  out.args.assign(line.begin() + static_cast<std::ptrdiff_t>(rustc_at) + 1, line.end());
  return out;
}

std::string workspace_wrapper_reason(const CargoWrapperLine& line) {
  if (line.workspace_wrapper.empty()) return "";
  return "run through RUSTC_WORKSPACE_WRAPPER " + line.workspace_wrapper;
}

std::string passthrough_reason(const RustcCall& c, const std::string& route) {
  if (c.version) return "version query";
  // Its crate, output and settings may be in the file: say so, not "no --out-dir".
  if (c.argfile) return "arguments in an @file, which kiln does not read";
  if (c.print_query) return "--print query";
  if (c.input == "-") return "probe compiled from standard input";
  if (c.input.empty()) return "no input file";
  if (route != "plugin" && c.crate_name.rfind("build_script_", 0) == 0) return "build script";
  for (const auto& t : c.crate_types)
    if (route != "plugin" && t.find("proc-macro") != std::string::npos) return "proc-macro (loaded by rustc itself)";
  if (c.emit.find("link") == std::string::npos && !c.emit.empty()) return "no object output (--emit=" + c.emit + ")";
  if (c.out_dir.empty()) return "no --out-dir";
  return "";
}

namespace {

// `args` less -C lto, linker-plugin-lto and embed-bitcode, then -Clto=off.
std::vector<std::string> without_lto(const std::vector<std::string>& args) {
  std::vector<std::string> first;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string setting = a == "-C" && i + 1 < args.size() ? args[i + 1] : (a.rfind("-C", 0) == 0 ? a.substr(2) : "");
    bool drop = setting.rfind("lto", 0) == 0 ||
        setting.rfind("linker-plugin-lto", 0) == 0 || setting.rfind("embed-bitcode", 0) == 0;
    if (drop) {
      if (a == "-C") ++i;
      continue;
    }
    first.push_back(a);
  }
  first.push_back("-Clto=off");
  return first;
}

}  // namespace

std::vector<std::string> bitcode_step_args(const std::vector<std::string>& args, bool stop_before_link) {
  std::vector<std::string> first = without_lto(args);
  first.insert(first.end() - 1, "-Clinker-plugin-lto=yes");
  if (stop_before_link) first.push_back("-Zno-link");
  return first;
}

std::vector<std::string> link_step_args(const std::vector<std::string>& args) { return without_lto(args); }

namespace {

// Each crate type of the invocation (--crate-type a,b and repeated --crate-type).
std::vector<std::string> crate_type_list(const RustcCall& c) {
  std::vector<std::string> out;
  for (const std::string& types : c.crate_types)
    for (size_t at = 0; at <= types.size();) {
      const size_t comma = std::min(types.find(',', at), types.size());
      out.push_back(types.substr(at, comma - at));
      at = comma + 1;
    }
  return out;
}

}  // namespace

namespace {

// Whether a linker's name is a C compiler driver's (cc, gcc, clang, versioned or with
// a target prefix), from which rustc infers the flavor it gives kiln-linker too.
bool cc_driver_name(std::string stem) {
  stem = stem.substr(stem.find_last_of('/') + 1);
  for (const char* name : {"cc", "gcc", "clang", "c++", "g++", "clang++"}) {
    const std::string n = name;
    if (stem == n || stem.rfind(n + "-", 0) == 0) return true;  // clang-22, gcc-12
    if (stem.size() > n.size() && stem.compare(stem.size() - n.size() - 1, n.size() + 1, "-" + n) == 0) return true;
  }
  return false;
}

}  // namespace

std::string linker_obstacle(const RustcCall& c) {
  std::string linker, target;
  bool flavor = false;
  for (size_t i = 0; i < c.args.size(); ++i) {
    bool separate = false;
    const std::string setting = codegen_setting(c.args, i, separate);
    if (setting.rfind("linker=", 0) == 0) linker = setting.substr(7);
    flavor |= setting.rfind("linker-flavor=", 0) == 0;
    std::string v;
    if (option_value(c.args, i, "--target", v)) target = v;
    i += separate;
  }
  if (flavor) return "";  // rustc's flavor is the one given, whatever kiln-linker is called
  if (!linker.empty() && !cc_driver_name(linker))
    return "-C linker=" + linker + " (rustc takes its flavor from its name, which kiln-linker's hides)";
  if (linker.empty() && !target.empty() && target != "x86_64-unknown-linux-gnu")
    return "--target " + target + " without -C linker (its default linker may not be cc)";
  return "";
}

std::string plugin_obstacle(const RustcCall& c) {
  bool embed_given = false;
  const std::vector<std::string>& args = c.args;
  for (size_t i = 0; i < args.size(); ++i) {
    bool separate = false;
    const std::string setting = codegen_setting(args, i, separate);
    const size_t eq = setting.find('=');
    const std::string key = setting.substr(0, eq), value = eq == std::string::npos ? "" : setting.substr(eq + 1);
    // Both are on without a value, or with any but rustc's spellings of off (for
    // linker-plugin-lto, a plugin's path too).
    const bool on = value != "no" && value != "n" && value != "off" && value != "false";
    if ((key == "linker-plugin-lto" || key == "embed-bitcode") && on)
      return "-C " + setting + " (bitcode for a later LTO)";
    // Given off, or LTO given off (a profile's lto = "off": no later LTO reads it).
    embed_given |= key == "embed-bitcode" || (key == "lto" && !on && !value.empty());
    i += separate;
  }
  const std::vector<std::string> types = crate_type_list(c);
  bool archive = false, rlib = false, other = false;
  for (const std::string& t : types) {
    rlib |= t == "lib" || t == "rlib";
    archive |= t == "lib" || t == "rlib" || t == "staticlib";
    other |= t != "lib" && t != "rlib";
  }
  // rustc's own default: an rlib's objects keep their bitcode (cargo says
  // embed-bitcode=no wherever no LTO of a later crate reads it).
  const bool links = c.emit.empty() || c.emit.find("link") != std::string::npos;
  if (rlib && links && !embed_given) return "no -C embed-bitcode=no (an rlib's objects keep bitcode for a later LTO)";
  // A crate rustc links goes through kiln-linker, whose name hides the linker's flavor.
  const std::string rewrite_why = rlib_rewrite_obstacle(c);
  if (!rewrite_why.empty())
    if (std::string why = linker_obstacle(c); !why.empty()) return why;
  // An archive rustc writes that the wrapper cannot take the carriers out of (a
  // staticlib, or an rlib beside another crate type or at a path of its own): its
  // members would carry stamp's objects where a linker finds only their aliases.
  if (archive && (other || !rewrite_why.empty())) {
    std::string joined;
    for (const std::string& t : types) joined += (joined.empty() ? "" : ",") + t;
    return "an archive kiln cannot place stamp's objects in (crate types " + joined +
        (other ? "" : "; " + rewrite_why) + ")";
  }
  return "";
}

std::string rlib_rewrite_obstacle(const RustcCall& c) {
  if (c.crate_types.empty()) return "no --crate-type (a binary)";
  for (const std::string& type : crate_type_list(c))
    if (type != "lib" && type != "rlib") return "crate type " + type;
  if (c.emit.find("link=") != std::string::npos) return "an explicit --emit link path";
  for (const std::string& a : c.args)
    if (a.rfind("-o", 0) == 0) return "an explicit -o output";  // -o PATH or -oPATH
  return "";
}

std::string codegen_setting(const std::vector<std::string>& args, size_t i, bool& separate) {
  const std::string& a = args[i];
  separate = (a == "-C" || a == "--codegen") && i + 1 < args.size();
  if (separate) return args[i + 1];
  if (a.rfind("--codegen=", 0) == 0) return a.substr(10);
  return a.rfind("-C", 0) == 0 ? a.substr(2) : "";
}

std::string unit_cgu(const std::string& name, const std::string& prefix, const std::string& suffix) {
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0) return "";
  if (name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return "";
  std::string middle = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  return middle.find(".no-opt") == std::string::npos ? middle : "";
}

double g_startup_seconds = 0;
ProcessOptions g_children;

// Writes `rustc` to the capture's kBuildRustcFile, unless a wrapper of this build did
// first (one create a call; a failure is no error: the manifest then lacks a version).
static void note_build_rustc(const std::string& rustc) {
  const char* dir = std::getenv(kEnvTmpdir);
  if (!dir || !*dir) return;
  const int fd = ::open((std::string(dir) + "/" + kBuildRustcFile).c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;
  const std::string line = rustc + "\n";
  [[maybe_unused]] const ssize_t written = ::write(fd, line.data(), line.size());
  ::close(fd);
}

RustcWrapperCall start_rustc_wrapper(int argc, char** argv) {
  g_startup_seconds = process_cpu_seconds();
  if (argc < 2) throw KilnError(kExitUsage, "", "the rustc wrapper expects the rustc path and its arguments");
  CargoWrapperLine line = read_wrapper_line(std::vector<std::string>(argv + 1, argv + argc));
  RustcWrapperCall w;
  w.rustc = line.rustc;
  note_build_rustc(w.rustc);
  std::vector<std::string>& args = line.args;
  w.settings = WrapperSettings::from_environment();
  w.call = parse_rustc_args(args);
  w.id = new_invocation_id(args);
  // A workspace wrapper (clippy-driver, ...) is itself what runs rustc: whatever the
  // crate, the call runs as cargo asked, through it.
  std::string reason = workspace_wrapper_reason(line);
  if (reason.empty()) reason = passthrough_reason(w.call, w.settings.route);
  if (!reason.empty()) {
    record_invocation(w.settings, "rustc", w.id, "passthrough", reason, args, 0, 0);
    args.insert(args.begin(), w.rustc);
    if (!line.workspace_wrapper.empty()) args.insert(args.begin(), line.workspace_wrapper);
    exec_process(args);
  }
  g_children = use_capture_tmpdir();
  return w;
}

std::string rustup_channel(const std::string& rustc) {
  static const std::string kTail = "/bin/rustc", kParent = "/toolchains/";
  if (rustc.size() <= kTail.size() || rustc.compare(rustc.size() - kTail.size(), kTail.size(), kTail) != 0) return "";
  const std::string dir = rustc.substr(0, rustc.size() - kTail.size());
  const size_t slash = dir.rfind('/');
  if (slash == std::string::npos || slash + 1 < kParent.size() ||
      dir.compare(slash + 1 - kParent.size(), kParent.size(), kParent) != 0)
    return "";
  // `rustup toolchain link` makes a link to a rustc built anywhere, under any name.
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return "";
  const std::string name = dir.substr(slash + 1);
  auto starts = [&](const std::string& word) {
    return name.compare(0, word.size(), word) == 0 && (name.size() == word.size() || name[word.size()] == '-');
  };
  for (const char* channel : {"stable", "beta", "nightly"})
    if (starts(channel)) return channel;
  // A release by number: MAJOR.MINOR[.PATCH], then the end or -DATE or -HOST.
  size_t at = 0;
  int numbers = 0;
  while (numbers < 3 && at < name.size() && std::isdigit(static_cast<unsigned char>(name[at]))) {
    while (at < name.size() && std::isdigit(static_cast<unsigned char>(name[at]))) ++at;
    ++numbers;
    if (at < name.size() && name[at] == '.') ++at;
    else break;
  }
  if (numbers < 2 || (at < name.size() && name[at] != '-')) return "";
  for (const char* word : {"beta", "nightly", "alpha", "dev"})
    if (name.find(word, at) != std::string::npos) return "";
  return "stable";
}

namespace {

// Whether `rustc` is a nightly (its `rustc -vV` release ends in -nightly or -dev),
// told by the name of the rustup toolchain that holds it (rustup_channel) or else
// asked once per rustc binary and kept in CORPUS/rustc-releases.txt (a line "SIZE
// MTIME_NS RELEASE PATH" per binary): the wrappers of every later build read it
// instead of starting rustc. A rustc that cannot be asked counts as not a nightly.
bool rustc_is_nightly(const WrapperSettings& s, const std::string& rustc) {
  if (const std::string channel = rustup_channel(rustc); !channel.empty()) return channel == "nightly";
  const std::string identity = file_identity(rustc);
  if (identity.empty()) return false;
  const std::string key = identity + " ";
  const std::string cache = s.corpus_dir + "/rustc-releases.txt";
  std::string release;
  if (FILE* f = std::fopen(cache.c_str(), "r")) {
    char line[4096];
    while (std::fgets(line, sizeof line, f)) {
      std::string l(line);
      if (!l.empty() && l.back() == '\n') l.pop_back();
      size_t path_at = l.find(' ', key.size());
      if (l.compare(0, key.size(), key) == 0 && path_at != std::string::npos && l.substr(path_at + 1) == rustc)
        release = l.substr(key.size(), path_at - key.size());
    }
    std::fclose(f);
  }
  if (release.empty()) {
    ProcessOptions o = g_children;
    o.capture_stdout = true;
    try {
      ProcessResult r = run_process({rustc, "-vV"}, o);
      size_t at = r.captured_stdout.find("\nrelease: ");
      if (r.exit_code == 0 && at != std::string::npos) {
        release = r.captured_stdout.substr(at + 10);
        release = release.substr(0, release.find('\n'));
      }
    } catch (const KilnError&) {
    }
    if (release.empty() || release.find(' ') != std::string::npos) return false;
    try {
      append_line_locked(cache, key + release + " " + rustc);
    } catch (const KilnError&) {  // a cache: a corpus it cannot be written to asks again next time
    }
  }
  return release.find("-nightly") != std::string::npos || release.find("-dev") != std::string::npos;
}

}  // namespace

// The options a call through RUSTC_BOOTSTRAP=1 adds so that its symbols are the plain build's.
std::vector<std::string> with_plain_mangling(const WrapperSettings& s, const std::string& rustc, const RustcCall& c,
                                             std::vector<std::string> args) {
  if (c.mangling_given) return args;
  // The build's own RUSTC_BOOTSTRAP=-1 makes even a nightly take stable's defaults.
  const char* bootstrap = std::getenv("RUSTC_BOOTSTRAP");
  const bool nightly = !(bootstrap && std::string(bootstrap) == "-1") &&
      (bootstrap_gives_nightly(bootstrap, c.crate_name) || rustc_is_nightly(s, rustc));
  for (std::string& a : plain_mangling_args(c, nightly)) args.push_back(std::move(a));
  return args;
}

namespace {
int g_child_signal = 0;  // the signal that ended the last rustc run_child ran, or 0
}  // namespace

int run_child(const std::string& rustc, std::vector<std::string> args, std::vector<std::string> env,
              std::function<void(std::string_view)> stderr_line) {
  args.insert(args.begin(), rustc);
  ProcessOptions o = g_children;
  o.stderr_line = std::move(stderr_line);
  o.set_env.insert(o.set_env.end(), env.begin(), env.end());
  const ProcessResult r = run_process(args, o);
  g_child_signal = r.signaled ? r.exit_code - 128 : 0;
  return r.exit_code;
}

int end_as_rustc_did(int status) {
  if (g_child_signal == 0 || status != 128 + g_child_signal) return status;
  // Killed (out of memory) or crashed: cargo says so ("signal: 9, SIGKILL") only when
  // its child, this wrapper, ends by that signal too, not by exit status 128 + N.
  std::fflush(nullptr);
  const struct rlimit no_core { 0, 0 };
  ::setrlimit(RLIMIT_CORE, &no_core);  // rustc's crash, not the wrapper's
  ::signal(g_child_signal, SIG_DFL);
  ::raise(g_child_signal);
  return status;  // a signal that does not end a process (SIGCHLD, ...)
}

}  // namespace kiln
