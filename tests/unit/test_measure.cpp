// kiln-measure: statistics, report helpers, the gate, size and build measurement.
// Builds are tiny shell commands and objects come from `cc -c`, so this stays fast.
#include <catch2/catch.hpp>
#include <simdjson.h>

#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "backend_cmd.h"
#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "hwprofile.h"
#include "measure.h"
#include "process.h"
#include "report.h"
#include "scratch_dir.h"
#include "stats.h"
#include "test_helpers.h"

using namespace kiln;
using namespace kiln_test;

namespace {

template <class F>
std::optional<KilnError> error_of(F&& f) {
  try {
    f();
  } catch (const KilnError& e) {
    return e;
  }
  return std::nullopt;
}

// The exit code of the KilnError f throws; 0 when it throws none.
template <class F>
int error_code_of(F&& f) {
  auto e = error_of(std::forward<F>(f));
  return e ? static_cast<int>(e->code()) : 0;
}

size_t line_count(const std::string& path) {
  std::string text = read_file(path);
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

size_t occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// A build report with chosen wall medians, written as a real report file.
std::string write_build_report(const std::string& dir, double baseline_median, double candidate_median,
                               double baseline_rss_kib = 200000, double candidate_rss_kib = 200000) {
  BuildReport report;
  report.baseline.peak_rss_kib = summarize({baseline_rss_kib});
  report.candidate.peak_rss_kib = summarize({candidate_rss_kib});
  report.timestamp = "2026-01-01T00:00:00Z";
  report.hardware_json = "{}";
  report.runs = 1;
  report.baseline.name = "baseline";
  report.candidate.name = "candidate";
  report.baseline.wall_seconds = {baseline_median, baseline_median, baseline_median, baseline_median};
  report.candidate.wall_seconds = {candidate_median, candidate_median, candidate_median, candidate_median};
  report.wall_ratio = {candidate_median / baseline_median, candidate_median / baseline_median,
                       candidate_median / baseline_median};
  report.speedup = {baseline_median / candidate_median, baseline_median / candidate_median,
                    baseline_median / candidate_median};
  std::string path = dir + "/build.json";
  write_file_atomic(path, build_report_json(report));
  return path;
}

// A build report with the given timed runs (medians and intervals as measure_build
// computes them), written as a real report file.
std::string write_build_report_with_runs(const std::string& dir, const std::vector<double>& baseline_walls,
                                         const std::vector<double>& candidate_walls) {
  BuildReport report;
  report.timestamp = "2026-01-01T00:00:00Z";
  report.hardware_json = "{}";
  report.runs = static_cast<int>(baseline_walls.size());
  report.baseline.name = "baseline";
  report.candidate.name = "candidate";
  report.baseline.wall_seconds = summarize(baseline_walls);
  report.candidate.wall_seconds = summarize(candidate_walls);
  report.baseline.peak_rss_kib = report.candidate.peak_rss_kib = summarize({200000});
  for (size_t i = 0; i < baseline_walls.size(); ++i) {
    for (int which = 0; which < 2; ++which) {
      BuildRun run;
      run.order = static_cast<int>(report.timed_runs.size()) + 1;
      run.pair = static_cast<int>(i) + 1;
      run.variant = which ? "candidate" : "baseline";
      run.wall_seconds = which ? candidate_walls[i] : baseline_walls[i];
      report.timed_runs.push_back(run);
    }
  }
  report.wall_ratio = ratio_of_medians_bootstrap(baseline_walls, candidate_walls);
  report.speedup = speedup_interval(baseline_walls, candidate_walls);
  std::string path = dir + "/build-runs.json";
  write_file_atomic(path, build_report_json(report));
  return path;
}

// The "95% CI LOWx-HIGHx" a gate line prints, as numbers.
std::pair<double, double> printed_interval(const std::string& line) {
  size_t at = line.find("95% CI ");
  REQUIRE(at != std::string::npos);
  double low = std::stod(line.substr(at + 7));
  size_t dash = line.find("x-", at);
  REQUIRE(dash != std::string::npos);
  return {low, std::stod(line.substr(dash + 2))};
}

std::string write_size_report(const std::string& dir, uint64_t text_base, uint64_t text_cand, uint64_t total_base,
                              uint64_t total_cand) {
  SizeReport report;
  report.timestamp = "2026-01-01T00:00:00Z";
  report.rows = {{".text", text_base, text_cand, 0}, {"total", total_base, total_cand, 0}};
  std::string path = dir + "/size.json";
  write_file_atomic(path, size_report_json(report));
  return path;
}

void compile_c(const std::string& dir, const std::string& name, const std::string& source) {
  write_file_atomic(dir + "/" + name + ".c", source);
  ProcessResult r = run_process({"cc", "-g", "-O1", "-c", dir + "/" + name + ".c", "-o", dir + "/" + name + ".o"});
  REQUIRE(r.exit_code == 0);
}

// Whether pid is gone (or a zombie waiting for its new parent to reap it).
bool process_gone(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    size_t close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z') return true;
    ::usleep(10000);
  }
  return false;
}

pid_t pid_in_file(const std::string& path) {
  for (int i = 0; i < 100 && !path_exists(path); ++i) ::usleep(10000);
  return static_cast<pid_t>(std::stol(read_file(path)));
}


}  // namespace

TEST_CASE("median, minimum, maximum and mean of samples", "[measure][stats]") {
  CHECK(median({3, 1, 2}) == 2);
  CHECK(median({4, 1, 3, 2}) == Approx(2.5));
  CHECK(minimum({3, -1, 2}) == -1);
  CHECK(maximum({3, -1, 2}) == 3);
  CHECK(mean({1, 2, 3, 6}) == Approx(3));
  Summary s = summarize({5, 1, 3});
  CHECK(s.median == 3);
  CHECK(s.min == 1);
  CHECK(s.max == 5);
  CHECK(quantile({0, 10}, 0.25) == Approx(2.5));
  CHECK_THROWS_AS(median({}), std::invalid_argument);
}

TEST_CASE("bootstrap of identical samples gives ratio 1 with a zero-width interval", "[measure][stats]") {
  std::vector<double> same(7, 1.25);
  RatioInterval r = ratio_of_medians_bootstrap(same, same);
  CHECK(r.ratio == 1.0);
  CHECK(r.low == 1.0);
  CHECK(r.high == 1.0);
}

TEST_CASE("bootstrap finds a candidate twice as slow, deterministically", "[measure][stats]") {
  std::vector<double> baseline = {1.00, 1.03, 0.97, 1.01, 0.99, 1.02, 0.98, 1.00, 1.04, 0.96};
  std::vector<double> candidate;
  for (double v : baseline) candidate.push_back(2 * v);
  RatioInterval r = ratio_of_medians_bootstrap(baseline, candidate, 4000, 7);
  CHECK(r.ratio == Approx(2.0));
  CHECK(r.low <= 2.0);
  CHECK(r.high >= 2.0);
  CHECK(r.low > 1.8);
  CHECK(r.high < 2.2);
  RatioInterval again = ratio_of_medians_bootstrap(baseline, candidate, 4000, 7);
  CHECK(again.low == r.low);
  CHECK(again.high == r.high);
}

// Runs that slow down pair by pair (the machine drifting), the candidate 10% faster in
// every pair: drawn apart, the drift is all in the interval; drawn by pairs, it is not.
TEST_CASE("the speedup's interval resamples pairs, so drift between pairs stays out of it", "[measure][stats]") {
  std::vector<double> baseline, candidate;
  for (int k = 0; k < 10; ++k) {
    baseline.push_back(1.0 + 0.3 * k + 0.01 * (k % 3));
    candidate.push_back(baseline.back() / 1.1 + 0.005 * (k % 2));
  }
  RatioInterval paired = speedup_interval(baseline, candidate);
  RatioInterval apart = ratio_of_medians_bootstrap(candidate, baseline, 10000);
  CHECK(paired.ratio == apart.ratio);
  CHECK(paired.low > 1.05);
  CHECK(paired.high < 1.15);
  CHECK(apart.low < 0.8);  // what the interval was before
  CHECK(apart.high > 1.4);
  CHECK(wall_ratio_interval(baseline, candidate).high < 1 / 1.05);
  // Samples of different sizes cannot be paired: each sample drawn apart then.
  candidate.pop_back();
  CHECK(speedup_interval(baseline, candidate).low < 0.8);
  CHECK_THROWS_AS(ratio_of_medians_paired_bootstrap(baseline, candidate), std::invalid_argument);
}

TEST_CASE("markdown tables are aligned and escape pipes", "[measure][report]") {
  std::string table =
      markdown_table({"name", "value"}, {{"a|b", "1"}, {"long name here", "12345"}}, {Align::kLeft, Align::kRight});
  std::istringstream lines(table);
  std::string line;
  std::set<size_t> widths;
  int rows = 0;
  while (std::getline(lines, line)) {
    widths.insert(line.size());
    ++rows;
  }
  CHECK(rows == 4);
  CHECK(widths.size() == 1);
  CHECK(contains(table, "a\\|b"));
  CHECK(contains(table, "---: |"));
  CHECK(contains(table, "|     1 |"));
}

TEST_CASE("the strip chart draws one dot per value and a median per series", "[measure][report]") {
  std::string svg =
      strip_chart_svg({{"baseline", {1.0, 1.1, 1.2}}, {"candidate <new>", {0.5, 0.6}}}, "Wall time", "seconds");
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(contains(svg, "</svg>"));
  CHECK(occurrences(svg, "<circle") == 5);
  CHECK(occurrences(svg, ">median ") == 2);
  CHECK(contains(svg, "candidate &lt;new&gt;"));
  CHECK(contains(svg, ">seconds<"));
  CHECK(contains(svg, "median 1.10"));
}

TEST_CASE("gate thresholds accept percentages, factors and fractions", "[measure][gate]") {
  CHECK(parse_min_speedup("10%") == Approx(1.10));
  CHECK(parse_min_speedup("1.1x") == Approx(1.10));
  CHECK(parse_min_speedup("0.1") == Approx(1.10));
  CHECK(parse_min_speedup("-5%") == Approx(0.95));
  CHECK(parse_max_size_ratio("1.5") == Approx(1.5));
  CHECK(parse_max_size_ratio("1.5x") == Approx(1.5));
  CHECK(parse_max_size_ratio("50%") == Approx(1.5));
  for (const char* bad : {"1.1", "abc", "", "10%%", "-200%"}) {
    auto e = error_of([&] { parse_min_speedup(bad); });
    REQUIRE(e);
    CHECK(e->code() == kExitUsage);
  }
  CHECK(error_code_of([] { parse_max_size_ratio("big"); }) == kExitUsage);
}

TEST_CASE("gate passes and fails build reports on the speedup", "[measure][gate]") {
  ScratchDir dir;
  std::string path = write_build_report(dir.path, 2.0, 1.0);  // candidate twice as fast
  GateThresholds lenient;
  lenient.min_speedup = parse_min_speedup("10%");
  auto checks = evaluate_gate(path, lenient);
  REQUIRE(checks.size() == 2);  // the speedup, then the peak memory
  CHECK(checks[0].name == "speedup");
  CHECK(checks[0].value == Approx(2.0));
  CHECK(checks[0].pass);
  CHECK(contains(format_gate_check(checks[0]), "PASS"));
  CHECK(run_gate_command({path}, lenient) == kExitOk);

  GateThresholds strict;
  strict.min_speedup = parse_min_speedup("2.5x");
  CHECK_FALSE(evaluate_gate(path, strict)[0].pass);
  CHECK(run_gate_command({path}, strict) == kExitFailed);
}

TEST_CASE("a gate line that fails by less than its three decimals shows more", "[measure][gate]") {
  ScratchDir dir;
  // 0.3312 s -> 0.33133 s: a speedup of 0.99961x, which "no slower" (0%) fails.
  std::string path = write_build_report(dir.path, 0.3312, 0.33133);
  GateThresholds no_slower;
  no_slower.min_speedup = parse_min_speedup("0%");
  auto checks = evaluate_gate(path, no_slower);
  CHECK_FALSE(checks[0].pass);
  const std::string line = format_gate_check(checks[0]);
  INFO(line);
  CHECK(contains(line, "FAIL  speedup 0.999608x >= 1.000000x"));
  // Apart by more than the third decimal: three.
  CHECK(contains(format_gate_check(evaluate_gate(write_build_report(dir.path, 2.0, 1.0), no_slower)[0]),
                 "PASS  speedup 2.000x >= 1.000x"));
}

TEST_CASE("gate checks a build's peak memory against --max-memory-ratio", "[measure][gate]") {
  ScratchDir dir;
  // Twice as fast, with 1.6 times the footprint: the speed passes, the memory does not.
  std::string path = write_build_report(dir.path, 2.0, 1.0, 100000, 160000);
  GateThresholds thresholds;  // at most 1.5x
  auto checks = evaluate_gate(path, thresholds);
  REQUIRE(checks.size() == 2);
  CHECK(checks[0].pass);
  CHECK(checks[1].name == "peak memory");
  CHECK(checks[1].value == Approx(1.6));
  CHECK_FALSE(checks[1].pass);
  CHECK(contains(format_gate_check(checks[1]), "FAIL  peak memory 1.600x <= 1.500x"));
  CHECK(run_gate_command({path}, thresholds) == kExitFailed);
  thresholds.max_memory_ratio = parse_max_memory_ratio("70%");
  CHECK(evaluate_gate(path, thresholds)[1].pass);
  thresholds.max_memory_ratio = parse_max_memory_ratio("off");
  CHECK(evaluate_gate(path, thresholds).size() == 1);
  CHECK(run_gate_command({path}, thresholds) == kExitOk);
  CHECK(error_code_of([] { parse_max_memory_ratio("lots"); }) == kExitUsage);
  // A report that recorded no memory (0 KiB, or no field) cannot pass a memory limit.
  path = write_build_report(dir.path, 2.0, 1.0, 0, 0);
  CHECK_FALSE(evaluate_gate(path, GateThresholds{})[1].pass);
  path = write_build_report(dir.path, 2.0, 1.0, 100000, 100000);
  write_file_atomic(path, replaced(read_file(path), "\"peak_rss_kib\"", "\"peak_rss\""));
  CHECK(contains(format_gate_check(evaluate_gate(path, GateThresholds{})[1]), "records no peak RSS"));
  // A negative footprint is impossible: bad input, as a negative wall time is (it passed).
  path = write_build_report(dir.path, 2.0, 1.0, 100000, -1);
  CHECK(error_code_of([&] { evaluate_gate(path, GateThresholds{}); }) == kExitBadInput);
}

TEST_CASE("gate refuses negative or zero medians as bad input naming the file", "[measure][gate]") {
  ScratchDir dir;
  for (auto [base, cand] : {std::pair{-2.0, 1.0}, std::pair{2.0, -1.0}, std::pair{-2.0, -1.0}, std::pair{2.0, 0.0}}) {
    std::string path = write_build_report(dir.path, base, cand);
    auto e = error_of([&] { evaluate_gate(path, GateThresholds{}); });
    REQUIRE(e);
    CHECK(e->code() == kExitBadInput);
    CHECK(e->path() == path);
    CHECK(contains(e->what(), "must be positive"));
  }
  // A negative run's wall time is as impossible as a negative median.
  std::string path = write_build_report_with_runs(dir.path, {2.0, 2.1, 1.9}, {1.0, 1.1, 0.9});
  write_file_atomic(path, replaced(read_file(path), "\"wall_seconds\":1.1,", "\"wall_seconds\":-1.1,"));
  CHECK(error_code_of([&] { evaluate_gate(path, GateThresholds{}); }) == kExitBadInput);
}

TEST_CASE("the gate's interval is computed like its speedup and contains it", "[measure][gate]") {
  ScratchDir dir;
  std::vector<double> base = {2.00, 2.10, 1.95, 2.05, 2.02}, cand = {1.00, 1.04, 0.98, 1.01, 1.03};
  std::string path = write_build_report_with_runs(dir.path, base, cand);
  // The report's stored interval is made to contradict its medians (an edited or
  // corrupt report); the gate must not print it next to the speedup it recomputes.
  std::string text = read_file(path);
  size_t at = text.find("\"speedup\":{");
  REQUIRE(at != std::string::npos);
  text.replace(at, text.find('}', at) + 1 - at, "\"speedup\":{\"value\":0.5,\"low\":0.4,\"high\":0.6}");
  write_file_atomic(path, text);
  auto checks = evaluate_gate(path, GateThresholds{});
  REQUIRE(checks.size() == 2);
  CHECK(checks[0].value == Approx(median(base) / median(cand)));
  auto [low, high] = printed_interval(format_gate_check(checks[0]));
  CHECK(low <= checks[0].value);
  CHECK(checks[0].value <= high);
  RatioInterval expected = speedup_interval(base, cand);
  CHECK(low == Approx(expected.low).epsilon(1e-3));
  CHECK(high == Approx(expected.high).epsilon(1e-3));

  // Medians that are not the medians of the runs: bad input, not a verdict.
  path = write_build_report_with_runs(dir.path, base, cand);
  write_file_atomic(path, replaced(read_file(path), "\"median\":2.02,", "\"median\":4,"));
  auto e = error_of([&] { evaluate_gate(path, GateThresholds{}); });
  REQUIRE(e);
  CHECK(e->code() == kExitBadInput);
  CHECK(contains(e->what(), "not the median of its runs"));

  // Equal builds: whatever the verdict, the line says the interval holds the limit.
  path = write_build_report_with_runs(dir.path, {1.00, 1.02, 0.98, 1.01, 0.99}, {1.01, 0.99, 1.00, 1.02, 0.98});
  GateThresholds no_slower;
  no_slower.min_speedup = 1.0;
  CHECK(contains(format_gate_check(evaluate_gate(path, no_slower)[0]), "within the noise of these runs"));
  // Twice as fast: clear of the limit, no such words.
  path = write_build_report_with_runs(dir.path, base, cand);
  CHECK_FALSE(contains(format_gate_check(evaluate_gate(path, no_slower)[0]), "within the noise"));
}

TEST_CASE("the bootstrap interval always contains its ratio, even with few resamples", "[measure][stats]") {
  // Random small samples and very few resamples: the percentile interval alone then
  // often misses the point estimate; the reported one never may.
  std::mt19937_64 rng(99);
  std::uniform_real_distribution<double> wall(0.5, 3.0);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<double> a(2 + trial % 5), b(2 + (trial / 5) % 5);
    for (auto& v : a) v = wall(rng);
    for (auto& v : b) v = wall(rng);
    RatioInterval r = ratio_of_medians_bootstrap(a, b, 1 + trial % 3, static_cast<uint64_t>(trial));
    INFO("trial " << trial);
    CHECK(r.low <= r.ratio);
    CHECK(r.ratio <= r.high);
    RatioInterval s = speedup_interval(a, b);
    CHECK(s.ratio == median(a) / median(b));
    CHECK(s.low <= s.ratio);
    CHECK(s.ratio <= s.high);
  }
}

TEST_CASE("gate checks .text of size reports, or the total without .text", "[measure][gate]") {
  ScratchDir dir;
  GateThresholds thresholds;  // max size ratio 1.5
  std::string grown = write_size_report(dir.path, 100, 140, 1000, 5000);
  auto checks = evaluate_gate(grown, thresholds);
  REQUIRE(checks.size() == 1);
  CHECK(checks[0].name == "size .text");
  CHECK(checks[0].value == Approx(1.4));
  CHECK(checks[0].pass);
  thresholds.max_size_ratio = 1.2;
  CHECK(run_gate_command({grown}, thresholds) == kExitFailed);

  std::string no_text = write_size_report(dir.path, 0, 0, 1000, 1100);
  checks = evaluate_gate(no_text, thresholds);
  CHECK(checks[0].name == "size total");
  CHECK(checks[0].value == Approx(1.1));
  CHECK(checks[0].pass);
}

TEST_CASE("gate refuses foreign, broken and newer reports", "[measure][gate]") {
  ScratchDir dir;
  GateThresholds thresholds;
  auto code_for = [&](const std::string& text) {
    std::string path = dir.path + "/report.json";
    write_file_atomic(path, text);
    return error_code_of([&] { evaluate_gate(path, thresholds); });
  };
  CHECK(code_for("not json at all") == kExitBadInput);
  CHECK(code_for("[1, 2]") == kExitBadInput);
  CHECK(code_for(R"({"schema":"kiln-census","version":1})") == kExitBadInput);
  CHECK(code_for(R"({"schema":"kiln-measure-build"})") == kExitBadInput);
  CHECK(code_for(R"({"schema":"kiln-measure-build","version":1})") == kExitBadInput);
  CHECK(code_for(R"({"schema":"kiln-measure-build","version":2,"future":true})") == kExitNewerSchema);
  CHECK(code_for(R"({"schema":"kiln-measure-size","version":99})") == kExitNewerSchema);
  CHECK(error_code_of([&] { evaluate_gate(dir.path + "/missing.json", thresholds); }) == kExitIo);
}

TEST_CASE("size compares stripped sections of real objects", "[measure][size]") {
  // cc and strip are test dependencies (scripts/install-deps.sh installs g++ and
  // binutils): without them this test must fail, not pass having checked nothing.
  INFO("cc and strip must be on PATH (scripts/install-deps.sh installs g++ and binutils)");
  REQUIRE_FALSE(find_program("cc").empty());
  REQUIRE_FALSE(find_program("strip").empty());
  ScratchDir dir;
  compile_c(dir.path, "small", "int add_one(int x) { return x + 1; }\n");
  compile_c(dir.path, "large",
            "#include <stdio.h>\n"
            "static const char *names[] = {\"alpha\", \"beta\", \"gamma\", \"delta\"};\n"
            "int table[64] = {1, 2, 3};\n"
            "int mix(int n) {\n"
            "  int s = 0;\n"
            "  for (int i = 0; i < n; i++) { s += (i * i) ^ (s >> 3); if (s % 7 == 3) printf(\"%s %d\\n\", names[i & "
            "3], s); }\n"
            "  return s;\n"
            "}\n"
            "int pick(int x) {\n"
            "  switch (x) { case 1: return mix(3); case 2: return mix(5) * 2; case 3: return table[x]; default: return "
            "puts(\"x\"); }\n"
            "}\n");
  SectionSizes small = read_section_sizes(dir.path + "/small.o");
  SectionSizes stripped = stripped_section_sizes(dir.path + "/small.o");
  CHECK(small.text > 0);
  CHECK(stripped.text == small.text);
  CHECK(stripped.file < small.file);  // -g debug sections are gone

  SizeReport report = measure_size(dir.path + "/small.o", dir.path + "/large.o");
  REQUIRE(report.rows.size() == 5);
  CHECK(report.rows[0].section == ".text");
  CHECK(report.rows[0].ratio > 1.0);
  CHECK(report.rows[1].section == ".data");
  CHECK(report.rows[1].candidate >= 64 * sizeof(int));
  CHECK(report.rows[4].section == "total");
  CHECK(report.rows[4].ratio > 1.0);
  CHECK(contains(size_report_markdown(report), "| .text"));

  std::string json_path = dir.path + "/size.json";
  write_file_atomic(json_path, size_report_json(report));
  GateThresholds thresholds;
  thresholds.max_size_ratio = 1000;
  CHECK(evaluate_gate(json_path, thresholds)[0].pass);

  write_file_atomic(dir.path + "/notes.txt", "not an object file\n");
  auto e = error_of([&] { measure_size(dir.path + "/notes.txt", dir.path + "/large.o"); });
  REQUIRE(e);
  CHECK(e->code() == kExitBadInput);
  CHECK(contains(e->what(), "notes.txt"));
}

TEST_CASE("build runs pairs in seeded random order in separate target dirs", "[measure][build]") {
  ScratchDir dir;
  BuildOptions options;
  // Each run and prepare leaves a line in its own target dir, so the test can see
  // which directory and environment every command got.
  std::string record = "echo \"$KILN_MEASURE_VARIANT $CARGO_TARGET_DIR\" >> \"$KILN_MEASURE_TARGET_DIR/runs.txt\"";
  options.baseline_command = "sleep 0.01; " + record;
  options.candidate_command = "true; " + record;
  options.prepare_command = "echo prepared >> \"$KILN_MEASURE_TARGET_DIR/prepare.txt\"";
  options.runs = 3;
  options.warmup = 1;
  options.workdir = dir.path + "/work";
  options.seed = 12345;
  BuildReport report = measure_build(options);

  REQUIRE(report.timed_runs.size() == 6);
  std::mt19937_64 expected_order(12345);
  for (int pair = 1; pair <= 3; ++pair) {
    const BuildRun& first = report.timed_runs[static_cast<size_t>(2 * pair - 2)];
    const BuildRun& second = report.timed_runs[static_cast<size_t>(2 * pair - 1)];
    CHECK(first.pair == pair);
    CHECK(second.pair == pair);
    CHECK(first.order == 2 * pair - 1);
    CHECK(second.order == 2 * pair);
    CHECK(first.variant != second.variant);  // interleaved: one of each per pair
    bool candidate_first = (expected_order() & 1) != 0;
    CHECK(first.variant == (candidate_first ? "candidate" : "baseline"));
    CHECK(first.exit_status == 0);
    CHECK(first.wall_seconds > 0);
  }

  CHECK(report.baseline.target_dir != report.candidate.target_dir);
  for (const VariantResult* v : {&report.baseline, &report.candidate}) {
    REQUIRE(is_directory(v->target_dir));
    CHECK(line_count(v->target_dir + "/runs.txt") == 4);     // 1 warm-up + 3 timed
    CHECK(line_count(v->target_dir + "/prepare.txt") == 4);  // before every run
    CHECK(contains(read_file(v->target_dir + "/runs.txt"), v->name + " " + v->target_dir + "\n"));
  }
  CHECK(report.baseline.wall_seconds.median >= 0.01);
  CHECK(report.baseline.wall_seconds.min <= report.baseline.wall_seconds.median);
  CHECK(report.speedup.ratio == Approx(1 / report.wall_ratio.ratio));
  CHECK(report.wall_ratio.low <= report.wall_ratio.ratio);
  CHECK(report.wall_ratio.ratio <= report.wall_ratio.high);

  std::string json = build_report_json(report);
  simdjson::dom::parser parser;
  simdjson::dom::element root = parser.parse(json);
  CHECK(std::string_view(root["schema"]) == "kiln-measure-build");
  CHECK(int64_t(root["version"]) == 1);
  CHECK(uint64_t(root["order_seed"]) == 12345);
  CHECK(simdjson::dom::array(root["runs"]).size() == 6);
  CHECK(root["hardware"].is_object());
  CHECK(contains(build_report_markdown(report), "| candidate"));
  CHECK(occurrences(build_report_svg(report), "<circle") == 6);

  write_file_atomic(dir.path + "/build.json", json);
  auto checks = evaluate_gate(dir.path + "/build.json", GateThresholds{});
  REQUIRE(checks.size() == 2);  // speedup, peak memory (of `true`: both nearly nothing)
  CHECK(checks[0].value == Approx(report.baseline.wall_seconds.median / report.candidate.wall_seconds.median));
  CHECK(checks[1].name == "peak memory");
}

TEST_CASE("build without a workdir uses a temporary one and removes it", "[measure][build]") {
  BuildOptions options;
  options.baseline_command = "true";
  options.candidate_command = "true";
  options.runs = 1;
  options.warmup = 0;
  BuildReport report = measure_build(options);
  CHECK(report.timed_runs.size() == 2);
  CHECK_FALSE(report.workdir_kept);
  CHECK_FALSE(path_exists(report.workdir));
}

TEST_CASE("a failing build or prepare command is a hard error naming it", "[measure][build]") {
  ScratchDir dir;
  BuildOptions options;
  options.baseline_command = "true";
  options.candidate_command = "exit 7";
  options.runs = 2;
  options.workdir = dir.path;
  auto e = error_of([&] { measure_build(options); });
  REQUIRE(e);
  CHECK(e->code() == kExitFailed);
  CHECK(contains(e->what(), "candidate"));
  CHECK(contains(e->what(), "'exit 7'"));
  CHECK(contains(e->what(), "status 7"));
  CHECK(contains(e->what(), dir.path + "/candidate.log"));

  options.candidate_command = "true";
  options.prepare_command = "exit 4";
  e = error_of([&] { measure_build(options); });
  REQUIRE(e);
  CHECK(e->code() == kExitFailed);
  CHECK(contains(e->what(), "prepare"));
  CHECK(contains(e->what(), "status 4"));

  options.prepare_command.clear();
  options.runs = 0;
  CHECK(error_code_of([&] { measure_build(options); }) == kExitUsage);
}

TEST_CASE("a report path that cannot be written is refused before any run", "[measure][build]") {
  ScratchDir dir;
  BuildOptions options;
  const std::string ran = dir.path + "/ran";
  options.baseline_command = options.candidate_command = "touch " + ran;
  options.runs = 1;
  options.workdir = dir.path + "/work";
  for (ReportOutputs outputs : {ReportOutputs{dir.path + "/missing/r.json", "", ""}, ReportOutputs{"", "", dir.path},
                                ReportOutputs{"", dir.path + "/no/t.md", ""}}) {
    CHECK(error_code_of([&] { run_build_command(options, outputs); }) == kExitIo);
    CHECK_FALSE(path_exists(ran));
  }
  CHECK_NOTHROW(check_report_outputs({dir.path + "/r.json", "/dev/null", ""}));
}

TEST_CASE("the hardware profile is a JSON object with a readable table", "[measure][hw]") {
  std::string json = hardware_profile_json();
  simdjson::dom::parser parser;
  simdjson::dom::element root = parser.parse(json);
  REQUIRE(root.is_object());
  CHECK(int64_t(root["logical_cores"]) >= 1);
  CHECK(root["gpus"].is_array());
  CHECK(root["numa_nodes"].is_array());
  CHECK(root["caches"].is_array());
  CHECK(root["kernel"].is_object());
  std::string table = hardware_profile_table(json);
  CHECK(contains(table, "CPU"));
  CHECK(contains(table, "Memory"));
  CHECK(contains(table, "GPU"));
  CHECK(error_code_of([] { hardware_profile_table("[]"); }) == kExitBadInput);
}

TEST_CASE("build kills a run past --timeout, with all it started, and says so", "[measure][build]") {
  ScratchDir dir;
  BuildOptions options;
  std::string pid_file = dir.path + "/sleeper.pid";
  // The shell starts a grandchild; killing only the shell would leave it running.
  options.baseline_command = "sleep 30 & echo $! > " + shell_quote(pid_file) + "; wait";
  options.candidate_command = "true";
  options.runs = 1;
  options.warmup = 0;
  options.workdir = dir.path + "/work";
  options.timeout_seconds = 0.5;
  auto started = std::chrono::steady_clock::now();
  auto e = error_of([&] { measure_build(options); });
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  REQUIRE(e);
  CHECK(e->code() == kExitFailed);
  CHECK(contains(e->what(), "baseline"));
  CHECK(contains(e->what(), "timed out after 0.5 s"));
  CHECK(took < 20);
  CHECK(process_gone(pid_in_file(pid_file)));

  options.timeout_seconds = -1;
  CHECK(error_code_of([&] { measure_build(options); }) == kExitUsage);
}

TEST_CASE("supervised runs time out only when asked, and report exit status and times", "[measure][process]") {
  ProcessResult ok = run_shell_supervised("exit 3", {}, 0);
  CHECK(ok.exit_code == 3);
  // Standard input is /dev/null: a command that reads it ends instead of waiting.
  CHECK(run_shell_supervised("test \"$(cat)\" = '' && test /dev/null -ef /proc/self/fd/0", {}, 10).exit_code == 0);
  CHECK_FALSE(ok.timed_out);
  ProcessResult slow = run_shell_supervised("sleep 0.2", {}, 5);
  CHECK(slow.exit_code == 0);
  CHECK_FALSE(slow.timed_out);
  CHECK(slow.wall_seconds >= 0.2);
  ProcessResult stopped = run_shell_supervised("sleep 30", {}, 0.2);
  CHECK(stopped.timed_out);
  CHECK(stopped.signaled);
  CHECK(stopped.wall_seconds < 20);
  // A group that ignores the SIGTERM gets SIGKILL after the grace period, all of it.
  ScratchDir dir;
  std::string pid_file = dir.path + "/stubborn.pid";
  ProcessResult stubborn =
      run_shell_supervised("trap '' TERM; sleep 30 & echo $! > " + shell_quote(pid_file) + "; wait", {}, 0.2);
  CHECK(stubborn.timed_out);
  CHECK(stubborn.exit_code == 128 + SIGKILL);
  CHECK(process_gone(pid_in_file(pid_file)));
}

TEST_CASE("a cmd: back end's object must be a complete x86-64 relocatable ELF", "[measure][cmd]") {
  INFO("cc must be on PATH (scripts/install-deps.sh installs g++)");
  REQUIRE_FALSE(find_program("cc").empty());
  ScratchDir dir;
  compile_c(dir.path, "good", "int twice(int x) { return 2 * x; }\n");
  std::string good_path = dir.path + "/good.o";
  std::string good = read_file(good_path);
  REQUIRE(relocatable_object_problem(good).empty());
  CHECK(CommandBackend("cp " + shell_quote(good_path) + " {out}; : {in}").emit("bitcode", "m.bc").object == good);

  auto broken = [&](std::string bytes) {
    std::string path = dir.path + "/broken.o";
    write_file_atomic(path, bytes);
    auto e = error_of([&] { CommandBackend("cp " + shell_quote(path) + " {out}; : {in}").emit("bitcode", "m.bc"); });
    REQUIRE(e);
    CHECK(e->code() == kExitFailed);
    CHECK(e->path() == "m.bc");
    CHECK(contains(e->what(), "broken object"));
    return relocatable_object_problem(bytes);
  };
  auto set16 = [](std::string bytes, size_t at, unsigned v) {
    bytes[at] = static_cast<char>(v & 0xff);
    bytes[at + 1] = static_cast<char>(v >> 8);
    return bytes;
  };
  // Only the ELF header, as the hostile back end wrote it.
  CHECK(contains(broken(good.substr(0, 64)), "outside the file"));
  // Cut short: the section header table (at the end, for cc's objects) is missing.
  CHECK(contains(broken(good.substr(0, good.size() - 16)), "past the end"));
  CHECK(contains(broken(set16(good, 60, 0xfff0)), "past the end"));  // e_shnum too large
  CHECK(contains(broken(set16(good, 62, 0x7000)), "e_shstrndx"));    // no such section
  CHECK(contains(broken(set16(good, 58, 40)), "e_shentsize"));
  CHECK(contains(broken(set16(good, 16, 2)), "ET_REL"));    // an executable
  CHECK(contains(broken(set16(good, 18, 183)), "x86-64"));  // AArch64
  std::string class32 = good;
  class32[4] = 1;
  CHECK(contains(broken(class32), "64-bit"));
  std::string zero_offset = good;
  for (size_t i = 40; i < 48; ++i) zero_offset[i] = 0;
  CHECK(contains(broken(zero_offset), "no section header table"));
}

TEST_CASE("a cmd: back end past KILN_CMD_TIMEOUT is killed with all it started", "[measure][cmd]") {
  ScratchDir dir;
  CHECK(CommandBackend("true {in} {out}").timeout_seconds() == kDefaultCmdTimeout);
  {
    ScopedEnv env("KILN_CMD_TIMEOUT", "soon");
    CHECK(error_code_of([] { CommandBackend("true {in} {out}"); }) == kExitUsage);
  }
  ScopedEnv env("KILN_CMD_TIMEOUT", "0.5");
  std::string pid_file = dir.path + "/sleeper.pid";
  CommandBackend slow("sleep 30 & echo $! > " + shell_quote(pid_file) + "; wait; : {in} {out}");
  CHECK(slow.timeout_seconds() == 0.5);
  auto started = std::chrono::steady_clock::now();
  auto e = error_of([&] { slow.emit("bitcode", "slow.bc"); });
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  REQUIRE(e);
  CHECK(e->code() == kExitFailed);
  CHECK(e->path() == "slow.bc");
  CHECK(contains(e->what(), "timed out after 0.5 s"));
  CHECK(took < 20);
  CHECK(process_gone(pid_in_file(pid_file)));
}

TEST_CASE("kiln-measure phases sums a capture's phases, per crate, with stages, routes and the cache", "[measure]") {
  std::string dir = make_temp_dir("kiln-test-phases");
  Corpus corpus = Corpus::create_or_open(dir + "/c", {});
  auto invocation = [&](const std::string& crate, double start, std::vector<std::pair<std::string, double>> phases) {
    InvocationRecord r;
    r.id = crate;
    r.tool = "rustc";
    r.action = "captured";
    r.args = {"--crate-name", crate, "src/lib.rs"};
    r.modules = 2;
    r.start = start;
    r.phases = std::move(phases);
    for (const auto& p : r.phases) r.seconds += p.second;
    corpus.append_invocation(r);
  };
  invocation("alpha", 1000.0, {{"startup", 0.1}, {"rustc", 2.0}, {"store", 0.1}, {"emit", 0.5}, {"link", 0.3}});
  invocation("beta", 1001.0, {{"startup", 0.1}, {"rustc", 1.0}, {"store", 0.0}, {"emit", 0.25}, {"link", 0.15}});
  InvocationRecord pass;
  pass.action = "passthrough";
  pass.args = {"--crate-name", "build_script_build"};
  corpus.append_invocation(pass);
  corpus.append_receipt(R"({"origin":"kiln-capture","cache":"miss","stages":{"codegen":0.5,"combine":0.25},)"
                        R"("reader":{"route":"split"}})");
  corpus.append_receipt(R"({"origin":"kiln-capture","cache":"hit","stages":{"codegen":0}})");
  corpus.append_receipt(R"({"origin":"kiln-emit","cache":"miss","stages":{"codegen":9}})");  // not the build's

  PhasesReport r = measure_phases(dir + "/c");
  CHECK(r.invocations == 2);
  CHECK(r.wall == Approx(3.0));  // alpha, from its start to its end, outlasts beta
  CHECK(r.phase("rustc") == Approx(3.0));
  CHECK(r.phase("startup") == Approx(0.2));
  REQUIRE(r.phases.size() == 5);
  CHECK(r.phases[0].name == "startup");  // in the order the time was spent
  CHECK(r.phases[4].name == "link");
  CHECK(r.units == 2);
  CHECK(r.cache_hits == 1);
  CHECK(r.cache_misses == 1);
  REQUIRE(r.routes.size() == 1);
  CHECK(r.routes[0].name == "split");
  for (const auto& s : r.emit_stages) {
    INFO(s.name);
    CHECK(s.seconds == Approx(s.name == "codegen" ? 0.5 : s.name == "combine" ? 0.25 : 0.0));
  }
  REQUIRE(r.crates.size() == 2);
  CHECK(r.crates[0].crate == "alpha");  // the slowest first
  CHECK(r.crates[0].seconds == Approx(3.0));
  REQUIRE(r.timeline.size() == 2);
  CHECK(r.timeline[1].crate == "beta");
  CHECK(r.timeline[1].start == Approx(1.0));

  std::string json = phases_report_json(r);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  REQUIRE(parser.parse(json).get(doc) == simdjson::SUCCESS);
  CHECK(std::string(doc["schema"].get_string().value()) == "kiln-measure-phases");
  CHECK(doc["phases"]["emit"].get_double().value() == Approx(0.75));
  CHECK(doc["crates"].get_array().size() == 2);
  std::string md = phases_report_markdown(r);
  CHECK(md.find("| alpha") != std::string::npos);
  CHECK(md.find("1 hits, 1 misses") != std::string::npos);
  std::string svg = phases_report_svg(r);
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("alpha emit: 0.500 s") != std::string::npos);
  remove_tree(dir);
}
