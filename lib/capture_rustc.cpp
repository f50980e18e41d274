// The rustc wrapper. Cargo runs `WRAPPER RUSTC ARGS...`. For a crate to capture:
//   1. rustc ARGS -Clinker-plugin-lto=yes -Clto=off -Zno-link  (RUSTC_BOOTSTRAP=1)
//      leaves OUT/CRATE{extra}.*.rcgu.o as bitcode and OUT/CRATE{extra}.rlink, and
//      runs no LLVM code generation;
//   2. each bitcode file is stored in the corpus and replaced by an object that the
//      selected back end emits;
//   3. rustc ARGS(with the .rlink as input) -Zlink-only finishes the rlib or binary.
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

#include "bitcode.h"
#include "capture.h"
#include "capture_args.h"
#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "jobserver.h"
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

std::vector<std::string> bitcode_step_args(const std::vector<std::string>& args) {
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
  first.insert(first.end(), {"-Clinker-plugin-lto=yes", "-Clto=off", "-Zno-link"});
  return first;
}

namespace {

struct OutputFile {
  std::string path, cgu;
};

// Files OUT/PREFIX.*SUFFIX this invocation left (by name, and by an inode change since
// `since`): a unit that incremental compilation reuses is hard-linked from rustc's
// incremental directory with its old modification time, but the link changes its ctime.
std::vector<OutputFile> list_outputs(const std::string& dir, const std::string& prefix, const std::string& suffix,
                                     time_t since) {
  std::vector<OutputFile> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) throw KilnError(kExitIo, dir, "cannot list the output directory: " + errno_reason(errno));
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    if (name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    std::string middle = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (middle.find(".no-opt") != std::string::npos) continue;
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

// The wrapper's own start (exec, loading kiln and LLVM), measured as main begins.
double g_startup_seconds = 0;

// The build's own TMPDIR for rustc (this wrapper's points into the capture's directory).
ProcessOptions g_children;

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

// Reads the units rustc wrote and stores their bitcode in the corpus: the blobs with
// one batched sync, then a module record each. A unit that is not bitcode gets its
// error and is skipped; a failure to store fails every unit not yet stored.
static void store_units(Corpus& corpus, const RustcCall& c, const std::string& id, const std::vector<OutputFile>& units,
                        std::vector<std::string>& contents, std::vector<std::string>& ids,
                        std::vector<std::string>& errors) {
  std::vector<ModuleRecord> records(units.size());
  std::vector<size_t> good;
  std::vector<std::string_view> blobs;
  for (size_t i = 0; i < units.size(); ++i) {
    contents[i] = read_file(units[i].path);
    try {
      check_bitcode_magic(contents[i], units[i].path);
      records[i] = module_record(c, contents[i], units[i].cgu, id);
      good.push_back(i);
      blobs.push_back(contents[i]);
    } catch (const KilnError& e) {
      errors[i] = e.what();
    }
  }
  try {
    std::vector<std::string> stored = corpus.store_blobs(blobs);
    for (size_t k = 0; k < good.size(); ++k) {
      const size_t i = good[k];
      records[i].id = stored[k];
      corpus.append_module(records[i]);
      ids[i] = stored[k];
    }
  } catch (const KilnError& e) {
    for (size_t i : good)
      if (ids[i].empty()) errors[i] = e.what();
  }
}

int capture_and_emit(const WrapperSettings& s, const std::string& rustc, const RustcCall& c, const std::string& id) {
  Stopwatch clock, phase;
  Phases phases = {{"startup", g_startup_seconds}};
  time_t start = ::time(nullptr);
  // Settings that conflict with the bitcode route are dropped from the first step.
  // Incremental compilation stays: a unit rustc reuses is still left in OUT (linked
  // from its incremental directory), and its object comes from the corpus's cache.
  int rc = run_child(rustc, bitcode_step_args(c.args), {"RUSTC_BOOTSTRAP=1"});
  phases.emplace_back("rustc", phase.lap());
  if (rc != 0) {  // a compile error is the user's: rustc has said why
    record_invocation(s, "rustc", id, "failed", "rustc exited with status " + std::to_string(rc), c.args, 0,
                      clock.seconds(), phases);
    return rc;
  }

  std::string prefix = c.crate_name + c.extra_filename + ".";
  std::string rlink = c.out_dir + "/" + c.crate_name + c.extra_filename + ".rlink";
  auto units = list_outputs(c.out_dir, prefix, ".rcgu.o", start);
  Corpus corpus = Corpus::open(s.corpus_dir);
  std::vector<std::string> ids(units.size());
  std::vector<std::string> errors(units.size()), fallbacks(units.size());
  std::vector<std::string> contents(units.size());
  store_units(corpus, c, id, units, contents, ids, errors);
  phases.emplace_back("store", phase.lap());
  // Emit the units in parallel, as rustc's own code generator would: each thread
  // beyond the first holds one of cargo's jobserver tokens, so cargo -jN stays N.
  // Every unit is tried: the body catches its own errors, so one unit's failure
  // stops no other (the loop's first-exception stop never fires).
  unsigned threads = std::min<unsigned>(hardware_threads(), static_cast<unsigned>(units.size()));
  Jobserver jobs = Jobserver::from_environment();
  ParallelPeak peak = parallel_for_jobserver(jobs, units.size(), threads, [&](size_t i) {
    if (!errors[i].empty()) return;
    try {
      std::string object = emit_for_capture(s, contents[i], ids[i], units[i].path);
      write_file_atomic(units[i].path, object, Durability::kAtomic);  // rustc's own output: rustc does not sync it
    } catch (const KilnError& e) {
      errors[i] = e.what();
    }
    if (!errors[i].empty() && s.fallback && s.backend != "llvm") {
      // rustc's own code generator is LLVM: emitting this unit with it is what
      // the native build would have done, and the crate's metadata stays valid.
      try {
        WrapperSettings native = s;
        native.backend = "llvm";
        write_file_atomic(units[i].path, emit_for_capture(native, contents[i], ids[i], units[i].path),
                          Durability::kAtomic);
        fallbacks[i] = errors[i];
        errors[i].clear();
      } catch (const KilnError& e) {
        errors[i] += "; the llvm fallback failed too: " + std::string(e.what());
      }
    }
  });
  trace_parallel_peak(kEnvTraceEmitThreads, peak);
  phases.emplace_back("emit", phase.lap());

  std::string failure, fallback;
  for (size_t i = 0; i < units.size(); ++i) {
    if (!errors[i].empty() && failure.empty()) failure = errors[i];
    if (!fallbacks[i].empty()) {
      std::fprintf(stderr, "kiln-capture: warning: crate %s: %s; emitted with llvm instead\n", c.crate_name.c_str(),
                   fallbacks[i].c_str());
      if (fallback.empty()) fallback = fallbacks[i];
    }
  }
  if (units.empty()) failure = c.out_dir + ": rustc left no " + prefix + "*.rcgu.o bitcode";
  if (!failure.empty()) {
    remove_outputs(units);
    ::unlink(rlink.c_str());
    std::fprintf(stderr, "kiln-capture: error: crate %s (%s): %s\n", c.crate_name.c_str(), c.input.c_str(),
                 failure.c_str());
    record_invocation(s, "rustc", id, "failed", failure, c.args, static_cast<int>(units.size()), clock.seconds(),
                      phases);
    return kExitFailed;
  }

  std::vector<std::string> link = c.args;
  link[c.input_index] = rlink;
  link.push_back("-Zlink-only");
  rc = run_child(rustc, link, {"RUSTC_BOOTSTRAP=1"});
  ::unlink(rlink.c_str());
  phases.emplace_back("link", phase.lap());
  if (rc != 0) {
    record_invocation(s, "rustc", id, "failed", "rustc -Zlink-only failed with status " + std::to_string(rc), c.args,
                      static_cast<int>(units.size()), clock.seconds(), phases);
    return rc;
  }
  record_invocation(s, "rustc", id, fallback.empty() ? "captured" : "fallback", fallback, c.args,
                    static_cast<int>(units.size()), clock.seconds(), phases);
  return 0;
}

}  // namespace

int rustc_wrapper_main(int argc, char** argv) {
  g_startup_seconds = seconds_since_process_start();
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
  return capture_and_emit(s, rustc, c, id);
}

}  // namespace kiln
