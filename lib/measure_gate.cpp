// kiln-measure gate: a CI verdict from a build or size report. The report file is
// the contract, so the gate reads only documented fields and refuses reports from a
// newer kiln rather than guessing what their fields mean.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <utility>
#include <vector>

#include "error.h"
#include "fs.h"
#include "json.h"
#include "measure.h"
#include "report.h"
#include "stats.h"

namespace kiln {

namespace {

// A whole-string number, or nullopt ("1.1.1", "", "abc", "inf" are not thresholds).
std::optional<double> strict_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

enum class Suffix { kNone, kPercent, kTimes };

// Splits "10%" / "1.1x" / "0.1" into number and suffix; nullopt when malformed.
std::optional<std::pair<double, Suffix>> split_threshold(const std::string& raw) {
  std::string text = trimmed(raw);
  Suffix suffix = Suffix::kNone;
  if (!text.empty() && text.back() == '%') suffix = Suffix::kPercent;
  else if (!text.empty() && (text.back() == 'x' || text.back() == 'X')) suffix = Suffix::kTimes;
  if (suffix != Suffix::kNone) text.pop_back();
  std::optional<double> v = strict_number(trimmed(text));
  if (!v) return std::nullopt;
  return std::make_pair(*v, suffix);
}

std::string times_text(double v) { return format_fixed(v, 3) + "x"; }

simdjson::dom::element member(simdjson::dom::element e, const char* key, const std::string& path) {
  simdjson::dom::element out;
  if (e[key].get(out) != simdjson::SUCCESS)
    throw KilnError(kExitBadInput, path, std::string("missing field '") + key + "'");
  return out;
}

double number_member(simdjson::dom::element e, const char* key, const std::string& path) {
  double v = get_double_or(e, key, NAN);
  if (std::isnan(v)) throw KilnError(kExitBadInput, path, std::string("missing or non-numeric field '") + key + "'");
  return v;
}

// A wall time from a report: a negative, zero or non-finite one cannot come from a
// measurement, and would turn the speedup into a meaningless (or negative) number.
// A wall time or a memory size: a positive finite number, else the report is bad input.
double positive_measure(simdjson::dom::element e, const char* key, const std::string& path, const std::string& what) {
  double v = number_member(e, key, path);
  if (!(v > 0) || !std::isfinite(v))
    throw KilnError(kExitBadInput, path, what + " is " + format_fixed(v, 3) + ": it must be positive");
  return v;
}

// Every timed run's wall time per variant, from the report's 'runs' (empty when the
// report has none).
std::pair<std::vector<double>, std::vector<double>> run_walls(simdjson::dom::element root, const std::string& path) {
  std::pair<std::vector<double>, std::vector<double>> walls;
  simdjson::dom::array runs;
  if (root["runs"].get(runs) != simdjson::SUCCESS) return walls;
  for (auto run : runs) {
    std::string variant = get_string_or(run, "variant", "");
    if (variant != "baseline" && variant != "candidate")
      throw KilnError(kExitBadInput, path, "a run whose variant is neither baseline nor candidate");
    double wall = positive_measure(run, "wall_seconds", path, "a " + variant + " run's wall_seconds");
    (variant == "baseline" ? walls.first : walls.second).push_back(wall);
  }
  return walls;
}

// The medians the gate checks must be the medians of the runs the interval comes
// from; otherwise the report was edited or is corrupt. (JSON keeps 9 digits.)
void require_same_median(double stated, const std::vector<double>& walls, const std::string& path,
                         const std::string& variant) {
  double from_runs = median(walls);
  if (std::fabs(stated - from_runs) > 1e-6 * std::max(std::fabs(stated), std::fabs(from_runs)))
    throw KilnError(kExitBadInput, path,
                    "variants." + variant + ".wall_seconds.median " + format_fixed(stated, 6) +
                        " is not the median of its runs (" + format_fixed(from_runs, 6) + ")");
}

GateCheck check_build(simdjson::dom::element root, const std::string& path, double min_speedup) {
  simdjson::dom::element variants = member(root, "variants", path);
  double base = positive_measure(member(member(variants, "baseline", path), "wall_seconds", path), "median", path,
                                 "variants.baseline.wall_seconds.median");
  double cand = positive_measure(member(member(variants, "candidate", path), "wall_seconds", path), "median", path,
                                 "variants.candidate.wall_seconds.median");
  GateCheck check;
  check.report_path = path;
  check.name = "speedup";
  check.value = base / cand;
  check.limit = min_speedup;
  check.detail = "wall median " + format_fixed(base, 3) + " s -> " + format_fixed(cand, 3) + " s";
  // The interval is recomputed from the runs the way measure_build computes it, not
  // copied from the report's 'speedup' field, which could disagree with the medians.
  auto [base_walls, cand_walls] = run_walls(root, path);
  if (base_walls.empty() != cand_walls.empty()) throw KilnError(kExitBadInput, path, "its runs are all of one variant");
  if (!base_walls.empty()) {
    require_same_median(base, base_walls, path, "baseline");
    require_same_median(cand, cand_walls, path, "candidate");
    RatioInterval interval = speedup_interval(base_walls, cand_walls);
    // The same medians to the last bit as the interval's, so that it contains the value.
    check.value = interval.ratio;
    check.detail += ", 95% CI " + times_text(interval.low) + "-" + times_text(interval.high);
    // The verdict follows the point estimate (as documented), but where the interval
    // holds the limit the runs cannot tell the two sides apart: two equal builds pass
    // or fail such a gate by chance, which the line says.
    if (interval.low < min_speedup && interval.high >= min_speedup)
      check.detail += "; the interval holds the limit: within the noise of these runs";
  }
  check.pass = std::isfinite(check.value) && check.value >= min_speedup;
  return check;
}

// The build's footprint: the peak RSS medians (KiB) the report states per variant. A
// report without them (a run that recorded none) cannot pass a memory limit.
GateCheck check_memory(simdjson::dom::element root, const std::string& path, double max_ratio) {
  simdjson::dom::element variants = member(root, "variants", path);
  GateCheck check;
  check.report_path = path;
  check.name = "peak memory";
  check.limit = max_ratio;
  simdjson::dom::element base_rss, cand_rss;
  double base = 0, cand = 0;
  if (member(variants, "baseline", path)["peak_rss_kib"].get(base_rss) == simdjson::SUCCESS &&
      member(variants, "candidate", path)["peak_rss_kib"].get(cand_rss) == simdjson::SUCCESS) {
    base = number_member(base_rss, "median", path);
    cand = number_member(cand_rss, "median", path);
  }
  // 0 (or no field): not recorded, which fails; below 0 (or not a number): impossible.
  for (auto [v, what] : {std::pair{base, "baseline"}, std::pair{cand, "candidate"}})
    if (v < 0 || !std::isfinite(v))
      throw KilnError(kExitBadInput, path,
                      std::string("variants.") + what + ".peak_rss_kib.median is " + format_fixed(v, 3) +
                          ": it must be positive");
  if (base == 0 || cand == 0) {
    check.value = INFINITY;
    check.pass = false;
    check.detail = "the report records no peak RSS";
    return check;
  }
  check.value = cand / base;
  check.pass = std::isfinite(check.value) && check.value <= max_ratio;
  check.detail = "peak RSS median " + format_fixed(base / 1024, 1) + " MiB -> " + format_fixed(cand / 1024, 1) + " MiB";
  return check;
}

GateCheck check_size(simdjson::dom::element root, const std::string& path, double max_ratio) {
  simdjson::dom::array rows;
  if (root["rows"].get(rows) != simdjson::SUCCESS) throw KilnError(kExitBadInput, path, "missing array 'rows'");
  // Code size is what a back end controls; the whole file stands in when there is no code.
  std::optional<std::pair<double, double>> text, total;
  for (auto row : rows) {
    std::string section = get_string_or(row, "section", "");
    double b = get_double_or(row, "baseline", NAN), c = get_double_or(row, "candidate", NAN);
    if (std::isnan(b) || std::isnan(c)) throw KilnError(kExitBadInput, path, "a row without baseline/candidate sizes");
    if (section == ".text" && b > 0) text = std::make_pair(b, c);
    if (section == "total") total = std::make_pair(b, c);
  }
  if (!text && !total) throw KilnError(kExitBadInput, path, "neither a .text nor a total row");
  auto [base, cand] = text ? *text : *total;
  GateCheck check;
  check.report_path = path;
  check.name = text ? "size .text" : "size total";
  check.value = base > 0 ? cand / base : INFINITY;
  check.limit = max_ratio;
  check.pass = check.value <= max_ratio;
  check.detail = format_fixed(base, 0) + " -> " + format_fixed(cand, 0) + " bytes";
  return check;
}

}  // namespace

double parse_min_speedup(const std::string& text) {
  auto parsed = split_threshold(text);
  double speedup = 0;
  if (parsed) {
    auto [v, suffix] = *parsed;
    if (suffix == Suffix::kPercent) speedup = 1 + v / 100;
    else if (suffix == Suffix::kTimes) speedup = v;
    // A bare number is a fraction; 1.1 could mean 1.1x or +110%, so it is refused.
    else if (std::fabs(v) < 1) speedup = 1 + v;
    else
      throw KilnError(kExitUsage, "", "--min-speedup " + text + " is ambiguous: write " + text + "x or a percentage");
  }
  if (!parsed || speedup <= 0)
    throw KilnError(kExitUsage, "", "--min-speedup expects e.g. 10%, 1.1x or 0.1, not '" + text + "'");
  return speedup;
}

// "1.5", "1.5x" or "50%" (50% more) as a ratio; `option` names the flag in errors.
static double parse_max_ratio(const std::string& text, const std::string& option) {
  auto parsed = split_threshold(text);
  double ratio = 0;
  if (parsed) ratio = parsed->second == Suffix::kPercent ? 1 + parsed->first / 100 : parsed->first;
  if (!parsed || ratio <= 0)
    throw KilnError(kExitUsage, "", option + " expects e.g. 1.5, 1.5x or 50%, not '" + text + "'");
  return ratio;
}

double parse_max_size_ratio(const std::string& text) { return parse_max_ratio(text, "--max-size-ratio"); }

double parse_max_memory_ratio(const std::string& text) {
  if (trimmed(text) == "off") return 0;
  return parse_max_ratio(text, "--max-memory-ratio");
}

std::vector<GateCheck> evaluate_gate(const std::string& report_path, const GateThresholds& thresholds) {
  simdjson::padded_string text(read_file(report_path));
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto error = parser.parse(text).get(root))
    throw KilnError(kExitBadInput, report_path, std::string("not JSON: ") + simdjson::error_message(error));
  if (!root.is_object()) throw KilnError(kExitBadInput, report_path, "not a kiln-measure report (not a JSON object)");
  std::string schema = get_string_or(root, "schema", "");
  if (schema != kBuildReportSchema && schema != kSizeReportSchema)
    throw KilnError(kExitBadInput, report_path,
                    schema.empty() ? std::string("not a kiln-measure report (no schema field)")
                                   : "not a kiln-measure report (schema '" + schema + "')");
  int64_t version = get_int_or(root, "version", 0);
  if (version > kMeasureReportVersion)
    throw KilnError(kExitNewerSchema, report_path,
                    schema + " version " + std::to_string(version) + " is newer than this kiln reads (" +
                        std::to_string(kMeasureReportVersion) + "); use a newer kiln-measure");
  if (version < 1) throw KilnError(kExitBadInput, report_path, "missing or invalid 'version'");

  if (schema == kBuildReportSchema) {
    std::vector<GateCheck> checks = {check_build(root, report_path, thresholds.min_speedup)};
    if (thresholds.max_memory_ratio > 0) checks.push_back(check_memory(root, report_path, thresholds.max_memory_ratio));
    return checks;
  }
  return {check_size(root, report_path, thresholds.max_size_ratio)};
}

std::string format_gate_check(const GateCheck& check) {
  bool is_speedup = check.name == "speedup";
  // Where three decimals would show the value equal to the limit (0.99961x as
  // "1.000x >= 1.000x" beside FAIL), six show why the verdict is what it is.
  const int digits = format_fixed(check.value, 3) == format_fixed(check.limit, 3) && check.value != check.limit ? 6 : 3;
  auto text = [&](double v) { return format_fixed(v, digits) + "x"; };
  std::string comparison = text(check.value) + (is_speedup ? " >= " : " <= ") + text(check.limit);
  return std::string(check.pass ? "PASS" : "FAIL") + "  " + check.name + " " + comparison + "  (" + check.detail +
      ")  " + check.report_path;
}

int run_gate_command(const std::vector<std::string>& report_paths, const GateThresholds& thresholds) {
  if (report_paths.empty()) throw KilnError(kExitUsage, "", "no report to check");
  bool all_pass = true;
  for (const std::string& path : report_paths) {
    for (const GateCheck& check : evaluate_gate(path, thresholds)) {
      std::printf("%s\n", format_gate_check(check).c_str());
      all_pass = all_pass && check.pass;
    }
  }
  std::fflush(stdout);
  return all_pass ? kExitOk : kExitFailed;
}

}  // namespace kiln
