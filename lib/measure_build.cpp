// kiln-measure build: time a baseline and a candidate build command.
// Runs are interleaved pair by pair in random order so that slow drift of the
// machine (thermal throttling, a background job, a filling page cache) hits both
// variants alike instead of whichever happened to run second.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <random>

#include "error.h"
#include "fs.h"
#include "hwprofile.h"
#include "json.h"
#include "kiln_config.h"
#include "measure.h"
#include "process.h"
#include "progress.h"
#include "report.h"
#include "timeutil.h"

namespace kiln {

namespace {

constexpr int kBootstrapResamples = 10000;

std::string describe_result(const ProcessResult& result) {
  if (result.signaled) return "was killed by signal " + std::to_string(result.exit_code - 128);
  return "exited with status " + std::to_string(result.exit_code);
}

std::vector<std::string> variant_environment(const VariantResult& variant) {
  return {"CARGO_TARGET_DIR=" + variant.target_dir, "KILN_MEASURE_TARGET_DIR=" + variant.target_dir,
          "KILN_MEASURE_VARIANT=" + variant.name};
}

// Runs one command (prepare or build) for a variant with its environment. Output goes
// to the variant's log rather than the terminal, where it would bury the report.
// It runs in a process group of its own, so that a timeout stops the whole build.
ProcessResult run_for_variant(const VariantResult& variant, const std::string& command, const std::string& what,
                              double timeout_seconds) {
  append_log_line(variant.log_path, "=== kiln-measure: " + variant.name + " " + what + ": " + command);
  ProcessOptions options;
  options.set_env = variant_environment(variant);
  ProcessResult result;
  try {
    result =
        run_shell_supervised("exec >>" + shell_quote(variant.log_path) + " 2>&1\n" + command, options, timeout_seconds);
  } catch (const KilnError& e) {
    if (e.code() <= 128) throw;
    // Interrupted (SIGINT/SIGTERM): say which run was stopped, on one line.
    throw KilnError(e.code(), "",
                    variant.name + " " + what + " '" + command + "': " + e.what() + " (its output is in " +
                        variant.log_path + ")");
  }
  if (result.timed_out)
    throw KilnError(kExitFailed, "",
                    variant.name + " " + what + " timed out after " + format_fixed(timeout_seconds, 1) +
                        " s (--timeout) and was killed: '" + command + "' (its output is in " + variant.log_path + ")");
  if (result.exit_code != 0)
    throw KilnError(kExitFailed, "",
                    variant.name + " " + what + " failed: '" + command + "' " + describe_result(result) +
                        " (its output is in " + variant.log_path + ")");
  return result;
}

VariantResult make_variant(const std::string& name, const std::string& command, const std::string& workdir) {
  VariantResult v;
  v.name = name;
  v.command = command;
  v.target_dir = workdir + "/" + name;
  v.log_path = workdir + "/" + name + ".log";
  make_dirs(v.target_dir);
  return v;
}

void validate(const BuildOptions& options) {
  if (options.baseline_command.empty() || options.candidate_command.empty())
    throw KilnError(kExitUsage, "", "both --baseline and --candidate commands are needed");
  if (options.runs < 1) throw KilnError(kExitUsage, "", "--runs must be at least 1");
  if (options.warmup < 0) throw KilnError(kExitUsage, "", "--warmup cannot be negative");
  if (!(options.timeout_seconds >= 0))
    throw KilnError(kExitUsage, "", "--timeout must be a positive number of seconds");
}

uint64_t fresh_seed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

std::string code_span(const std::string& text) {
  // Markdown: a command containing a backtick needs a longer fence.
  return text.find('`') == std::string::npos ? "`" + text + "`" : "`` " + text + " ``";
}

void write_summary(JsonWriter& w, const char* key, const Summary& s) {
  w.key(key).begin_object();
  w.field("median", s.median).field("min", s.min).field("max", s.max).field("mean", s.mean);
  w.end_object();
}

void write_interval(JsonWriter& w, const char* key, const RatioInterval& r) {
  w.key(key).begin_object().field("value", r.ratio).field("low", r.low).field("high", r.high).end_object();
}

std::vector<std::string> variant_row(const VariantResult& v, int runs) {
  return {v.name,
          std::to_string(runs),
          format_fixed(v.wall_seconds.median, 3),
          format_fixed(v.wall_seconds.min, 3),
          format_fixed(v.wall_seconds.max, 3),
          format_fixed(v.cpu_seconds.median, 3),
          format_fixed(v.peak_rss_kib.median / 1024.0, 1)};
}

}  // namespace

RatioInterval wall_ratio_interval(const std::vector<double>& baseline_wall, const std::vector<double>& candidate_wall) {
  // The runs come in pairs, one of each variant one after the other: whole pairs are
  // resampled, so that the machine's drift between pairs, which moves both alike,
  // does not widen the interval. Runs that do not pair up (an edited report) are
  // resampled each sample apart.
  if (baseline_wall.size() == candidate_wall.size())
    return ratio_of_medians_paired_bootstrap(baseline_wall, candidate_wall, kBootstrapResamples);
  return ratio_of_medians_bootstrap(baseline_wall, candidate_wall, kBootstrapResamples);
}

RatioInterval speedup_interval(const std::vector<double>& baseline_wall, const std::vector<double>& candidate_wall) {
  // The speedup is baseline/candidate: the ratio of medians with the roles swapped,
  // so that its point estimate is exactly the quotient the gate recomputes.
  return wall_ratio_interval(candidate_wall, baseline_wall);
}

BuildReport measure_build(const BuildOptions& options) {
  validate(options);
  // Without a prepare command each run starts from what the one before left: after the
  // warm-up, cargo and make find everything built and time a rebuild with nothing to
  // do, unless the command cleans for itself. Said (at a terminal here, and in the
  // report's table), not refused: an incremental rebuild is sometimes what is measured.
  if (options.prepare_command.empty() && ::isatty(2))
    std::fprintf(stderr,
                 "kiln-measure: note: no --prepare: each run starts from what the last one left (for clean "
                 "builds, --prepare 'cargo clean' or the like)\n");
  BuildReport report;
  report.timestamp = iso8601_now();
  report.hardware_json = hardware_profile_json();
  report.prepare_command = options.prepare_command;
  report.runs = options.runs;
  report.warmup = options.warmup;
  report.seed = options.seed ? *options.seed : fresh_seed();
  bool temporary = options.workdir.empty();
  report.workdir = temporary ? make_temp_dir("kiln-measure") : absolute_path(options.workdir);
  report.baseline = make_variant("baseline", options.baseline_command, report.workdir);
  report.candidate = make_variant("candidate", options.candidate_command, report.workdir);
  VariantResult* variants[2] = {&report.baseline, &report.candidate};

  Progress progress("kiln-measure build", static_cast<size_t>(2 * (options.warmup + options.runs)));
  auto prepare = [&](const VariantResult& v) {
    if (!options.prepare_command.empty())
      run_for_variant(v, options.prepare_command, "prepare", options.timeout_seconds);
  };
  for (int w = 1; w <= options.warmup; ++w) {
    for (VariantResult* v : variants) {
      prepare(*v);
      run_for_variant(*v, v->command, "warm-up " + std::to_string(w), options.timeout_seconds);
      progress.advance();
    }
  }

  std::mt19937_64 order_rng(report.seed);
  std::vector<double> wall[2], cpu[2], rss[2];
  for (int pair = 1; pair <= options.runs; ++pair) {
    bool candidate_first = (order_rng() & 1) != 0;
    for (int slot = 0; slot < 2; ++slot) {
      int which = candidate_first ? 1 - slot : slot;
      VariantResult& v = *variants[which];
      prepare(v);
      ProcessResult r = run_for_variant(v, v.command, "run " + std::to_string(pair), options.timeout_seconds);
      BuildRun run;
      run.order = static_cast<int>(report.timed_runs.size()) + 1;
      run.pair = pair;
      run.variant = v.name;
      run.wall_seconds = r.wall_seconds;
      run.user_seconds = r.user_seconds;
      run.sys_seconds = r.sys_seconds;
      run.peak_rss_kib = r.peak_rss_kib;
      run.exit_status = r.exit_code;
      report.timed_runs.push_back(run);
      wall[which].push_back(r.wall_seconds);
      cpu[which].push_back(r.user_seconds + r.sys_seconds);
      rss[which].push_back(static_cast<double>(r.peak_rss_kib));
      progress.advance();
    }
  }
  progress.finish();

  for (int which = 0; which < 2; ++which) {
    variants[which]->wall_seconds = summarize(wall[which]);
    variants[which]->cpu_seconds = summarize(cpu[which]);
    variants[which]->peak_rss_kib = summarize(rss[which]);
  }
  report.wall_ratio = wall_ratio_interval(wall[0], wall[1]);
  report.speedup = speedup_interval(wall[0], wall[1]);

  // A temporary workdir holds only build outputs nobody asked to keep; on failure
  // (an exception above) it stays, since the error message points at its logs.
  if (temporary) {
    remove_tree(report.workdir);
    report.workdir_kept = false;
  }
  return report;
}

std::string build_report_json(const BuildReport& report) {
  JsonWriter w;
  w.begin_object();
  w.field("schema", kBuildReportSchema).field("version", kMeasureReportVersion);
  w.field("kiln_version", KILN_VERSION).field("timestamp", report.timestamp);
  w.field("workdir", report.workdir).field("workdir_kept", report.workdir_kept);
  w.field("runs_per_variant", report.runs).field("warmup_per_variant", report.warmup);
  w.field("order_seed", report.seed);
  if (report.prepare_command.empty()) w.key("prepare").null();
  else w.field("prepare", report.prepare_command);
  w.key("variants").begin_object();
  for (const VariantResult* v : {&report.baseline, &report.candidate}) {
    w.key(v->name).begin_object();
    w.field("command", v->command).field("target_dir", v->target_dir);
    write_summary(w, "wall_seconds", v->wall_seconds);
    write_summary(w, "cpu_seconds", v->cpu_seconds);
    write_summary(w, "peak_rss_kib", v->peak_rss_kib);
    w.end_object();
  }
  w.end_object();
  write_interval(w, "wall_ratio", report.wall_ratio);
  write_interval(w, "speedup", report.speedup);
  w.key("bootstrap").begin_object();
  w.field("confidence", 0.95).field("resamples", kBootstrapResamples).field("seed", kDefaultBootstrapSeed);
  w.field("resampled", "pairs");
  w.end_object();
  w.key("runs").begin_array();
  for (const BuildRun& r : report.timed_runs) {
    w.begin_object().field("order", r.order).field("pair", r.pair).field("variant", r.variant);
    w.field("wall_seconds", r.wall_seconds).field("user_seconds", r.user_seconds);
    w.field("sys_seconds", r.sys_seconds).field("cpu_seconds", r.user_seconds + r.sys_seconds);
    w.field("peak_rss_kib", static_cast<int64_t>(r.peak_rss_kib)).field("exit_status", r.exit_status);
    w.end_object();
  }
  w.end_array();
  w.key("hardware").raw(report.hardware_json);
  w.end_object();
  return w.str() + "\n";
}

std::string build_report_markdown(const BuildReport& report) {
  std::string out = markdown_table(
      {"variant", "runs", "wall median (s)", "wall min (s)", "wall max (s)", "CPU median (s)", "peak RSS median (MiB)"},
      {variant_row(report.baseline, report.runs), variant_row(report.candidate, report.runs)},
      {Align::kLeft, Align::kRight, Align::kRight, Align::kRight, Align::kRight, Align::kRight, Align::kRight});
  const RatioInterval& r = report.wall_ratio;
  const RatioInterval& s = report.speedup;
  out += "\ncandidate/baseline wall time: " + format_fixed(r.ratio, 3) + " (95% CI " + format_fixed(r.low, 3) + "–" +
      format_fixed(r.high, 3) + "); speedup " + format_fixed(s.ratio, 3) + "× (95% CI " + format_fixed(s.low, 3) +
      "×–" + format_fixed(s.high, 3) + "×)\n\n";
  out += "- baseline: " + code_span(report.baseline.command) + "\n";
  out += "- candidate: " + code_span(report.candidate.command) + "\n";
  if (!report.prepare_command.empty()) out += "- prepare before each run: " + code_span(report.prepare_command) + "\n";
  else out += "- no prepare command: each run started from what the one before left\n";
  out += "- " + std::to_string(report.runs) + " timed runs per variant after " + std::to_string(report.warmup) +
      " warm-up each; pairs in random order (seed " + std::to_string(report.seed) + ")\n";
  return out;
}

std::string build_report_svg(const BuildReport& report) {
  std::vector<ChartSeries> series = {{report.baseline.name, {}}, {report.candidate.name, {}}};
  for (const BuildRun& r : report.timed_runs)
    series[r.variant == report.baseline.name ? 0 : 1].values.push_back(r.wall_seconds);
  return strip_chart_svg(series, "Build wall time per run (" + std::to_string(report.runs) + " runs per variant)",
                         "seconds");
}

void check_report_outputs(const ReportOutputs& outputs) {
  for (const std::string* path : {&outputs.json_path, &outputs.markdown_path, &outputs.svg_path}) {
    if (path->empty() || inherited_descriptor(*path) >= 0) continue;
    struct stat st {};
    if (::stat(path->c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) throw KilnError(kExitIo, *path, "cannot write a report here: it is a directory");
      if (!S_ISREG(st.st_mode)) continue;  // a device or FIFO, written in place
    }
    const std::string dir = dirname_of(absolute_path(*path));
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
      throw KilnError(kExitIo, *path, "cannot write a report here: " + dir + ": " + errno_reason(errno));
  }
}

int run_build_command(const BuildOptions& options, const ReportOutputs& outputs) {
  check_report_outputs(outputs);
  BuildReport report = measure_build(options);
  std::string markdown = build_report_markdown(report);
  // The table first: what was measured is on the terminal even if a file fails.
  std::fputs(markdown.c_str(), stdout);
  std::fflush(stdout);
  if (!outputs.json_path.empty()) write_file_atomic(outputs.json_path, build_report_json(report));
  if (!outputs.markdown_path.empty()) write_file_atomic(outputs.markdown_path, markdown);
  if (!outputs.svg_path.empty()) write_file_atomic(outputs.svg_path, build_report_svg(report));
  return kExitOk;
}

}  // namespace kiln
