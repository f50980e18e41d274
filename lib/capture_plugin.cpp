// The plugin route's wrapper (kiln-capture --route plugin): rustc with kiln's plugin,
// then stamp's objects put in their units' places, in the rlib rustc archived or, for
// what rustc links, by kiln-linker. No LLVM here: kiln-rustc-wrapper, the program
// cargo runs on this route, links none, so that each of the build's many rustc calls
// does not pay LLVM's start (about 2 ms of relocations and static constructors).
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
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
#include "json_writer.h"
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

// An archive member that carries stamp's object, and that object.
struct CarriedUnit {
  std::string_view unit, payload;
  std::string label;
};

// The writes that make each carried unit of `archive` its payload where it lies
// (payload_in_place), so that no member moves and the archive is not written again:
// for regex's 5 MB rlib after a one-line edit, 1.4 ms (checking the symbols most of
// it) where moving every member took 3 to 4. Only where the archive's index already
// names what the payloads define: the plugin gives each carrier the symbols of the
// object it carries (rustc_plugin.cpp), so rustc's index of the carriers is the index
// of stamp's objects, member for member. nullopt where a carrier's symbols differ from
// its payload's, or a payload cannot stay where it is.
std::optional<std::vector<FilePatch>> units_in_place(std::string_view archive, const std::vector<CarriedUnit>& units) {
  std::vector<FilePatch> out;
  for (const CarriedUnit& u : units) {
    std::vector<std::string_view> carrier_symbols = archive_symbols(u.unit, u.label);
    std::vector<std::string_view> payload_symbols = archive_symbols(u.payload, u.label);
    if (carrier_symbols != payload_symbols) {  // the same names, perhaps in another order
      std::sort(carrier_symbols.begin(), carrier_symbols.end());
      std::sort(payload_symbols.begin(), payload_symbols.end());
      if (carrier_symbols != payload_symbols) return std::nullopt;
    }
    std::vector<FilePatch> patches = payload_in_place(u.unit, u.payload, u.label);
    if (patches.empty()) return std::nullopt;
    const uint64_t at = static_cast<uint64_t>(u.unit.data() - archive.data());
    for (FilePatch& p : patches) out.push_back({at + p.offset, std::move(p.bytes)});
  }
  return out;
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

// Stamp's objects put in their units' places in the rlib that rustc wrote, in two
// steps: planned (reads only; it may run while rustc still ends), then written, once
// rustc has ended. `patches`: each carried unit made its payload where it lies; nullopt
// where that cannot be (the archive is then written again).
struct RlibPlacing {
  uint64_t size = 0;  // the rlib's, which the patches expect
  bool carried = false;
  std::optional<std::vector<FilePatch>> patches;
};

// The rlib's members, each unit (named PREFIX CGU .rcgu.o) that carries stamp's object
// cut to that object, and those units.
std::vector<CarriedUnit> carried_units(const std::string& rlib, std::vector<ArchiveMember>& members,
                                       const std::string& prefix, UnitCount& count) {
  std::vector<CarriedUnit> carried;
  for (ArchiveMember& m : members) {
    std::string cgu = unit_cgu(m.name, prefix, ".rcgu.o");
    const std::string_view unit = m.bytes;
    std::string label = rlib + "(" + m.name + ")";
    if (!cgu.empty() && take_payload(m.bytes, label, cgu, count)) carried.push_back({unit, m.bytes, std::move(label)});
  }
  return carried;
}

RlibPlacing plan_rlib(const std::string& rlib, const std::string& prefix, UnitCount& count) {
  const MappedFile archive(rlib);
  std::vector<ArchiveMember> members = read_archive(rlib, archive.bytes());
  const std::vector<CarriedUnit> carried = carried_units(rlib, members, prefix, count);
  RlibPlacing p;
  p.size = archive.bytes().size();
  p.carried = !carried.empty();
  if (p.carried) p.patches = units_in_place(archive.bytes(), carried);
  return p;
}

// In place: the rlib is rustc's new file (cargo removed the old one before rustc ran),
// which nothing reads before this wrapper exits, and a failure removes it. Best, the
// plan's patches; else the archive written again over itself (a 5 MB rlib: 1.5 ms where
// replacing it took 6.7), or replaced.
void write_rlib(const std::string& rlib, const std::string& prefix, const RlibPlacing& p) {
  if (!p.carried) return;
  if (p.patches) return patch_file_in_place(rlib, p.size, *p.patches);
  const MappedFile archive(rlib);
  std::vector<ArchiveMember> members = read_archive(rlib, archive.bytes());
  UnitCount counted_already;
  carried_units(rlib, members, prefix, counted_already);
  const ArchiveBytes bytes = archive_bytes(rlib, members);
  if (!rewrite_file_in_place(rlib, archive.bytes(), bytes.pieces))
    write_file_atomic(rlib, bytes.pieces, Durability::kAtomic);
}

// rustc's notice, on its standard error (cargo asks for --json=artifacts), that it has
// written `rlib`: one JSON line, {"$message_type":"artifact","artifact":PATH,"emit":"link"}.
bool says_rlib_written(std::string_view line, const std::string& rlib_json) {
  return line.find("\"$message_type\":\"artifact\"") != std::string_view::npos &&
      line.find("\"artifact\":" + rlib_json + ",\"emit\":\"link\"") != std::string_view::npos;
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
  if (std::string why = plugin_obstacle(c); !why.empty()) {
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
  // An rlib's placing is planned as soon as rustc says it has written it: rustc then
  // still takes about 6 ms to end (regex's, after a one-line edit: it frees what it
  // holds), which came before this wrapper's 1.5 ms of reading the units and checking
  // their symbols. The writes wait for rustc's end: it reads the rlib's start again
  // after its notice.
  const std::string stem = c.crate_name + c.extra_filename, prefix = stem + ".";
  const std::string rlib = c.out_dir + "/lib" + stem + ".rlib";
  UnitCount count;
  RlibPlacing placing;
  bool planned = false, planned_beside = false;
  double planning_seconds = 0;
  std::string failure;
  auto plan = [&] {
    Stopwatch planning;
    try {
      placing = plan_rlib(rlib, prefix, count);
    } catch (const std::exception& e) {
      failure = e.what();
    }
    planning_seconds = planning.seconds();
    planned = true;
  };
  std::function<void(std::string_view)> on_line;
  if (rewrite)
    on_line = [&, rlib_json = json_escape(rlib)](std::string_view line) {
      if (planned || !says_rlib_written(line, rlib_json)) return;
      plan();
      planned_beside = true;
    };
  int rc = run_child(rustc, args, env, std::move(on_line));
  // rustc's time, less the planning that went on beside it (the phases share the wall).
  const double rustc_seconds = phase.lap() - (planned_beside ? planning_seconds : 0);
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
  if (planned_beside) phases.emplace_back("archive_beside_rustc", planning_seconds);
  if (rc != 0) {
    record_invocation(s, "rustc", id, "failed", "rustc exited with status " + std::to_string(rc), c.args,
                      count.units, clock.seconds(), phases);
    return rc;
  }
  if (rewrite) {
    if (!planned) plan();  // rustc said nothing (no --json=artifacts), or not in the words expected
    phase.lap();
    if (failure.empty()) {
      try {
        write_rlib(rlib, prefix, placing);
      } catch (const std::exception& e) {
        failure = e.what();
      }
    }
    if (!failure.empty()) {
      // Nothing half-made is left for cargo or the linker: no rlib of objects that carry others.
      ::unlink(rlib.c_str());
      std::fprintf(stderr, "kiln-capture: error: crate %s (%s): %s\n", c.crate_name.c_str(), c.input.c_str(),
                   failure.c_str());
      record_invocation(s, "rustc", id, "failed", failure, c.args, count.units, clock.seconds(), phases);
      return kExitFailed;
    }
    phases.emplace_back("archive", (planned_beside ? 0 : planning_seconds) + phase.lap());
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

// The arguments rustc gave the linker (argv[1] on), with those of its response files
// (@FILE, one argument a line, as rustc writes them when a command line is too long)
// in their places; `from_file`: there was one.
struct LinkerArgs {
  std::vector<std::string> args;
  bool from_file = false;
};
LinkerArgs linker_args(int argc, char** argv) {
  LinkerArgs out;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.size() < 2 || a[0] != '@') {
      out.args.push_back(a);
      continue;
    }
    out.from_file = true;
    std::istringstream lines(read_file(a.substr(1)));
    for (std::string line; std::getline(lines, line);) {
      std::string unescaped;
      for (size_t k = 0; k < line.size(); ++k) unescaped += line[k] == '\\' && k + 1 < line.size() ? line[++k] : line[k];
      out.args.push_back(unescaped);
    }
  }
  return out;
}

// A response file of `args`, one a line, with a backslash before each backslash, blank
// and quote (GCC's and lld's readers undo it; rustc writes its own so).
std::string response_file_text(const std::vector<std::string>& args) {
  std::string text;
  for (const std::string& a : args) {
    for (char c : a) {
      if (c == '\\' || c == ' ' || c == '\t' || c == '\n' || c == '"' || c == '\'') text.push_back('\\');
      text.push_back(c);
    }
    text.push_back('\n');
  }
  return text;
}

constexpr std::string_view kUnitSuffix = ".rcgu.o";

// The old way, where there is no capture directory to put an archive in (or the line
// is not a C compiler driver's): each unit
// that carries stamp's object is written again as that object. A new file, not a write
// through the old one: a unit incremental compilation reused is a hard link to its
// copy in the incremental directory.
void replace_units_in_place(const std::vector<std::string>& args, UnitCount& count) {
  for (const std::string& path : args) {
    if (!path.ends_with(kUnitSuffix)) continue;
    const std::string name = path.substr(path.find_last_of('/') + 1);
    const MappedFile unit(path);
    std::string_view object = unit.bytes();
    if (take_payload(object, path, name.substr(0, name.size() - kUnitSuffix.size()), count))
      write_file_atomic(path, object, Durability::kAtomic);
  }
}

}  // namespace

// rustc's linker on the plugin route. The units rustc passes (contiguous, after its
// symbols object) go to the linker as one archive in their order, each member stamp's
// object where the plugin left one, else the unit itself, taken whole
// (--whole-archive: every member linked, as the objects were). One new file per link,
// not one per unit: creating a file costs 0.3 ms on this machine's ext4, and a test
// binary has over a hundred units. The archive, and a response file where rustc used
// one, live in the capture's directory until the linker is done.
int linker_wrapper_main(int argc, char** argv) {
  const double started = process_cpu_seconds();  // its start, as the wrappers count theirs
  Stopwatch clock;
  const char* real = std::getenv(kEnvRealLinker);
  const char* dir = std::getenv(kEnvTmpdir);
  UnitCount count;
  LinkerArgs in = linker_args(argc, argv);
  std::vector<std::string> out;
  std::vector<std::string> made;  // files to remove after the link
  // A C compiler driver (rustc's flavor for kiln-linker) takes linker options as
  // -Wl,...; a line without any is some other flavor, whose spelling is not assumed.
  const bool driver = std::any_of(in.args.begin(), in.args.end(), [](const std::string& a) {
    return a.rfind("-Wl,", 0) == 0;
  });
  const bool in_place = !dir || !*dir || !driver;
  if (in_place) {
    replace_units_in_place(in.args, count);
    out.assign(argv + 1, argv + argc);  // unchanged, response files and all
  } else {
    std::vector<std::unique_ptr<MappedFile>> units;
    std::vector<ArchiveMember> members;
    size_t first = in.args.size();
    for (size_t k = 0; k < in.args.size(); ++k) {
      const std::string& path = in.args[k];
      if (!path.ends_with(kUnitSuffix)) {
        out.push_back(path);
        continue;
      }
      if (first == in.args.size()) first = out.size();
      const std::string name = path.substr(path.find_last_of('/') + 1);
      units.push_back(std::make_unique<MappedFile>(path));
      std::string_view object = units.back()->bytes();
      take_payload(object, path, name.substr(0, name.size() - kUnitSuffix.size()), count);
      members.push_back({name, object});
    }
    if (!members.empty()) {
      const std::string archive = std::string(dir) + "/units-" + std::to_string(::getpid()) + ".a";
      write_file_atomic(archive, archive_bytes(archive, members).pieces, Durability::kAtomic);
      made.push_back(archive);
      out.insert(out.begin() + static_cast<std::ptrdiff_t>(first),
                 {"-Wl,--whole-archive", archive, "-Wl,--no-whole-archive"});
    }
  }
  count.seconds = started + clock.seconds();
  if (const char* report = std::getenv(kEnvLinkReport); report && *report)
    write_file_atomic(report, std::to_string(count.units) + " " + std::to_string(count.stamp) + " " +
                                  (count.llvm_unit.empty() ? "-" : count.llvm_unit) + " " +
                                  std::to_string(count.seconds) + "\n",
                      Durability::kAtomic);
  std::vector<std::string> command = {real && *real ? real : "cc"};
  if (in.from_file && !in_place) {
    const std::string response = std::string(dir) + "/link-args-" + std::to_string(::getpid());
    write_file_atomic(response, response_file_text(out), Durability::kAtomic);
    made.push_back(response);
    command.push_back("@" + response);
  } else {
    command.insert(command.end(), out.begin(), out.end());
  }
  if (made.empty()) exec_process(command);
  const int status = run_process(command).exit_code;
  for (const std::string& f : made) ::unlink(f.c_str());
  return status;
}

// The program cargo runs as RUSTC_WRAPPER on the plugin route.
int plugin_wrapper_main(int argc, char** argv) {
  const RustcWrapperCall w = start_rustc_wrapper(argc, argv);
  if (w.settings.route != "plugin" || w.settings.backend != "stamp")
    throw KilnError(kExitUsage, "", "kiln-rustc-wrapper runs only the plugin route (kiln-capture --route plugin); "
                                    "this build's route is " + w.settings.route + " with --backend " + w.settings.backend);
  return end_as_rustc_did(capture_in_rustc(w.settings, w.rustc, w.call, w.id));
}

}  // namespace kiln
