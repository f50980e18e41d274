// The plugin route's wrapper (kiln-capture --route plugin): rustc with kiln's plugin,
// then stamp's objects put in their units' places, in the rlib rustc archived or, for
// what rustc links, by kiln-linker. No LLVM here: kiln-rustc-wrapper, the program
// cargo runs on this route, links none, so that each of the build's many rustc calls
// does not pay LLVM's start (about 2 ms of relocations and static constructors).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "ar_archive.h"
#include "capture.h"
#include "capture_args.h"
#include "capture_rustc.h"
#include "error.h"
#include "fs.h"
#include "plugin_payload.h"
#include "process.h"
#include "timeutil.h"

namespace kiln {

namespace {

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

}  // namespace

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

// The program cargo runs as RUSTC_WRAPPER on the plugin route.
int plugin_wrapper_main(int argc, char** argv) {
  const RustcWrapperCall w = start_rustc_wrapper(argc, argv);
  if (w.settings.route != "plugin" || w.settings.backend != "stamp")
    throw KilnError(kExitUsage, "", "kiln-rustc-wrapper runs only the plugin route (kiln-capture --route plugin); "
                                    "this build's route is " + w.settings.route + " with --backend " + w.settings.backend);
  return capture_in_rustc(w.settings, w.rustc, w.call, w.id);
}

}  // namespace kiln
