// kiln-replay merge: shards' reports (kiln-replay --shard K/N) read back into figures
// and joined into the report of one run over the whole corpus. What adds up is added
// (counts, instructions, per-stage times, wall times); what is a ratio or a median of
// the run is computed again from the joined rounds, as run_replay computes it; the
// per-module lists are put back in the corpus's order. kiln-replay(1) lists them.
#include <algorithm>
#include <map>
#include <set>

#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "json.h"
#include "replay.h"
#include "replay_summary.h"
#include "stats.h"
#include "timeutil.h"

namespace kiln {

namespace {

using Element = simdjson::dom::element;

uint64_t count(Element e, const char* key) { return static_cast<uint64_t>(get_int_or(e, key, 0)); }
double seconds(Element e, const char* key) { return get_double_or(e, key, 0); }

std::vector<Element> array_of(Element e, const char* key) {
  std::vector<Element> out;
  simdjson::dom::array a;
  if (e[key].get(a) == simdjson::SUCCESS)
    for (Element x : a) out.push_back(x);
  return out;
}

StageSums read_sums(Element round) {
  StageSums s;
  Element st;
  if (round["stages"].get(st) == simdjson::SUCCESS) {
    s.parse = seconds(st, "parse"), s.flat_export = seconds(st, "flat_export");
    s.bitcode_read = seconds(st, "bitcode_read"), s.direct_export = seconds(st, "direct_export");
    s.clone = seconds(st, "clone"), s.codegen = seconds(st, "codegen"), s.fallback = seconds(st, "fallback");
    s.stages = seconds(st, "stamp_stages"), s.elf = seconds(st, "stamp_elf");
  }
  s.instructions = count(round, "instructions"), s.modules = count(round, "modules_ok");
  s.failed = count(round, "modules_failed"), s.functions = count(round, "functions");
  s.functions_stamp = count(round, "functions_stamp"), s.instructions_stamp = count(round, "instructions_stamp");
  s.text_bytes = count(round, "text_bytes"), s.kernel_launches = count(round, "kernel_launches");
  s.object_bytes = count(round, "object_bytes");
  s.gpu_upload = seconds(round, "gpu_upload"), s.gpu_kernels = seconds(round, "gpu_kernels");
  s.gpu_download = seconds(round, "gpu_download");
  return s;
}

void add_sums(StageSums& a, const StageSums& b) {
  a.parse += b.parse, a.flat_export += b.flat_export, a.bitcode_read += b.bitcode_read;
  a.direct_export += b.direct_export, a.clone += b.clone, a.codegen += b.codegen, a.fallback += b.fallback;
  a.stages += b.stages, a.elf += b.elf, a.instructions += b.instructions, a.modules += b.modules;
  a.failed += b.failed, a.functions += b.functions, a.functions_stamp += b.functions_stamp;
  a.instructions_stamp += b.instructions_stamp, a.text_bytes += b.text_bytes, a.object_bytes += b.object_bytes;
  a.kernel_launches += b.kernel_launches, a.gpu_upload += b.gpu_upload, a.gpu_kernels += b.gpu_kernels;
  a.gpu_download += b.gpu_download;
}

void read_services(Element doc, ReplaySummary& sum) {
  for (Element s : array_of(doc, "services")) {
    ServiceSummary service{get_string_or(s, "name", ""),
                           get_string_or(s, "backend", ""),
                           static_cast<unsigned>(count(s, "workers")),
                           {}};
    for (Element r : array_of(s, "rounds")) {
      RoundSummary round;
      round.round = static_cast<int>(count(r, "round"));
      round.wall_seconds = seconds(r, "wall_seconds");
      round.sums = read_sums(r);
      service.rounds.push_back(round);
    }
    sum.services.push_back(std::move(service));
  }
}

// Only the direct reader's figures: the rest is computed again from the joined rounds.
void read_stamp_vs_llvm(Element doc, ReplaySummary& sum) {
  Element c, r;
  if (doc["stamp_vs_llvm"].get(c) != simdjson::SUCCESS || c["reader"].get(r) != simdjson::SUCCESS) return;
  StampVsLlvm& s = sum.stamp_vs_llvm.emplace();
  s.modules = count(r, "modules"), s.modules_read = count(r, "modules_read_directly");
  s.modules_direct = count(r, "modules_direct");
  s.read_llvm_seconds = seconds(r, "llvm_parse_export_seconds");
  s.read_direct_seconds = seconds(r, "direct_read_export_seconds");
  s.direct_llvm_seconds = seconds(r, "llvm_parse_codegen_seconds");
  s.direct_seconds = seconds(r, "direct_bitcode_to_object_seconds");
  s.modules_compared = count(c, "modules_compared"), s.modules_left_out = count(c, "modules_left_out");
  for (Element round : array_of(c, "rounds")) {
    Element llvm, stamp;
    if (round["llvm"].get(llvm) != simdjson::SUCCESS || round["stamp"].get(stamp) != simdjson::SUCCESS)
      throw KilnError(kExitBadInput, "", "a compared round of a shard's report lacks llvm's or stamp's sums");
    s.llvm_rounds.push_back(read_sums(llvm));
    s.stamp_rounds.push_back(read_sums(stamp));
  }
}

// Each compared round's sums joined with the other shard's of the same round.
void join_rounds(std::vector<StageSums>& a, const std::vector<StageSums>& b) {
  if (a.size() != b.size())
    throw KilnError(kExitBadInput, "", "the shards' reports compare different numbers of rounds");
  for (size_t r = 0; r < a.size(); ++r) add_sums(a[r], b[r]);
}

void read_gpu(Element doc, ReplaySummary& sum) {
  Element g;
  if (doc["gpu"].get(g) != simdjson::SUCCESS) return;
  GpuSummary& s = sum.gpu.emplace();
  s.service = get_string_or(g, "service", ""), s.streams = static_cast<unsigned>(count(g, "streams"));
  s.batches = static_cast<uint32_t>(count(g, "batches")), s.batch_instructions = count(g, "batch_instructions");
  s.gpu_time = seconds(g, "device_phase_seconds"), s.span = seconds(g, "device_span_seconds");
  s.busy = seconds(g, "busy_seconds"), s.upload = seconds(g, "upload_seconds");
  s.kernels = seconds(g, "kernels_seconds"), s.download = seconds(g, "download_seconds");
  s.first_round_device_phase = seconds(g, "first_round_device_phase_seconds");
  s.kernel_launches = count(g, "kernel_launches_per_round");
  for (Element x : array_of(g, "receipts")) {
    GpuReceipt receipt{get_string_or(x, "module", ""), static_cast<int>(count(x, "round")), {}};
    ModuleEmission& e = receipt.emission;
    e.device = get_string_or(x, "device", "");
    bool from_device = false;
    e.object_from_device = x["object_from_device"].get(from_device) == simdjson::SUCCESS && from_device;
    e.batch = static_cast<uint32_t>(count(x, "batch")),
    e.batch_modules = static_cast<uint32_t>(count(x, "batch_modules"));
    e.kernel_launches = count(x, "batch_kernel_launches"), e.object_xxh3 = get_string_or(x, "object_xxh3", "");
    s.receipts.push_back(std::move(receipt));
  }
}

void read_modules(Element doc, ReplaySummary& sum) {
  for (Element x : array_of(doc, "instability")) {
    Instability i;
    i.module = get_string_or(x, "module", ""), i.backend = get_string_or(x, "backend", "");
    i.differ = get_string_or(x, "kind", "") == "bytes differ", i.error = get_string_or(x, "error", "");
    simdjson::dom::object objects;
    if (x["objects"].get(objects) == simdjson::SUCCESS)
      for (auto field : objects) {
        auto& where = i.objects[std::string(field.key)];
        simdjson::dom::array a;
        std::string_view text;
        if (field.value.get(a) == simdjson::SUCCESS)
          for (Element w : a)
            if (w.get(text) == simdjson::SUCCESS) where.emplace_back(text);
      }
    sum.instability.push_back(std::move(i));
  }
  for (Element x : array_of(doc, "excluded"))
    sum.excluded.push_back({get_string_or(x, "module", ""), get_string_or(x, "error", "")});
  for (Element x : array_of(doc, "module_verdicts"))
    sum.verdicts.push_back({get_string_or(x, "module", ""), get_string_or(x, "backend", ""),
                            get_string_or(x, "verdict", ""), get_string_or(x, "object_xxh3", ""),
                            count(x, "instructions")});
}

struct ShardReport {
  std::string path;
  Shard shard;
  ReplaySummary sum;
};

ShardReport read_report(const std::string& path) {
  std::string text = read_file(path);
  simdjson::dom::parser parser;
  Element doc;
  if (auto err = parser.parse(text).get(doc); err != simdjson::SUCCESS)
    throw KilnError(kExitBadInput, path, std::string("not a replay report: ") + json_error_reason(err));
  if (!doc.is_object() || get_string_or(doc, "schema", "") != "kiln-replay-report")
    throw KilnError(kExitBadInput, path, "not a replay report (schema kiln-replay-report)");
  if (int64_t v = get_int_or(doc, "v", 0); v != kReplaySchemaVersion)
    throw KilnError(v > kReplaySchemaVersion ? kExitNewerSchema : kExitBadInput, path,
                    "report version " + std::to_string(v) + ", this kiln reads " +
                        std::to_string(kReplaySchemaVersion));
  ShardReport r{path, {}, {}};
  std::string shard = get_string_or(doc, "shard", "1/1");
  try {
    r.shard = parse_shard(shard, "shard");
  } catch (const KilnError& e) {
    throw KilnError(kExitBadInput, path, e.what());
  }
  ReplaySummary& s = r.sum;
  s.profile = get_string_or(doc, "profile", ""), s.rounds = static_cast<int>(count(doc, "rounds"));
  s.jobs = static_cast<unsigned>(count(doc, "jobs")), s.modules = count(doc, "modules");
  s.unstable_modules = count(doc, "unstable_modules"), s.failed_modules = count(doc, "failed_modules");
  read_services(doc, s);
  read_stamp_vs_llvm(doc, s);
  read_gpu(doc, s);
  read_modules(doc, s);
  return r;
}

// The reports must be the N shards of one replay: the same N, each K once, and the
// same back ends, rounds, profile and workers.
void check_shards(const std::vector<ShardReport>& reports) {
  const ShardReport& first = reports.front();
  std::set<uint32_t> seen;
  for (const ShardReport& r : reports) {
    if (r.shard.n != first.shard.n)
      throw KilnError(kExitBadInput, r.path,
                      "shard " + r.shard.text() + " and " + first.path + "'s " + first.shard.text() +
                          " split differently");
    if (!seen.insert(r.shard.k).second)
      throw KilnError(kExitBadInput, r.path, "shard " + r.shard.text() + " given twice");
    const ReplaySummary &a = first.sum, &b = r.sum;
    bool same = a.profile == b.profile && a.rounds == b.rounds && a.jobs == b.jobs &&
        a.services.size() == b.services.size() && a.gpu.has_value() == b.gpu.has_value();
    for (size_t s = 0; same && s < a.services.size(); ++s)
      same = a.services[s].name == b.services[s].name && a.services[s].rounds.size() == b.services[s].rounds.size();
    if (!same)
      throw KilnError(kExitBadInput, r.path,
                      "not a shard of the same replay as " + first.path + " (back ends, rounds, profile or -j differ)");
  }
  for (uint32_t k = 1; k <= first.shard.n; ++k)
    if (!seen.count(k))
      throw KilnError(kExitBadInput, "",
                      "shard " + std::to_string(k) + "/" + std::to_string(first.shard.n) + " missing");
}

// Services' rounds: sums added, wall times added (the time the shards' rounds took one
// after the other), throughputs computed again.
void join_services(ReplaySummary& out, const ReplaySummary& in) {
  for (size_t s = 0; s < out.services.size(); ++s)
    for (size_t r = 0; r < out.services[s].rounds.size(); ++r) {
      RoundSummary& a = out.services[s].rounds[r];
      a.wall_seconds += in.services[s].rounds[r].wall_seconds;
      add_sums(a.sums, in.services[s].rounds[r].sums);
    }
  out.modules += in.modules, out.unstable_modules += in.unstable_modules, out.failed_modules += in.failed_modules;
  out.instability.insert(out.instability.end(), in.instability.begin(), in.instability.end());
  out.verdicts.insert(out.verdicts.end(), in.verdicts.begin(), in.verdicts.end());
  out.excluded.insert(out.excluded.end(), in.excluded.begin(), in.excluded.end());
}

void join_figures(ReplaySummary& out, const ReplaySummary& in) {
  if (out.stamp_vs_llvm && in.stamp_vs_llvm) {
    StampVsLlvm &a = *out.stamp_vs_llvm, b = *in.stamp_vs_llvm;
    a.modules += b.modules, a.modules_read += b.modules_read, a.modules_direct += b.modules_direct;
    a.read_llvm_seconds += b.read_llvm_seconds, a.read_direct_seconds += b.read_direct_seconds;
    a.direct_llvm_seconds += b.direct_llvm_seconds, a.direct_seconds += b.direct_seconds;
    a.modules_compared += b.modules_compared, a.modules_left_out += b.modules_left_out;
    if (a.llvm_rounds.empty() || b.llvm_rounds.empty()) {  // a report of an older kiln: the services' sums
      a.llvm_rounds.clear(), a.stamp_rounds.clear();
    } else {
      join_rounds(a.llvm_rounds, b.llvm_rounds);
      join_rounds(a.stamp_rounds, b.stamp_rounds);
    }
  }
  if (out.gpu && in.gpu) {
    GpuSummary &a = *out.gpu, b = *in.gpu;
    a.batches += b.batches, a.kernel_launches += b.kernel_launches, a.gpu_time += b.gpu_time, a.span += b.span;
    a.busy += b.busy, a.upload += b.upload, a.kernels += b.kernels, a.download += b.download;
    a.first_round_device_phase += b.first_round_device_phase;
    a.receipts.insert(a.receipts.end(), b.receipts.begin(), b.receipts.end());
  }
}

std::vector<StageSums> round_sums(const ServiceSummary& s) {
  std::vector<StageSums> out;
  for (const auto& r : s.rounds) out.push_back(r.sums);
  return out;
}

// Ratios and medians, from the joined rounds as run_replay takes them from its own.
void recompute(ReplaySummary& sum) {
  for (auto& service : sum.services)
    for (auto& r : service.rounds) round_rates(r);
  const ServiceSummary *llvm = nullptr, *stamp = nullptr, *gpu = nullptr;
  for (const auto& s : sum.services) {
    bool on_gpu = s.name.rfind("cuda:", 0) == 0;
    if (s.backend == "llvm") llvm = &s;
    if (s.backend == "stamp" && !on_gpu) stamp = &s;
    if (on_gpu) gpu = &s;
  }
  if (sum.stamp_vs_llvm && llvm && stamp && !stamp->rounds.empty()) {
    const StampVsLlvm& r = *sum.stamp_vs_llvm;
    // Over the modules both emitted (reports of before those sums: each service's own).
    const bool compared = !r.stamp_rounds.empty() && !r.llvm_rounds.empty();
    StampVsLlvm c = compare_round_sums(compared ? r.llvm_rounds : round_sums(*llvm),
                                       compared ? r.stamp_rounds : round_sums(*stamp), stamp->rounds.back().round);
    c.modules_compared = r.modules_compared, c.modules_left_out = r.modules_left_out;
    c.llvm_rounds = r.llvm_rounds, c.stamp_rounds = r.stamp_rounds;
    c.modules = r.modules, c.modules_read = r.modules_read, c.modules_direct = r.modules_direct;
    c.read_llvm_seconds = r.read_llvm_seconds, c.read_direct_seconds = r.read_direct_seconds;
    c.direct_llvm_seconds = r.direct_llvm_seconds, c.direct_seconds = r.direct_seconds;
    c.read_speedup = c.read_llvm_seconds / std::max(1e-12, c.read_direct_seconds);
    c.direct_end_to_end = c.direct_llvm_seconds / std::max(1e-12, c.direct_seconds);
    sum.stamp_vs_llvm = c;
  }
  if (sum.gpu && gpu && !gpu->rounds.empty()) {
    GpuSummary& g = *sum.gpu;
    uint64_t instr = gpu->rounds.back().sums.instructions_stamp;
    g.gpu_rate = instr / std::max(1e-12, g.gpu_time);
    g.span_rate = instr / std::max(1e-12, g.span);
    auto rate = [](const ServiceSummary* s, auto instructions, auto time) {
      if (!s || s->rounds.empty()) return 0.0;
      return instructions(s->rounds.back().sums) / std::max(1e-12, warm_median_of_sums(round_sums(*s), time));
    };
    g.llvm_rate = rate(
        llvm, [](const StageSums& x) { return double(x.instructions); },
        [](const StageSums& x) { return x.clone + x.codegen; });
    g.cpu_stages_rate = rate(
        stamp, [](const StageSums& x) { return double(x.instructions_stamp); },
        [](const StageSums& x) { return x.stages; });
  }
}

// The per-module lists back in the order one run gives: back end by back end (in the
// services' order), modules in the corpus's order.
void put_in_corpus_order(ReplaySummary& sum, const std::vector<ModuleRecord>& modules) {
  std::map<std::string, size_t> at, backend_at;
  for (size_t i = 0; i < modules.size(); ++i) at.emplace(modules[i].id, i);
  // A back end's place is its CPU service's, as find_instability lists them (a GPU
  // service comes first in the services but is checked against the CPU's).
  for (size_t s = 0; s < sum.services.size(); ++s)
    if (sum.services[s].name.rfind("cuda:", 0) != 0) backend_at.emplace(sum.services[s].backend, s);
  for (size_t s = 0; s < sum.services.size(); ++s) backend_at.emplace(sum.services[s].backend, s);
  auto place = [&](const std::string& id) {
    auto it = at.find(id);
    if (it == at.end())
      throw KilnError(kExitBadInput, "", "module " + id + " of a shard's report is not in the corpus");
    return it->second;
  };
  auto by = [&](const auto& a, const auto& b) {
    return std::pair(backend_at[a.backend], place(a.module)) < std::pair(backend_at[b.backend], place(b.module));
  };
  std::stable_sort(sum.instability.begin(), sum.instability.end(), by);
  std::stable_sort(sum.verdicts.begin(), sum.verdicts.end(), by);
  std::stable_sort(sum.excluded.begin(), sum.excluded.end(),
                   [&](const Excluded& a, const Excluded& b) { return place(a.id) < place(b.id); });
  if (sum.gpu)
    std::stable_sort(sum.gpu->receipts.begin(), sum.gpu->receipts.end(),
                     [&](const GpuReceipt& a, const GpuReceipt& b) { return place(a.module) < place(b.module); });
}

}  // namespace

ReplayOutcome merge_replay_reports(const std::string& corpus_dir, const std::vector<std::string>& paths,
                                   const std::string& output) {
  Corpus corpus = Corpus::open(corpus_dir);
  std::vector<std::string> files = paths.empty() ? find_shard_files(corpus_dir, "replay-report", "json") : paths;
  if (files.empty())
    throw KilnError(kExitUsage, corpus_dir, "no replay-report.shard-K-of-N.json here; name the shards' reports");
  std::vector<ShardReport> reports;
  for (const auto& f : files) reports.push_back(read_report(f));
  check_shards(reports);
  ReplaySummary sum = reports.front().sum;
  for (size_t i = 1; i < reports.size(); ++i) {
    join_services(sum, reports[i].sum);
    join_figures(sum, reports[i].sum);
  }
  sum.corpus = absolute_path(corpus_dir);
  sum.time = iso8601_now();
  recompute(sum);
  std::vector<ModuleRecord> modules = corpus.modules();
  if (sum.modules != modules.size())
    throw KilnError(kExitBadInput, corpus_dir,
                    "the shards' reports cover " + std::to_string(sum.modules) + " modules, the corpus holds " +
                        std::to_string(modules.size()) + " (reports of another corpus?)");
  put_in_corpus_order(sum, modules);
  // The command that reproduces a module names its blob in this corpus, wherever the shard ran.
  for (Instability& x : sum.instability) x.reproduce = reproduce_command(corpus, x.module, x.backend, sum.profile);
  ReplayOutcome out{render_report_json(sum), render_table(sum), sum.unstable_modules, sum.failed_modules};
  write_file_atomic(output.empty() ? corpus.replay_report_path() : output, out.report_json);
  return out;
}

}  // namespace kiln
