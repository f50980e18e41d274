// kiln-measure phases: where a build through kiln-capture spent its time, from the
// corpus it wrote: each wrapped compiler invocation's phases (invocations.jsonl) and
// each emitted unit's stages (receipts.jsonl). Computed once into PhasesReport, then
// rendered by separate JSON, Markdown and SVG writers.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "json.h"
#include "json_writer.h"
#include "measure.h"
#include "report.h"
#include "timeutil.h"

namespace kiln {

namespace {

// The receipt stages that make up an emission, in the order they run.
const char* const kEmitStages[] = {"read",      "bitcode_read", "flat_export", "parse",  "verify",
                                   "codegen",   "fallback",     "combine",     "write"};

std::string crate_of(const std::vector<std::string>& args) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--crate-name") return args[i + 1];
  for (const auto& a : args)
    if (a.rfind("--crate-name=", 0) == 0) return a.substr(13);
  return "?";
}

void add_phase(std::vector<PhaseTotal>& totals, const std::string& name, double seconds) {
  for (auto& t : totals)
    if (t.name == name) {
      t.seconds += seconds;
      return;
    }
  totals.push_back({name, seconds});
}

// The invocations that did work (not pass-throughs), their phases and the timeline.
void read_invocations(const Corpus& corpus, PhasesReport& report) {
  std::map<std::string, CratePhases> crates;
  double first = 0, last = 0;
  for (const InvocationRecord& r : corpus.invocations()) {
    if (r.action == "passthrough") continue;
    report.invocations++;
    CratePhases& c = crates[crate_of(r.args)];
    c.crate = crate_of(r.args);
    c.invocations++;
    c.units += r.modules;
    double total = 0;
    for (const auto& [name, s] : r.phases) {
      add_phase(report.phases, name, s);
      add_phase(c.phases, name, s);
      total += s;
    }
    if (r.phases.empty()) total = r.seconds;  // a record from before phases were kept
    c.seconds += total;
    if (r.start > 0) {
      report.timeline.push_back({c.crate, r.start, r.phases});
      first = first == 0 ? r.start : std::min(first, r.start);
      last = std::max(last, r.start + total);
    }
  }
  report.wall = last - first;
  for (auto& span : report.timeline) span.start -= first;
  std::sort(report.timeline.begin(), report.timeline.end(),
            [](const TimelineSpan& a, const TimelineSpan& b) { return a.start < b.start; });
  for (auto& [name, c] : crates) report.crates.push_back(std::move(c));
  std::sort(report.crates.begin(), report.crates.end(),
            [](const CratePhases& a, const CratePhases& b) { return a.seconds > b.seconds; });
}

// The emitted units' stages, routes and cache outcomes (kiln-capture's receipts only).
void read_receipts(const Corpus& corpus, PhasesReport& report) {
  for (const char* stage : kEmitStages) report.emit_stages.push_back({stage, 0});
  corpus.for_each_line("receipts.jsonl", [&](const JsonLine& l) {
    if (get_string_or(l.value, "origin", "") != "kiln-capture") return;
    report.units++;
    std::string cache = get_string_or(l.value, "cache", "");
    report.cache_hits += cache == "hit";
    report.cache_misses += cache == "miss";
    simdjson::dom::element stages;
    if (l.value["stages"].get(stages) == simdjson::SUCCESS)
      for (auto& t : report.emit_stages) t.seconds += get_double_or(stages, t.name.c_str(), 0);
    simdjson::dom::element reader;
    if (l.value["reader"].get(reader) == simdjson::SUCCESS) {
      std::string route = get_string_or(reader, "route", "");
      if (!route.empty()) add_phase(report.routes, route, 1);
    }
  });
}

// The plugin's units (kiln-capture --route plugin): what stamp took inside rustc.
void read_plugin_receipts(const Corpus& corpus, PhasesReport& report) {
  static const char* const kPluginStages[] = {"export", "stages", "object"};
  for (const char* stage : kPluginStages) report.plugin_stages.push_back({stage, 0});
  corpus.for_each_line("plugin.jsonl", [&](const JsonLine& l) {
    report.plugin_units++;
    bool stamp = false;
    if (l.value["stamp"].get(stamp) == simdjson::SUCCESS && stamp) report.plugin_stamp_units++;
    for (auto& t : report.plugin_stages) t.seconds += get_double_or(l.value, (t.name + "_seconds").c_str(), 0);
  });
}

double sum(const std::vector<PhaseTotal>& totals) {
  double s = 0;
  for (const auto& t : totals) s += t.seconds;
  return s;
}

std::string percent(double part, double whole) {
  return whole > 0 ? format_fixed(100.0 * part / whole, 1) + "%" : "n/a";
}

}  // namespace

PhasesReport measure_phases(const std::string& corpus_dir) {
  Corpus corpus = Corpus::open(corpus_dir);
  PhasesReport report;
  report.corpus = corpus_dir;
  read_invocations(corpus, report);
  read_receipts(corpus, report);
  read_plugin_receipts(corpus, report);
  return report;
}

double PhasesReport::phase(const std::string& name) const {
  for (const auto& t : phases)
    if (t.name == name) return t.seconds;
  return 0;
}

std::string phases_report_json(const PhasesReport& r) {
  JsonWriter w;
  auto totals = [&](const char* key, const std::vector<PhaseTotal>& list) {
    w.key(key).begin_object();
    for (const auto& t : list) w.field(t.name, t.seconds);
    w.end_object();
  };
  w.begin_object()
      .field("schema", kPhasesReportSchema)
      .field("version", kMeasureReportVersion)
      .field("corpus", r.corpus)
      .field("wall_seconds", r.wall)
      .field("invocations", static_cast<uint64_t>(r.invocations))
      .field("units", static_cast<uint64_t>(r.units))
      .field("cache_hits", static_cast<uint64_t>(r.cache_hits))
      .field("cache_misses", static_cast<uint64_t>(r.cache_misses));
  totals("phases", r.phases);
  totals("emit_stages", r.emit_stages);
  totals("routes", r.routes);
  w.key("plugin").begin_object()
      .field("units", static_cast<uint64_t>(r.plugin_units))
      .field("stamp_units", static_cast<uint64_t>(r.plugin_stamp_units));
  totals("stages", r.plugin_stages);
  w.end_object();
  w.key("crates").begin_array();
  for (const auto& c : r.crates) {
    w.begin_object()
        .field("crate", c.crate)
        .field("invocations", static_cast<uint64_t>(c.invocations))
        .field("units", static_cast<uint64_t>(c.units))
        .field("seconds", c.seconds);
    totals("phases", c.phases);
    w.end_object();
  }
  w.end_array();
  w.key("timeline").begin_array();
  for (const auto& s : r.timeline) {
    w.begin_object().field("crate", s.crate).field("start", s.start);
    w.key("phases").begin_object();
    for (const auto& [name, seconds] : s.phases) w.field(name, seconds);
    w.end_object();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

std::string phases_report_markdown(const PhasesReport& r) {
  std::string out;
  const double invocation_time = sum(r.phases);
  out += "Build through kiln-capture: " + std::to_string(r.invocations) + " compiler invocations, " +
      format_fixed(r.wall, 3) + " s from the first start to the last end; " + std::to_string(r.units) +
      " units emitted or taken from the object cache (" + std::to_string(r.cache_hits) + " hits, " +
      std::to_string(r.cache_misses) + " misses).\n\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : r.phases)
    rows.push_back({t.name, format_fixed(t.seconds, 3), percent(t.seconds, invocation_time)});
  out += markdown_table({"phase", "seconds (all invocations)", "share"}, rows,
                        {Align::kLeft, Align::kRight, Align::kRight});
  out += "\nstartup (the wrappers' own process start) is " + percent(r.phase("startup"), r.wall) +
      " of the build's wall time when summed over invocations.\n\n";
  if (r.units || !r.plugin_units) {  // the plugin route emits no unit of its own
    rows.clear();
    const double emit_time = sum(r.emit_stages);
    for (const auto& t : r.emit_stages)
      rows.push_back({t.name, format_fixed(t.seconds, 3), percent(t.seconds, emit_time)});
    out += markdown_table({"emission stage (receipts)", "seconds (CPU, all units)", "share"}, rows,
                          {Align::kLeft, Align::kRight, Align::kRight});
  }
  if (r.plugin_units) {
    rows.clear();
    const double plugin_time = sum(r.plugin_stages);
    for (const auto& t : r.plugin_stages)
      rows.push_back({t.name, format_fixed(t.seconds, 3), percent(t.seconds, plugin_time)});
    out += "\nstamp inside rustc (--route plugin): " + std::to_string(r.plugin_stamp_units) + " of " +
        std::to_string(r.plugin_units) + " codegen units stamp's whole, the rest rustc's own code generation; " +
        "its time is part of the rustc phase.\n\n";
    out += markdown_table({"stamp in rustc (plugin.jsonl)", "seconds (CPU, all units)", "share"}, rows,
                          {Align::kLeft, Align::kRight, Align::kRight});
  }
  if (!r.routes.empty()) {
    out += "\nstamp routes:";
    for (const auto& t : r.routes) out += " " + t.name + " " + format_fixed(t.seconds, 0);
    out += "\n";
  }
  rows.clear();
  for (const auto& c : r.crates) {
    std::vector<std::string> row = {c.crate, std::to_string(c.invocations), std::to_string(c.units),
                                    format_fixed(c.seconds, 3)};
    for (const auto& t : r.phases) {
      double s = 0;
      for (const auto& p : c.phases)
        if (p.name == t.name) s = p.seconds;
      row.push_back(format_fixed(s, 3));
    }
    rows.push_back(std::move(row));
  }
  std::vector<std::string> header = {"crate", "invocations", "units", "seconds"};
  std::vector<Align> align = {Align::kLeft, Align::kRight, Align::kRight, Align::kRight};
  for (const auto& t : r.phases) header.push_back(t.name), align.push_back(Align::kRight);
  out += "\n" + markdown_table(header, rows, align);
  return out;
}

// One row per invocation, its phases as consecutive coloured bars (like cargo's
// --timings), on a shared time axis.
std::string phases_report_svg(const PhasesReport& r) {
  static const char* const kColours[] = {"#9e9e9e", "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948"};
  std::vector<std::string> names;
  for (const auto& t : r.phases) names.push_back(t.name);
  auto colour = [&](const std::string& name) {
    size_t i = std::find(names.begin(), names.end(), name) - names.begin();
    return kColours[i % (sizeof kColours / sizeof *kColours)];
  };
  const double left = 140, width = 760, row = 14, top = 40;
  const double span = r.wall > 0 ? r.wall : 1;
  const double height = top + row * r.timeline.size() + 40;
  char buf[512];
  std::string svg;
  std::snprintf(buf, sizeof buf,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
                "font-size=\"11\">\n<text x=\"10\" y=\"18\" font-size=\"14\">Where the build's time went, per "
                "compiler invocation (%.2f s wall)</text>\n",
                left + width + 20, height, r.wall);
  svg += buf;
  double x = left;
  for (const auto& n : names) {  // the legend
    std::snprintf(buf, sizeof buf, "<rect x=\"%.1f\" y=\"24\" width=\"10\" height=\"10\" fill=\"%s\"/>"
                  "<text x=\"%.1f\" y=\"33\">%s</text>\n", x, colour(n), x + 14, n.c_str());
    svg += buf;
    x += 24 + 7 * n.size();
  }
  for (size_t i = 0; i < r.timeline.size(); ++i) {
    const TimelineSpan& s = r.timeline[i];
    double y = top + row * i;
    std::snprintf(buf, sizeof buf, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", left - 6, y + 10,
                  xml_escape(s.crate).c_str());
    svg += buf;
    double at = s.start;
    for (const auto& [name, seconds] : s.phases) {
      std::snprintf(buf, sizeof buf,
                    "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"><title>%s %s: %.3f "
                    "s</title></rect>\n",
                    left + width * at / span, y + 1, std::max(0.5, width * seconds / span), row - 3, colour(name),
                    xml_escape(s.crate).c_str(), name.c_str(), seconds);
      svg += buf;
      at += seconds;
    }
  }
  std::snprintf(buf, sizeof buf, "<text x=\"%.1f\" y=\"%.1f\">0 s</text><text x=\"%.1f\" y=\"%.1f\" "
                "text-anchor=\"end\">%.2f s</text>\n</svg>\n", left, height - 14, left + width, height - 14, r.wall);
  svg += buf;
  return svg;
}

int run_phases_command(const std::string& corpus_dir, const ReportOutputs& outputs) {
  check_report_outputs(outputs);
  PhasesReport report = measure_phases(corpus_dir);
  std::string markdown = phases_report_markdown(report);
  if (!outputs.json_path.empty()) write_file_atomic(outputs.json_path, phases_report_json(report));
  if (!outputs.markdown_path.empty()) write_file_atomic(outputs.markdown_path, markdown);
  if (!outputs.svg_path.empty()) write_file_atomic(outputs.svg_path, phases_report_svg(report));
  std::fputs(markdown.c_str(), stdout);
  return kExitOk;
}

}  // namespace kiln
