// kiln-measure: does a candidate back end build faster, and how big is its code?
//   build  times two build commands, interleaved, each in its own target directory
//   size   compares section sizes of two stripped ELF files
//   gate   turns a build or size report into a pass/fail verdict for CI
// Each job is a library function returning plain data (so tests and other tools can
// use it) plus a run_*_command that writes the report files and prints the table.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stats.h"

namespace kiln {

inline constexpr const char* kBuildReportSchema = "kiln-measure-build";
inline constexpr const char* kSizeReportSchema = "kiln-measure-size";
inline constexpr const char* kPhasesReportSchema = "kiln-measure-phases";
inline constexpr int64_t kMeasureReportVersion = 1;  // the newest version this kiln reads

// Where run_*_command writes its report; an empty path writes nothing.
struct ReportOutputs {
  std::string json_path;
  std::string markdown_path;
  std::string svg_path;  // build only
};

// Throws KilnError(kExitIo) naming the first output that cannot be written (a
// directory, a missing or read-only directory): asked before a measurement, so that
// its runs are not lost to a mistyped --json path at the end.
void check_report_outputs(const ReportOutputs& outputs);

// ---- build -------------------------------------------------------------------------

struct BuildOptions {
  std::string baseline_command;  // run with /bin/sh -c
  std::string candidate_command;
  std::string prepare_command;   // before every run, untimed; empty: none
  int runs = 5;                  // timed runs per variant
  int warmup = 1;                // untimed runs per variant before the timed ones
  std::string workdir;           // empty: a fresh temporary directory, removed on success
  std::optional<uint64_t> seed;  // run-order seed; unset: drawn at random
  double timeout_seconds = 0;    // per prepare, warm-up or timed run; 0: none
};

struct BuildRun {
  int order = 0;        // 1-based position among all timed runs
  int pair = 0;         // 1-based; each pair holds one run of each variant, in random order
  std::string variant;  // "baseline" or "candidate"
  double wall_seconds = 0, user_seconds = 0, sys_seconds = 0;
  long peak_rss_kib = 0;
  int exit_status = 0;
};

struct VariantResult {
  std::string name;
  std::string command;
  std::string target_dir;                           // exported as CARGO_TARGET_DIR and KILN_MEASURE_TARGET_DIR
  std::string log_path;                             // the commands' stdout and stderr
  Summary wall_seconds, cpu_seconds, peak_rss_kib;  // cpu = user + sys
};

struct BuildReport {
  std::string timestamp;      // when the measurement started (UTC)
  std::string hardware_json;  // hardware_profile_json()
  std::string workdir;
  bool workdir_kept = true;  // false when a temporary workdir was removed afterwards
  std::string prepare_command;
  uint64_t seed = 0;
  int runs = 0, warmup = 0;
  VariantResult baseline, candidate;
  std::vector<BuildRun> timed_runs;  // in the order they ran
  RatioInterval wall_ratio;          // candidate / baseline wall medians, 95% CI
  RatioInterval speedup;             // baseline / candidate wall medians, 95% CI
};

// candidate / baseline wall medians with its 95% bootstrap interval over the runs'
// pairs (the report's fixed resamples and seed; kiln-measure(1)).
RatioInterval wall_ratio_interval(const std::vector<double>& baseline_wall, const std::vector<double>& candidate_wall);
// baseline / candidate, the same way. measure_build and the gate both use it, so that
// the interval the gate prints is computed the same way as the speedup it checks.
RatioInterval speedup_interval(const std::vector<double>& baseline_wall, const std::vector<double>& candidate_wall);

// Runs the warm-ups and the interleaved timed runs. A run that exits non-zero, is
// killed or passes its timeout (its whole process group is then killed) throws
// KilnError(kExitFailed) naming the variant, the command, its status and the log
// file; a temporary workdir is then kept for inspection. SIGINT/SIGTERM/SIGHUP are
// forwarded to the running command's process group (run_shell_supervised), and once
// it has exited KilnError with code 128 + the signal is thrown.
BuildReport measure_build(const BuildOptions& options);
std::string build_report_json(const BuildReport& report);
std::string build_report_markdown(const BuildReport& report);
std::string build_report_svg(const BuildReport& report);
// measure_build, then the report files; prints the Markdown to stdout. Returns 0.
int run_build_command(const BuildOptions& options, const ReportOutputs& outputs);

// ---- size --------------------------------------------------------------------------

struct SectionSizes {
  uint64_t text = 0;      // all .text* sections
  uint64_t data = 0;      // .data*
  uint64_t rodata = 0;    // .rodata*
  uint64_t eh_frame = 0;  // .eh_frame
  uint64_t file = 0;      // the whole file
};

// Section sizes of an ELF object, executable, shared object or archive of objects, as
// it is. Throws KilnError(kExitBadInput) naming the file when it is not ELF.
SectionSizes read_section_sizes(const std::string& path);
// The same after stripping a copy with `strip --strip-debug --discard-all`, so that
// debug info and local symbols do not drown the code. No strip: kExitMissingTool.
SectionSizes stripped_section_sizes(const std::string& path);

struct SizeRow {
  std::string section;  // ".text", ".data", ".rodata", ".eh_frame", "total"
  uint64_t baseline = 0, candidate = 0;
  double ratio = 0;  // candidate / baseline; NaN when the baseline has none
};

struct SizeReport {
  std::string timestamp;
  std::string baseline_path, candidate_path;
  std::vector<SizeRow> rows;
};

SizeReport measure_size(const std::string& baseline_path, const std::string& candidate_path);
std::string size_report_json(const SizeReport& report);
std::string size_report_markdown(const SizeReport& report);
int run_size_command(const std::string& baseline_path, const std::string& candidate_path, const ReportOutputs& outputs);

// ---- phases ------------------------------------------------------------------------
// Where a build through kiln-capture spent its time, from the corpus it wrote.

struct PhaseTotal {
  std::string name;
  double seconds = 0;  // for routes: a count
};

struct CratePhases {
  std::string crate;
  size_t invocations = 0, units = 0;
  double seconds = 0;  // its invocations' phases, summed
  std::vector<PhaseTotal> phases;
};

struct TimelineSpan {
  std::string crate;
  double start = 0;  // seconds after the build's first invocation began
  std::vector<std::pair<std::string, double>> phases;
};

struct PhasesReport {
  std::string corpus;
  double wall = 0;  // the first invocation's start to the last one's end
  size_t invocations = 0, units = 0, cache_hits = 0, cache_misses = 0;
  std::vector<PhaseTotal> phases;       // invocations' phases (startup, rustc, store, emit, link), summed
  std::vector<PhaseTotal> emit_stages;  // kiln-capture's receipts' stages, summed (CPU seconds of all units)
  std::vector<PhaseTotal> routes;       // stamp's reader routes, counted
  // kiln-capture --route plugin: the plugin's receipts (plugin.jsonl), summed: units seen,
  // those stamp took whole, and its time in rustc (export, stages, object; CPU seconds).
  size_t plugin_units = 0, plugin_stamp_units = 0;
  std::vector<PhaseTotal> plugin_stages;
  std::vector<CratePhases> crates;      // the slowest first
  std::vector<TimelineSpan> timeline;   // by start
  double phase(const std::string& name) const;
};

// Throws KilnError like Corpus::open for a missing or corrupt corpus.
PhasesReport measure_phases(const std::string& corpus_dir);
std::string phases_report_json(const PhasesReport& report);
std::string phases_report_markdown(const PhasesReport& report);
std::string phases_report_svg(const PhasesReport& report);
int run_phases_command(const std::string& corpus_dir, const ReportOutputs& outputs);

// ---- gate --------------------------------------------------------------------------

// "10%", "1.1x" and "0.1" all mean a speedup of at least 1.10; "-5%" allows a 5%
// slowdown. Throws KilnError(kExitUsage) for anything else.
double parse_min_speedup(const std::string& text);
// "1.5", "1.5x" and "50%" (growth) all mean candidate/baseline <= 1.5.
double parse_max_size_ratio(const std::string& text);
double parse_max_memory_ratio(const std::string& text);  // as parse_max_size_ratio, or "off" (0)

struct GateThresholds {
  double min_speedup = 1.10;     // applied to build reports
  double max_size_ratio = 1.50;  // applied to size reports
  // Applied to build reports: candidate/baseline peak RSS medians (the largest process
  // of the build, the compiler's footprint); 0 leaves memory unchecked.
  double max_memory_ratio = 1.50;
};

struct GateCheck {
  std::string report_path;
  std::string name;  // "speedup" or "size .text" / "size total"
  double value = 0;  // measured
  double limit = 0;  // threshold
  bool pass = false;
  std::string detail;  // the numbers behind value
};

// Reads one report of either schema. Throws KilnError(kExitBadInput) when it is not
// JSON or not a kiln-measure report, KilnError(kExitNewerSchema) when its version is
// newer than kMeasureReportVersion.
std::vector<GateCheck> evaluate_gate(const std::string& report_path, const GateThresholds& thresholds);
std::string format_gate_check(const GateCheck& check);  // "PASS speedup 1.23x >= 1.10x ..."
// Prints every check of every report; 0 when all pass, 1 otherwise.
int run_gate_command(const std::vector<std::string>& report_paths, const GateThresholds& thresholds);

}  // namespace kiln
