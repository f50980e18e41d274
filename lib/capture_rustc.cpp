// The rustc wrapper. Cargo runs `WRAPPER RUSTC ARGS...`. For a crate to capture:
//   1. rustc ARGS -Clinker-plugin-lto=yes -Clto=off runs no LLVM code generation: its
//      codegen units are bitcode. For a crate that is only an rlib, rustc archives
//      them into OUT/libCRATE{extra}.rlib itself; for anything else (binaries, tests,
//      other crate types) it stops before linking (-Zno-link, RUSTC_BOOTSTRAP=1) and
//      leaves OUT/CRATE{extra}.*.rcgu.o and OUT/CRATE{extra}.rlink;
//   2. each unit's bitcode is stored in the corpus and emitted by the selected back end;
//   3. the objects replace the bitcode members of the rlib, which is written again with
//      a fresh symbol index (lib/ar_archive.h), or replace the unit files, and
//      rustc ARGS(with the .rlink as input) -Zlink-only finishes the binary.
// Archiving in process saves a second rustc per library crate (its start, reading the
// crate's metadata again); KILN_RLIB_REWRITE=0 turns it off, for comparisons.
// With --backend native, rustc runs unchanged plus -Csave-temps, and the kept
// pre-codegen bitcode (*.rcgu.bc) is stored.
// --fallback: a unit the selected back end cannot emit is emitted by `llvm` (rustc's
// own code generator) instead, so the crate's metadata from step 1 stays valid.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <thread>

#include "ar_archive.h"
#include "bitcode.h"
#include "capture.h"
#include "capture_args.h"
#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "hash.h"
#include "jobserver.h"
#include "plugin_payload.h"
#include "parallel.h"
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

// The setting a codegen option at position i gives ("-C KEY=V", "--codegen KEY=V" or
// "-CKEY=V"), or "" for any other argument; `separate`: it took the next argument too.
std::string codegen_setting(const std::vector<std::string>& args, size_t i, bool& separate) {
  const std::string& a = args[i];
  separate = (a == "-C" || a == "--codegen") && i + 1 < args.size();
  return separate ? args[i + 1] : a.rfind("-C", 0) == 0 ? a.substr(2) : "";
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
    if (option_value(args, i, "--crate-name", v)) c.crate_name = v;
    else if (option_value(args, i, "--out-dir", v)) c.out_dir = v;
    else if (option_value(args, i, "--emit", v)) c.emit = v;
    else if (option_value(args, i, "--crate-type", v)) c.crate_types.push_back(v);
    else if (option_value(args, i, "--print", v)) c.print = true;
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

std::string passthrough_reason(const RustcCall& c) {
  if (c.version) return "version query";
  if (c.print) return "--print query";
  if (c.input == "-") return "probe compiled from standard input";
  if (c.input.empty()) return "no input file";
  if (c.crate_name.rfind("build_script_", 0) == 0) return "build script";
  for (const auto& t : c.crate_types)
    if (t.find("proc-macro") != std::string::npos) return "proc-macro (loaded by rustc itself)";
  if (c.emit.find("link") == std::string::npos && !c.emit.empty()) return "no object output (--emit=" + c.emit + ")";
  if (c.out_dir.empty()) return "no --out-dir";
  return "";
}

std::vector<std::string> bitcode_step_args(const std::vector<std::string>& args, bool stop_before_link) {
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
  first.insert(first.end(), {"-Clinker-plugin-lto=yes", "-Clto=off"});
  if (stop_before_link) first.push_back("-Zno-link");
  return first;
}

std::string plugin_obstacle(const std::vector<std::string>& args) {
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
    i += separate;
  }
  return "";
}

std::string rlib_rewrite_obstacle(const RustcCall& c) {
  if (c.crate_types.empty()) return "no --crate-type (a binary)";
  for (const std::string& types : c.crate_types)
    for (size_t at = 0; at <= types.size();) {
      size_t comma = std::min(types.find(',', at), types.size());
      std::string type = types.substr(at, comma - at);
      if (type != "lib" && type != "rlib") return "crate type " + type;
      at = comma + 1;
    }
  if (c.emit.find("link=") != std::string::npos) return "an explicit --emit link path";
  for (const std::string& a : c.args)
    if (a.rfind("-o", 0) == 0) return "an explicit -o output";  // -o PATH or -oPATH
  return "";
}

namespace {

struct OutputFile {
  std::string path, cgu;
};

// Files OUT/PREFIX.*SUFFIX this invocation left (by name, and by an inode change since
// `since`): a unit that incremental compilation reuses is hard-linked from rustc's
// incremental directory with its old modification time, but the link changes its ctime.
// The codegen unit named by a file or archive member name PREFIX.CGU.SUFFIX (SUFFIX
// .rcgu.o or .rcgu.bc), or "" when the name is not one, or names a unit's unoptimized
// copy (.no-opt).
std::string unit_cgu(const std::string& name, const std::string& prefix, const std::string& suffix) {
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0) return "";
  if (name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return "";
  std::string middle = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  return middle.find(".no-opt") == std::string::npos ? middle : "";
}

std::vector<OutputFile> list_outputs(const std::string& dir, const std::string& prefix, const std::string& suffix,
                                     time_t since) {
  std::vector<OutputFile> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) throw KilnError(kExitIo, dir, "cannot list the output directory: " + errno_reason(errno));
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    std::string middle = unit_cgu(name, prefix, suffix);
    if (middle.empty()) continue;
    struct stat st {};
    std::string path = dir + "/" + name;
    if (::stat(path.c_str(), &st) != 0 || std::max(st.st_mtime, st.st_ctime) + 1 < since) continue;
    out.push_back({path, middle});
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const OutputFile& a, const OutputFile& b) { return a.path < b.path; });
  return out;
}

ModuleRecord module_record(const RustcCall& c, const std::string& bytes, const std::string& cgu,
                           const std::string& invocation) {
  ModuleRecord m;
  m.bytes = bytes.size();
  m.triple = bitcode_triple(bytes);
  m.producer = bitcode_producer(bytes);
  m.tool = "rustc";
  m.crate = c.crate_name;
  m.cgu = cgu;
  m.args = c.args;
  m.args_hash = args_hash(c.args);
  m.opt_level = c.opt_level;
  m.debuginfo = c.debuginfo;
  m.cwd = current_directory();
  m.invocation = invocation;
  m.time = iso8601_now();
  return m;
}

// The wrapper's own start (exec, loading kiln and LLVM): its CPU time as main begins.
double g_startup_seconds = 0;

// The build's own TMPDIR for rustc (this wrapper's points into the capture's directory).
ProcessOptions g_children;

// Whether `rustc` is a nightly (its `rustc -vV` release ends in -nightly or -dev),
// asked once per rustc binary and kept in CORPUS/rustc-releases.txt (a line "SIZE
// MTIME_NS RELEASE PATH" per binary): the wrappers of every later build read it
// instead of starting rustc. A rustc that cannot be asked counts as not a nightly.
bool rustc_is_nightly(const WrapperSettings& s, const std::string& rustc) {
  struct stat st {};
  if (::stat(rustc.c_str(), &st) != 0) return false;
  const std::string key = std::to_string(st.st_size) + " " +
      std::to_string(static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec) + " ";
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

// The options a call through RUSTC_BOOTSTRAP=1 adds so that its symbols are the plain build's.
std::vector<std::string> with_plain_mangling(const WrapperSettings& s, const std::string& rustc, const RustcCall& c,
                                             std::vector<std::string> args) {
  if (c.mangling_given) return args;
  for (std::string& a : plain_mangling_args(c, rustc_is_nightly(s, rustc))) args.push_back(std::move(a));
  return args;
}

int run_child(const std::string& rustc, std::vector<std::string> args, std::vector<std::string> env = {}) {
  args.insert(args.begin(), rustc);
  ProcessOptions o = g_children;
  o.set_env.insert(o.set_env.end(), env.begin(), env.end());
  return run_process(args, o).exit_code;
}

// Removes the capture route's own leftovers so a native rerun starts clean.
void remove_outputs(const std::vector<OutputFile>& files) {
  for (const auto& f : files) ::unlink(f.path.c_str());
}

int capture_native(const WrapperSettings& s, const std::string& rustc, const RustcCall& c, const std::string& id) {
  Stopwatch clock;
  Phases phases = {{"startup", g_startup_seconds}};
  time_t start = ::time(nullptr);
  std::vector<std::string> args = c.args;
  args.push_back("-Csave-temps");
  int rc = run_child(rustc, args);
  if (rc != 0) {
    record_invocation(s, "rustc", id, "failed", "rustc exited with status " + std::to_string(rc), c.args, 0,
                      clock.seconds());
    return rc;
  }
  std::string prefix = c.crate_name + c.extra_filename + ".";
  Corpus corpus = Corpus::open(s.corpus_dir);
  auto bitcode = list_outputs(c.out_dir, prefix, ".rcgu.bc", start);
  for (const auto& f : bitcode) {
    std::string bytes = read_file(f.path);
    ModuleRecord m = module_record(c, bytes, f.cgu, id);
    m.id = corpus.store_blob(bytes);
    corpus.append_module(m);
  }
  // -Csave-temps keeps files that a normal build deletes; remove this crate's.
  remove_outputs(bitcode);
  remove_outputs(list_outputs(c.out_dir, prefix, ".rcgu.no-opt.bc", start));
  remove_outputs(list_outputs(c.out_dir, prefix, ".rcgu.o", start));
  phases.emplace_back("rustc", clock.seconds());  // rustc with its own code generator, then storing the bitcode
  record_invocation(s, "rustc", id, "captured", "", c.args, static_cast<int>(bitcode.size()), clock.seconds(), phases);
  return 0;
}

// One codegen unit of a crate: its bitcode (a file rustc left, or a member of the rlib
// rustc archived), and what became of it.
struct Unit {
  std::string label;  // the file, or RLIB(MEMBER), for messages and receipts
  std::string cgu;
  std::string bitcode;
  size_t member = 0;  // its index among the rlib's members
  std::string id, object, error, fallback;
};

// Stores the units' bitcode in the corpus while they are emitted. The blobs are written
// and synced as one batch on a thread of their own (a sync waits on the disk, not on a
// core: 0.1 s for a crate of 175 units here, which emission now hides), and the module
// records are appended only after it, so no record names a blob a crash could lose. A
// unit that is not bitcode gets its error and is neither stored nor emitted; a failure
// to store fails every unit (`finish`).
class UnitStore {
 public:
  UnitStore(Corpus& corpus, const RustcCall& c, const std::string& id, std::vector<Unit>& units)
      : corpus_(corpus), units_(units), records_(units.size()) {
    std::vector<std::string_view> blobs;
    for (size_t i = 0; i < units.size(); ++i) {
      try {
        check_bitcode_magic(units[i].bitcode, units[i].label);
        records_[i] = module_record(c, units[i].bitcode, units[i].cgu, id);
        units[i].id = records_[i].id = xxh3_128_hex(units[i].bitcode);
        good_.push_back(i);
        blobs.push_back(units[i].bitcode);
      } catch (const KilnError& e) {
        units[i].error = e.what();
      }
    }
    thread_ = std::thread([this, blobs = std::move(blobs)] {
      try {
        corpus_.store_blobs(blobs);
      } catch (const KilnError& e) {
        error_ = e.what();
      }
    });
  }
  ~UnitStore() {
    if (thread_.joinable()) thread_.join();
  }
  UnitStore(const UnitStore&) = delete;
  UnitStore& operator=(const UnitStore&) = delete;

  // Waits for the blobs, then records the modules (or fails every stored unit).
  void finish() {
    thread_.join();
    for (size_t i : good_) {
      if (!error_.empty()) {
        units_[i].error = error_;
        continue;
      }
      try {
        corpus_.append_module(records_[i]);
      } catch (const KilnError& e) {
        units_[i].error = e.what();
      }
    }
  }

 private:
  Corpus& corpus_;
  std::vector<Unit>& units_;
  std::vector<ModuleRecord> records_;
  std::vector<size_t> good_;
  std::string error_;
  std::thread thread_;
};

// Emits the units in parallel, as rustc's own code generator would: each thread beyond
// the first holds one of cargo's jobserver tokens, so cargo -jN stays N. Every unit is
// tried: the body catches its own errors, so one unit's failure stops no other (the
// loop's first-exception stop never fires).
void emit_units(const WrapperSettings& s, std::vector<Unit>& units) {
  unsigned threads = std::min<unsigned>(hardware_threads(), static_cast<unsigned>(units.size()));
  Jobserver jobs = Jobserver::from_environment();
  ParallelPeak peak = parallel_for_jobserver(jobs, units.size(), threads, [&](size_t i) {
    Unit& u = units[i];
    if (!u.error.empty()) return;
    try {
      u.object = emit_for_capture(s, u.bitcode, u.id, u.label);
    } catch (const KilnError& e) {
      u.error = e.what();
    }
    if (!u.error.empty() && s.fallback && s.backend != "llvm") {
      // rustc's own code generator is LLVM: emitting this unit with it is what
      // the native build would have done, and the crate's metadata stays valid.
      try {
        WrapperSettings native = s;
        native.backend = "llvm";
        u.object = emit_for_capture(native, u.bitcode, u.id, u.label);
        u.fallback = u.error;
        u.error.clear();
      } catch (const KilnError& e) {
        u.error += "; the llvm fallback failed too: " + std::string(e.what());
      }
    }
  });
  trace_parallel_peak(kEnvTraceEmitThreads, peak);
}

// The first unit's error ("" when none failed); warns of each unit that fell back and
// returns the first such reason in `fallback`.
std::string unit_failure(const RustcCall& c, const std::vector<Unit>& units, std::string& fallback) {
  std::string failure;
  for (const Unit& u : units) {
    if (!u.error.empty() && failure.empty()) failure = u.error;
    if (!u.fallback.empty()) {
      std::fprintf(stderr, "kiln-capture: warning: crate %s: %s; emitted with llvm instead\n", c.crate_name.c_str(),
                   u.fallback.c_str());
      if (fallback.empty()) fallback = u.fallback;
    }
  }
  return failure;
}

// The units of an rlib that rustc archived itself: its bitcode members.
std::vector<Unit> rlib_units(const std::string& rlib, const std::vector<ArchiveMember>& members,
                             const std::string& prefix) {
  std::vector<Unit> units;
  for (size_t k = 0; k < members.size(); ++k) {
    std::string cgu = unit_cgu(members[k].name, prefix, ".rcgu.o");
    if (cgu.empty()) continue;
    Unit u;
    u.label = rlib + "(" + members[k].name + ")";
    u.cgu = cgu;
    u.bitcode = members[k].bytes;
    u.member = k;
    units.push_back(std::move(u));
  }
  return units;
}

// The rustc wrapper's route, in its phases: rustc writes bitcode; its units are
// stored in the corpus and emitted by the back end; the rlib is rewritten with the
// objects (rlib_rewrite_obstacle is ""), or rustc -Zlink-only finishes the crate.
int capture_and_emit(const WrapperSettings& s, const std::string& rustc, const RustcCall& c, const std::string& id) {
  Stopwatch clock, phase;
  Phases phases = {{"startup", g_startup_seconds}};
  time_t start = ::time(nullptr);
  const char* rewrite_env = std::getenv("KILN_RLIB_REWRITE");
  const bool rewrite = rlib_rewrite_obstacle(c).empty() && !(rewrite_env && std::string(rewrite_env) == "0");
  // Settings that conflict with the bitcode route are dropped from the first step.
  // Incremental compilation stays: a unit rustc reuses is still left in OUT (linked
  // from its incremental directory), and its object comes from the corpus's cache.
  std::vector<std::string> env, first = bitcode_step_args(c.args, !rewrite);
  if (!rewrite) {
    env.push_back("RUSTC_BOOTSTRAP=1");  // for -Zno-link
    first = with_plain_mangling(s, rustc, c, std::move(first));
  }
  int rc = run_child(rustc, first, env);
  phases.emplace_back("rustc", phase.lap());
  if (rc != 0) {  // a compile error is the user's: rustc has said why
    record_invocation(s, "rustc", id, "failed", "rustc exited with status " + std::to_string(rc), c.args, 0,
                      clock.seconds(), phases);
    return rc;
  }

  const std::string stem = c.crate_name + c.extra_filename, prefix = stem + ".";
  const std::string rlink = c.out_dir + "/" + stem + ".rlink", rlib = c.out_dir + "/lib" + stem + ".rlib";
  std::vector<Unit> units;
  std::vector<OutputFile> files;
  std::string archive;  // the rlib's bytes, which its members view
  std::vector<ArchiveMember> members;
  std::string failure;
  if (rewrite) {
    try {
      archive = read_file(rlib);
      members = read_archive(rlib, archive);
      units = rlib_units(rlib, members, prefix);
    } catch (const KilnError& e) {
      failure = e.what();
    }
  } else {
    files = list_outputs(c.out_dir, prefix, ".rcgu.o", start);
    for (const OutputFile& f : files) {
      Unit u;
      u.label = f.path;
      u.cgu = f.cgu;
      u.bitcode = read_file(f.path);
      units.push_back(std::move(u));
    }
  }
  Corpus corpus = Corpus::open(s.corpus_dir);
  {
    UnitStore store(corpus, c, id, units);
    emit_units(s, units);
    phases.emplace_back("emit", phase.lap());
    store.finish();
    phases.emplace_back("store", phase.lap());  // what is left of it once emission is done
  }

  std::string fallback;
  if (failure.empty()) failure = unit_failure(c, units, fallback);
  if (failure.empty() && units.empty())
    failure = (rewrite ? rlib + ": rustc archived no " : c.out_dir + ": rustc left no ") + prefix +
              "*.rcgu.o bitcode";
  if (failure.empty()) {
    try {
      if (rewrite) {
        for (const Unit& u : units) members[u.member].bytes = u.object;
        write_file_atomic(rlib, archive_bytes(rlib, members).pieces, Durability::kAtomic);
      } else {
        for (Unit& u : units) write_file_atomic(u.label, u.object, Durability::kAtomic);  // rustc does not sync its own
      }
    } catch (const KilnError& e) {
      failure = e.what();
    }
  }
  if (!failure.empty()) {
    // Nothing half-made is left for cargo or the linker to take: no bitcode posing as
    // objects, no rlib holding bitcode.
    remove_outputs(files);
    ::unlink(rewrite ? rlib.c_str() : rlink.c_str());
    std::fprintf(stderr, "kiln-capture: error: crate %s (%s): %s\n", c.crate_name.c_str(), c.input.c_str(),
                 failure.c_str());
    record_invocation(s, "rustc", id, "failed", failure, c.args, static_cast<int>(units.size()), clock.seconds(),
                      phases);
    return kExitFailed;
  }
  if (rewrite) {
    phases.emplace_back("archive", phase.lap());
  } else {
    std::vector<std::string> link = c.args;
    link[c.input_index] = rlink;
    link = with_plain_mangling(s, rustc, c, std::move(link));
    link.push_back("-Zlink-only");
    rc = run_child(rustc, link, {"RUSTC_BOOTSTRAP=1"});
    ::unlink(rlink.c_str());
    phases.emplace_back("link", phase.lap());
    if (rc != 0) {
      record_invocation(s, "rustc", id, "failed", "rustc -Zlink-only failed with status " + std::to_string(rc),
                        c.args, static_cast<int>(units.size()), clock.seconds(), phases);
      return rc;
    }
  }
  record_invocation(s, "rustc", id, fallback.empty() ? "captured" : "fallback", fallback, c.args,
                    static_cast<int>(units.size()), clock.seconds(), phases);
  return 0;
}

// What kiln-linker found in the units it was given: how many, how many carried stamp's
// object, and the first that did not. Written to $KILN_LINK_REPORT as "UNITS STAMP CGU".
struct UnitCount {
  int units = 0, stamp = 0;
  std::string llvm_unit;
  double seconds = 0;  // kiln-linker's own time: reading the units, writing stamp's objects
};

// A unit's object in its place: stamp's, where the plugin left one in it. False when
// the unit is LLVM's own object.
bool take_payload(std::string_view& bytes, const std::string& label, const std::string& cgu, UnitCount& count) {
  ++count.units;
  std::optional<std::string_view> payload = kiln_object_payload(bytes, label);
  if (!payload) {
    if (count.llvm_unit.empty()) count.llvm_unit = cgu;
    return false;
  }
  ++count.stamp;
  bytes = *payload;
  return true;
}

// `args` less any -C linker=X (both spellings), which is returned in `linker`.
std::vector<std::string> without_linker(const std::vector<std::string>& args, std::string& linker) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    bool separate = false;
    const std::string setting = codegen_setting(args, i, separate);
    if (setting.rfind("linker=", 0) == 0) {
      linker = setting.substr(7);
      i += separate;
      continue;
    }
    out.push_back(args[i]);
  }
  return out;
}

// The plugin route (kiln-capture --route plugin): rustc loads kiln's plugin, which
// compiles each codegen unit with stamp in rustc's memory (lib/rustc_plugin.cpp) and
// leaves stamp's object inside the unit's object. For an rlib, those objects take the
// units' places in the archive after rustc; for anything rustc links, rustc links
// through kiln-linker, which puts them in place first (no second rustc). A unit the
// plugin left to LLVM stays as rustc's LLVM wrote it. No bitcode: the corpus gets the
// invocation and the plugin's receipts (plugin.jsonl), no modules.
int capture_in_rustc(const WrapperSettings& s, const std::string& rustc, const RustcCall& c, const std::string& id) {
  if (std::string why = plugin_obstacle(c.args); !why.empty()) {
    record_invocation(s, "rustc", id, "passthrough", why, c.args, 0, 0);
    std::vector<std::string> args = c.args;
    args.insert(args.begin(), rustc);
    exec_process(args);
  }
  Stopwatch clock, phase;
  Phases phases = {{"startup", g_startup_seconds}};
  const bool rewrite = rlib_rewrite_obstacle(c).empty();
  std::string real_linker = "cc";
  std::vector<std::string> args = with_plain_mangling(s, rustc, c, without_linker(c.args, real_linker));
  args.push_back("-Zllvm-plugins=" + s.plugin);
  std::vector<std::string> env = {"RUSTC_BOOTSTRAP=1", "KILN_PLUGIN_RECEIPTS=" + s.corpus_dir + "/plugin.jsonl",
                                  "KILN_PLUGIN_INVOCATION=" + id};
  std::string report;
  if (!rewrite) {
    const char* link_dir = std::getenv(kEnvTmpdir);
    if (!link_dir || !*link_dir)
      throw KilnError(kExitUsage, "", std::string(kEnvTmpdir) + " is not set (run the build through kiln-capture)");
    args.push_back(std::string("-Clinker=") + link_dir + "/" + kLinkerWrapperName);
    report = std::string(link_dir) + "/link-report-" + id;
    env.push_back(std::string(kEnvRealLinker) + "=" + real_linker);
    env.push_back(std::string(kEnvLinkReport) + "=" + report);
  }
  int rc = run_child(rustc, args, env);
  const double rustc_seconds = phase.lap();
  UnitCount count;
  std::string failure;
  if (!rewrite) {
    std::string line;
    try {
      line = read_file(report);  // none when rustc stopped before linking
    } catch (const KilnError&) {
    }
    ::unlink(report.c_str());
    std::istringstream in(line);
    in >> count.units >> count.stamp >> count.llvm_unit >> count.seconds;
    if (count.llvm_unit == "-") count.llvm_unit.clear();
  }
  // rustc's time with the plugin's work (and, for a crate rustc links, its link), less
  // kiln-linker's placing of stamp's objects, its own phase.
  phases.emplace_back("rustc", rustc_seconds - count.seconds);
  if (count.seconds > 0) phases.emplace_back("objects", count.seconds);
  if (rc != 0) {
    record_invocation(s, "rustc", id, "failed", "rustc exited with status " + std::to_string(rc), c.args,
                      count.units, clock.seconds(), phases);
    return rc;
  }
  if (rewrite) {
    const std::string stem = c.crate_name + c.extra_filename, prefix = stem + ".";
    const std::string rlib = c.out_dir + "/lib" + stem + ".rlib";
    try {
      const MappedFile archive(rlib);
      std::vector<ArchiveMember> members = read_archive(rlib, archive.bytes());
      bool changed = false;
      for (ArchiveMember& m : members) {
        std::string cgu = unit_cgu(m.name, prefix, ".rcgu.o");
        if (!cgu.empty()) changed |= take_payload(m.bytes, rlib + "(" + m.name + ")", cgu, count);
      }
      if (changed) write_file_atomic(rlib, archive_bytes(rlib, members).pieces, Durability::kAtomic);
    } catch (const KilnError& e) {
      failure = e.what();
    }
    if (!failure.empty()) {
      // Nothing half-made is left for cargo or the linker: no rlib of objects that carry others.
      ::unlink(rlib.c_str());
      std::fprintf(stderr, "kiln-capture: error: crate %s (%s): %s\n", c.crate_name.c_str(), c.input.c_str(),
                   failure.c_str());
      record_invocation(s, "rustc", id, "failed", failure, c.args, count.units, clock.seconds(), phases);
      return kExitFailed;
    }
    phases.emplace_back("archive", phase.lap());
  }
  // A unit left to LLVM is rustc's own code generation, as --fallback's. plugin.jsonl
  // says why for the units the plugin saw; rustc's allocator shim (__rust_alloc and the
  // like) never passes through the pipeline the plugin is in.
  std::string reason = count.llvm_unit.empty() ? "" : std::to_string(count.units - count.stamp) + " of " +
      std::to_string(count.units) + " units left to rustc's LLVM (first: " + count.llvm_unit +
      "; plugin.jsonl says why, or has no line for rustc's allocator shim)";
  record_invocation(s, "rustc", id, reason.empty() ? "captured" : "fallback", reason, c.args, count.units,
                    clock.seconds(), phases);
  return 0;
}

}  // namespace

int rustc_wrapper_main(int argc, char** argv) {
  g_startup_seconds = process_cpu_seconds();
  if (argc < 2) throw KilnError(kExitUsage, "", "the rustc wrapper expects the rustc path and its arguments");
  std::string rustc = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  WrapperSettings s = WrapperSettings::from_environment();
  RustcCall c = parse_rustc_args(args);
  std::string reason = passthrough_reason(c);
  std::string id = new_invocation_id(args);
  if (!reason.empty()) {
    record_invocation(s, "rustc", id, "passthrough", reason, args, 0, 0);
    args.insert(args.begin(), rustc);
    exec_process(args);
  }
  g_children = use_capture_tmpdir();
  if (s.backend == "native") return capture_native(s, rustc, c, id);
  if (s.route == "plugin") return capture_in_rustc(s, rustc, c, id);
  return capture_and_emit(s, rustc, c, id);
}

namespace {

// The arguments rustc gave the linker, with those of its response files (@FILE, one
// argument a line, as rustc writes them when a command line is too long).
std::vector<std::string> linker_inputs(int argc, char** argv) {
  std::vector<std::string> out;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.size() < 2 || a[0] != '@') {
      out.push_back(a);
      continue;
    }
    std::istringstream lines(read_file(a.substr(1)));
    for (std::string line; std::getline(lines, line);) {
      std::string unescaped;
      for (size_t k = 0; k < line.size(); ++k) unescaped += line[k] == '\\' && k + 1 < line.size() ? line[++k] : line[k];
      out.push_back(unescaped);
    }
  }
  return out;
}

}  // namespace

int linker_wrapper_main(int argc, char** argv) {
  const double started = process_cpu_seconds();  // its start, as the wrappers count theirs
  Stopwatch clock;
  const char* real = std::getenv(kEnvRealLinker);
  UnitCount count;
  for (const std::string& path : linker_inputs(argc, argv)) {
    const std::string suffix = ".rcgu.o";
    if (!path.ends_with(suffix)) continue;
    std::string name = path.substr(path.find_last_of('/') + 1);
    const MappedFile unit(path);
    std::string_view object = unit.bytes();
    // A new file, not a write through the old one: a unit incremental compilation
    // reused is a hard link to its copy in the incremental directory.
    if (take_payload(object, path, name.substr(0, name.size() - suffix.size()), count))
      write_file_atomic(path, object, Durability::kAtomic);
  }
  count.seconds = started + clock.seconds();
  if (const char* report = std::getenv(kEnvLinkReport); report && *report)
    write_file_atomic(report, std::to_string(count.units) + " " + std::to_string(count.stamp) + " " +
                                  (count.llvm_unit.empty() ? "-" : count.llvm_unit) + " " +
                                  std::to_string(count.seconds) + "\n",
                      Durability::kAtomic);
  std::vector<std::string> args(argv, argv + argc);
  args[0] = real && *real ? real : "cc";
  exec_process(args);
}

}  // namespace kiln
