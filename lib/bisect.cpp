// kiln-bisect: probes (a clean, a build and a test through kiln-capture with a
// selection), the state that lets an interrupted bisect resume, and the run itself.
#include "bisect.h"

#include <dirent.h>
#include <unistd.h>

#include <llvm/Demangle/Demangle.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <tuple>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "census.h"
#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "hash.h"
#include "json.h"
#include "process.h"
#include "progress.h"
#include "timeutil.h"

namespace kiln {

namespace {

constexpr int kStateVersion = 1;
constexpr const char* kStateName = "bisect.json";

// One probe as the state records it: which selection, and what the test said.
struct ProbeRecord {
  std::string key, what;
  size_t selected = 0;
  bool fails = false;
  std::string reason;  // "test exit 101", "build exit 1", "test timed out", "" when it passed
  int test_runs = 0;
  double build_seconds = 0, test_seconds = 0;
};

struct State {
  std::string config;  // the settings that decide the answer, as canonical JSON
  bool have_items = false;
  std::vector<BisectItem> items;
  std::map<std::string, std::string> crates;  // module id -> crate
  std::set<std::string> excluded_in;          // modules where --exclude kept a function on llvm
  size_t modules_first_build = 0;
  std::vector<ProbeRecord> probes;
};

std::string config_json(const BisectOptions& o) {
  JsonWriter w;
  w.begin_object()
      .field("build_dir", o.build_dir)
      .field("build", o.build_command)
      .field("test", o.test_command)
      .field("clean", o.clean_command)
      .field("candidate", o.candidate)
      .field("trusted", o.trusted)
      .string_array("exclude", o.exclude)
      .field("repeat", o.repeat)
      .end_object();
  return w.str();
}

std::string state_json(const State& s) {
  JsonWriter w;
  w.begin_object().field("kiln_bisect", kStateVersion).key("config").raw(s.config);
  w.field("modules_first_build", static_cast<uint64_t>(s.modules_first_build));
  if (s.have_items) {
    w.key("items").begin_array();
    for (const auto& item : s.items) w.begin_array().value(item.module).value(item.function).end_array();
    w.end_array();
    w.key("crates").begin_object();
    for (const auto& [id, crate] : s.crates) w.field(id, crate);
    w.end_object();
    w.string_array("excluded_in", std::vector<std::string>(s.excluded_in.begin(), s.excluded_in.end()));
  }
  w.key("probes").begin_array();
  for (const auto& p : s.probes)
    w.begin_object()
        .field("key", p.key)
        .field("what", p.what)
        .field("selected", static_cast<uint64_t>(p.selected))
        .field("verdict", p.fails ? "fail" : "pass")
        .field("reason", p.reason)
        .field("test_runs", p.test_runs)
        .field("build_seconds", p.build_seconds)
        .field("test_seconds", p.test_seconds)
        .end_object();
  w.end_array().end_object();
  return w.str() + "\n";
}

State read_state(const std::string& path) {
  std::string text = read_file(path);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto err = parser.parse(text).get(root))
    throw KilnError(kExitBadInput, path, std::string("not a kiln-bisect state: ") + json_error_reason(err));
  JsonContext ctx{path, 0};
  int64_t version = get_int(root, "kiln_bisect", ctx);
  if (version > kStateVersion)
    throw KilnError(kExitNewerSchema, path, "state version " + std::to_string(version) + " is newer than this kiln's");
  State s;
  simdjson::dom::element config;
  if (root["config"].get(config)) throw KilnError(kExitBadInput, path, "no config");
  s.config = simdjson::minify(config);
  s.modules_first_build = static_cast<size_t>(get_int_or(root, "modules_first_build", 0));
  simdjson::dom::array items, probes;
  if (!root["items"].get(items)) {
    s.have_items = true;
    for (auto item : items) {
      simdjson::dom::array pair;
      std::string_view module, function;
      if (item.get(pair) || pair.size() != 2 || pair.at(0).get(module) || pair.at(1).get(function))
        throw KilnError(kExitBadInput, path, "an item is not [module, function]");
      s.items.push_back({std::string(module), std::string(function)});
    }
    simdjson::dom::object crates;
    if (!root["crates"].get(crates))
      for (auto [id, crate] : crates) s.crates[std::string(id)] = std::string(crate.get_string().value_unsafe());
    for (const auto& id : get_string_array(root, "excluded_in")) s.excluded_in.insert(id);
  }
  if (root["probes"].get(probes)) throw KilnError(kExitBadInput, path, "no probes");
  for (auto p : probes) {
    ProbeRecord r;
    r.key = get_string(p, "key", ctx);
    r.what = get_string_or(p, "what", "");
    r.selected = static_cast<size_t>(get_int_or(p, "selected", 0));
    r.fails = get_string(p, "verdict", ctx) == "fail";
    r.reason = get_string_or(p, "reason", "");
    r.test_runs = static_cast<int>(get_int_or(p, "test_runs", 0));
    r.build_seconds = get_double_or(p, "build_seconds", 0);
    r.test_seconds = get_double_or(p, "test_seconds", 0);
    s.probes.push_back(r);
  }
  return s;
}

std::string plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

class Bisector {
 public:
  explicit Bisector(const BisectOptions& o) : o_(o) {}
  BisectOutcome run();

 private:
  void open_state();
  void save_state() { write_file_atomic(o_.state_dir + "/" + kStateName, state_json(state_)); }
  void say(const std::string& line);
  const ProbeRecord& probe(const std::string& what, const std::string& backend, const std::string& selection,
                           size_t selected, const std::string& purpose = "");
  ProbeRecord run_probe(const std::string& dir, const std::string& backend, const std::string& selection_file);
  int run_logged(const std::string& command, const std::string& log, double timeout, bool& timed_out,
                 double& seconds);
  std::string capture_command(const std::string& backend, const std::string& selection_file,
                              const std::string& user_command) const;
  void find_items();
  void note_new_modules();
  bool fails(const std::vector<size_t>& set, size_t candidates_left);
  BisectOutcome finish(BisectOutcome out, const std::vector<size_t>& culprits);

  BisectOptions o_;
  std::string corpus_;
  State state_;
  std::map<std::string, size_t> recorded_;  // probe key -> index in state_.probes
  size_t loaded_probes_ = 0, resumed_ = 0, steps_ = 0;
  bool loud_ = false;
};

void Bisector::say(const std::string& line) {
  append_line_locked(o_.state_dir + "/bisect.log", iso8601_now() + " " + line);
  if (loud_) std::fprintf(stderr, "kiln-bisect: %s\n", line.c_str());
}

void Bisector::open_state() {
  const std::string path = o_.state_dir + "/" + kStateName;
  const std::string config = config_json(o_);
  if (path_exists(path)) {
    state_ = read_state(path);
    if (state_.config != config)
      throw KilnError(kExitUsage, path,
                      "this state holds a bisect with other settings (" + state_.config +
                          "); give another --state directory, or remove this one to start again");
    for (size_t i = 0; i < state_.probes.size(); ++i) recorded_[state_.probes[i].key] = i;
    loaded_probes_ = state_.probes.size();
    say("resuming: " + plural(loaded_probes_, "probe", "probes") + " already made");
    return;
  }
  // A directory that is not a bisect's own is left alone: the state and reproducer
  // files must never land among someone's files.
  if (is_directory(o_.state_dir) && !is_empty_directory(o_.state_dir))
    throw KilnError(kExitUsage, o_.state_dir, "is not empty and holds no kiln-bisect state; give another --state");
  make_dirs(o_.state_dir + "/probes");
  state_.config = config;
  save_state();
}

std::string Bisector::capture_command(const std::string& backend, const std::string& selection_file,
                                      const std::string& user_command) const {
  std::string c = shell_quote(o_.kiln_capture) + " -o " + shell_quote(corpus_) + " --backend " + shell_quote(backend);
  if (!selection_file.empty()) c += " --candidate-functions " + shell_quote(selection_file);
  return c + " -- /bin/sh -c " + shell_quote(user_command);
}

int Bisector::run_logged(const std::string& command, const std::string& log, double timeout, bool& timed_out,
                         double& seconds) {
  ProcessOptions options;
  options.cwd = o_.build_dir;
  ProcessResult r = run_shell_supervised("{ " + command + "\n} >> " + shell_quote(log) + " 2>&1", options, timeout);
  timed_out = r.timed_out;
  seconds += r.wall_seconds;
  return r.exit_code;
}

// Clean, build through kiln-capture, then run the test through kiln-capture with the
// same settings (so that cargo finds everything built and only runs it) `repeat` times.
ProbeRecord Bisector::run_probe(const std::string& dir, const std::string& backend, const std::string& selection_file) {
  ProbeRecord r;
  bool timed_out = false;
  const std::string build_log = dir + "/build.log", test_log = dir + "/test.log";
  int status = run_logged(o_.clean_command, build_log, o_.build_timeout, timed_out, r.build_seconds);
  // Its own status: 1 says the candidate is innocent, which a broken clean does not.
  if (status != 0)
    throw KilnError(static_cast<ExitCode>(kBisectCleanFails), build_log,
                    timed_out ? "the clean command timed out"
                              : "the clean command failed (exit " + std::to_string(status) + ")");
  status = run_logged(capture_command(backend, selection_file, o_.build_command), build_log, o_.build_timeout,
                      timed_out, r.build_seconds);
  if (status != 0) {
    r.fails = true;
    r.reason = timed_out ? "build timed out" : "build exit " + std::to_string(status);
    return r;
  }
  int failed_runs = 0;
  for (int run = 0; run < o_.repeat; ++run) {
    status = run_logged(capture_command(backend, selection_file, o_.test_command), test_log, o_.test_timeout,
                        timed_out, r.test_seconds);
    r.test_runs++;
    if (status != 0) {
      failed_runs++;
      r.reason = timed_out ? "test timed out" : "test exit " + std::to_string(status);
    }
  }
  r.fails = failed_runs > 0;
  if (failed_runs && o_.repeat > 1) r.reason += " (" + std::to_string(failed_runs) + " of " + std::to_string(o_.repeat) + " runs failed)";
  return r;
}

// A probe, or its recorded verdict when this selection was probed before (also in an
// earlier, interrupted run of the same bisect).
// A `purpose` makes a probe of its own even where the same selection was probed before
// (the check of the culprits alone runs the test again; a recorded failure would say
// nothing of a flaky one), and is still found again on resuming.
const ProbeRecord& Bisector::probe(const std::string& what, const std::string& backend, const std::string& selection,
                                   size_t selected, const std::string& purpose) {
  const std::string key = xxh3_128_hex((purpose.empty() ? "" : purpose + '\0') + backend + '\0' + selection);
  if (auto it = recorded_.find(key); it != recorded_.end()) {
    if (it->second < loaded_probes_) resumed_++;
    return state_.probes[it->second];
  }
  char number[16];
  std::snprintf(number, sizeof number, "%04zu", state_.probes.size() + 1);
  const std::string dir = o_.state_dir + "/probes/" + number;
  make_dirs(dir);
  std::string selection_file;
  if (!selection.empty()) {
    selection_file = dir + "/selection";
    write_file_atomic(selection_file, selection);
  }
  ProbeRecord r = run_probe(dir, backend, selection_file);
  r.key = key;
  r.what = what;
  r.selected = selected;
  state_.probes.push_back(r);
  recorded_[key] = state_.probes.size() - 1;
  save_state();
  note_new_modules();
  return state_.probes.back();
}

// Selection by module id needs the same bitcode in every build: say so when a build
// made modules the first one did not.
void Bisector::note_new_modules() {
  size_t now = Corpus::open(corpus_).modules().size();
  if (state_.modules_first_build == 0) {
    state_.modules_first_build = now;
    save_state();
  } else if (now > state_.modules_first_build) {
    say("warning: the build is not reproducible: " + plural(now - state_.modules_first_build, "module", "modules") +
        " not made by the first build (a selection names modules by their bitcode's hash)");
  }
}

// What the candidate may emit: every function stamp compiles in the modules of the
// first (trusted) build, or every module for a back end that takes whole modules.
void Bisector::find_items() {
  Corpus corpus = Corpus::open(corpus_);
  std::vector<ModuleRecord> modules = corpus.modules();
  const std::set<std::string> excluded(o_.exclude.begin(), o_.exclude.end());
  const bool per_function = o_.candidate == "stamp";
  Progress progress("kiln-bisect: functions", modules.size());
  for (const auto& m : modules) {
    state_.crates[m.id] = m.crate;
    if (!per_function) {
      state_.items.push_back({m.id, ""});
    } else {
      ModuleCensus c = census_of_bytes(corpus.load_blob(m.id), m.id, m.id);
      for (const auto& v : c.function_verdicts) {
        if (!v.stamp()) continue;
        if (excluded.count(v.name)) state_.excluded_in.insert(m.id);
        else state_.items.push_back({m.id, v.name});
      }
    }
    progress.advance();
  }
  progress.finish();
  std::sort(state_.items.begin(), state_.items.end(),
            [](const BisectItem& a, const BisectItem& b) { return std::tie(a.module, a.function) < std::tie(b.module, b.function); });
  state_.have_items = true;
  save_state();
}

bool Bisector::fails(const std::vector<size_t>& set, size_t candidates_left) {
  std::set<std::string> modules;
  for (size_t i : set) modules.insert(state_.items[i].module);
  const std::string what = plural(set.size(), "function", "functions") + " in " + plural(modules.size(), "module", "modules");
  const size_t before = state_.probes.size();
  const ProbeRecord& r = probe(what, o_.candidate, selection_text(state_.items, set, state_.excluded_in), set.size());
  steps_++;
  say("step " + std::to_string(steps_) + ": " + std::to_string(candidates_left) + " candidates left; " + what + " on " +
      o_.candidate + ": " + (r.fails ? "FAIL (" + r.reason + ")" : "pass") +
      (state_.probes.size() == before ? " (recorded)" : ""));
  return r.fails;
}

BisectOutcome Bisector::run() {
  loud_ = o_.verbose || ::isatty(2);
  corpus_ = o_.state_dir + "/corpus";
  open_state();
  BisectOutcome out;
  out.state_dir = o_.state_dir;
  const ProbeRecord trusted = probe("everything on " + o_.trusted, o_.trusted, "", 0);
  say("everything on " + o_.trusted + ": " + (trusted.fails ? "FAIL (" + trusted.reason + ")" : "pass"));
  if (trusted.fails) {
    out.exit_code = kBisectTrustedFails;
    out.message = "the test fails with everything on " + o_.trusted + " (" + trusted.reason +
        "): there is no good state to bisect from; see " + o_.state_dir + "/probes/0001";
    return out;
  }
  if (!state_.have_items) find_items();
  out.items = state_.items.size();
  std::vector<size_t> all(state_.items.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  const ProbeRecord everything = probe("everything on " + o_.candidate, o_.candidate, selection_text(state_.items, all, state_.excluded_in), all.size());
  say("everything on " + o_.candidate + " (" + plural(all.size(), "function", "functions") + "): " +
      (everything.fails ? "FAIL (" + everything.reason + ")" : "pass"));
  if (!everything.fails) {
    out.exit_code = kBisectNothing;
    out.message = "nothing to bisect: the test passes with all " + plural(all.size(), "function", "functions") +
        " the candidate takes on " + o_.candidate;
    return finish(out, {});
  }
  std::vector<size_t> culprits = narrow_culprits(all, [&](const std::vector<size_t>& set, size_t left) { return fails(set, left); });
  if (culprits.empty()) {  // no function on the candidate (all excluded), and still a failure
    out.exit_code = kBisectInconclusive;
    out.message =
        "inconclusive: the test fails with no function on " + o_.candidate + " (a flaky test? try --repeat N)";
    return finish(out, {});
  }
  // The answer must fail on its own, in a run of its own (it does unless the test is
  // flaky or the build is not reproducible: then more repeats, --repeat, may help).
  if (!probe("the culprits alone", o_.candidate, selection_text(state_.items, culprits, state_.excluded_in),
             culprits.size(), "culprits alone")
           .fails) {
    out.exit_code = kBisectInconclusive;
    out.message = "inconclusive: the narrowed set passes on its own (a flaky test? try --repeat N)";
    return finish(out, {});
  }
  return finish(out, culprits);
}

BisectOutcome Bisector::finish(BisectOutcome out, const std::vector<size_t>& culprits) {
  out.items = state_.items.size();
  out.bound = 2 * std::log2(std::max<double>(2, static_cast<double>(out.items))) + 10;
  for (const auto& p : state_.probes) {
    out.probes++;
    out.test_runs += static_cast<size_t>(p.test_runs);
  }
  out.resumed_probes = resumed_;
  if (culprits.empty()) return out;
  for (size_t i : culprits) {
    const BisectItem& item = state_.items[i];
    out.culprits.push_back({item.module, state_.crates[item.module], item.function,
                            item.function.empty() ? "" : llvm::demangle(item.function)});
  }
  out.message = "the test fails because of " + plural(culprits.size(), "item", "items") + " on " + o_.candidate;
  ReproInput repro;
  repro.options = &o_;
  repro.corpus_dir = corpus_;
  repro.kiln_capture = o_.kiln_capture;
  repro.kiln_emit = dirname_of(o_.kiln_capture) + "/kiln-emit";
  repro.dir = o_.state_dir + "/repro";
  repro.culprits = out.culprits;
  repro.selection = selection_text(state_.items, culprits, state_.excluded_in);
  write_reproducer(repro);
  out.repro_dir = repro.dir;
  say(out.message + "; reproducer in " + repro.dir);
  return out;
}

}  // namespace

std::string BisectOutcome::to_json() const {
  JsonWriter w;
  w.begin_object().field("exit_code", exit_code).field("message", message).key("culprits").begin_array();
  for (const auto& c : culprits)
    w.begin_object()
        .field("module", c.module)
        .field("crate", c.crate)
        .field("function", c.function)
        .field("demangled", c.demangled)
        .end_object();
  w.end_array()
      .field("items", static_cast<uint64_t>(items))
      .field("probes", static_cast<uint64_t>(probes))
      .field("test_runs", static_cast<uint64_t>(test_runs))
      .field("resumed_probes", static_cast<uint64_t>(resumed_probes))
      .field("bound", bound)
      .field("repro", repro_dir)
      .field("state", state_dir)
      .end_object();
  return w.str() + "\n";
}

std::string BisectOutcome::to_text() const {
  std::string t = message + "\n";
  for (const auto& c : culprits) {
    t += "  module   " + c.module + " (crate " + (c.crate.empty() ? "?" : c.crate) + ")\n";
    if (!c.function.empty()) t += "  function " + c.function + "\n           " + c.demangled + "\n";
  }
  char figures[256];
  std::snprintf(figures, sizeof figures, "%zu probes, %zu test runs (%zu of them recorded before a resume) for %zu candidate items; the bound 2*log2(items)+10 is %.1f\n",
                probes, test_runs, resumed_probes, items, bound);
  t += figures;
  if (!repro_dir.empty()) t += "reproducer: " + repro_dir + "/reproduce.sh\n";
  t += "state and logs: " + state_dir + "\n";
  return t;
}

BisectOutcome run_bisect(const BisectOptions& options) {
  return Bisector(options).run();
}

}  // namespace kiln
