#include "replay.h"

#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <algorithm>
#include <cstring>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "backend_llvm.h"
#include "backend_stamp.h"
#include "flat_export.h"
#include "replay_internal.h"
#include "fallback.h"
#include "bitcode.h"
#include "process.h"
#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "hash.h"
#include "isolate.h"
#include "json.h"
#include "progress.h"
#include "timeutil.h"

namespace kiln {

uint64_t elf_text_bytes(const std::string& o) {
  if (o.size() < 64 || o.compare(0, 4, "\x7f" "ELF") != 0) return 0;
  auto u16 = [&](size_t at) { uint16_t v; std::memcpy(&v, o.data() + at, 2); return v; };
  auto u32 = [&](size_t at) { uint32_t v; std::memcpy(&v, o.data() + at, 4); return v; };
  auto u64 = [&](size_t at) { uint64_t v; std::memcpy(&v, o.data() + at, 8); return v; };
  uint64_t shoff = u64(0x28);
  uint32_t shnum = u16(0x3C), shstrndx = u16(0x3E);
  if (shnum == 0 && shoff + 64 <= o.size()) shnum = static_cast<uint32_t>(u64(shoff + 0x20));
  if (shstrndx == 0xFFFF && shoff + 64 <= o.size()) shstrndx = u32(shoff + 0x28);
  if (shoff + static_cast<uint64_t>(shnum) * 64 > o.size() || shstrndx >= shnum) return 0;
  uint64_t strtab = u64(shoff + shstrndx * 64ull + 0x18);
  uint64_t total = 0;
  for (uint32_t i = 1; i < shnum; ++i) {
    size_t h = shoff + i * 64ull;
    uint64_t name = strtab + u32(h);
    if (u32(h + 4) == 1 /* SHT_PROGBITS */ && name + 5 <= o.size() && o.compare(name, 5, ".text") == 0) total += u64(h + 0x20);
  }
  return total;
}

StampModule prepare_stamp_module(LlvmBackend& llvm, const ReplayModule& m, ModuleEmission& e) {
  Stopwatch clock;
  StampModule sm;
  auto parsed = llvm.parse(m.bytes, m.id);
  std::string problem = verify_problem(*parsed);
  if (!problem.empty()) throw KilnError(kExitBadInput, m.id, problem);
  e.parse = clock.lap();
  std::string problem_triple = triple_problem(parsed->getTargetTriple().str());
  if (!problem_triple.empty()) throw KilnError(kExitBadInput, m.id, problem_triple);
  sm.plan = plan_stamp_module(*parsed, m.id.substr(0, 12));  // m.id is the bitcode's xxh3-128
  sm.module = std::move(parsed);
  e.flat_export = clock.lap();
  return sm;
}

void count_stamp_functions(const StampPlan& plan, ModuleEmission& e) {
  for (const auto& v : plan.flat.verdicts) {
    e.functions += 1;
    e.instructions += v.instructions;
    if (v.stamp()) e.functions_stamp++, e.instructions_stamp += v.instructions;
  }
}

void finish_stamp_emission(LlvmBackend& llvm, const StampModule& sm, const std::string& id,
                           const std::string& stamp_object, ModuleEmission& e) {
  Stopwatch clock;
  std::string rest;
  if (!sm.plan.whole) rest = llvm.codegen(*fallback_module(*sm.module, sm.plan.flat.emitted_by_stamp), id);
  e.fallback = clock.lap();
  e.object_xxh3 = xxh3_128_hex(stamp_object + rest);
  e.object_bytes = stamp_object.size() + rest.size();
  e.text_bytes = elf_text_bytes(stamp_object) + elf_text_bytes(rest);
}

namespace {

// What one worker thread owns for the whole replay.
struct Worker {
  std::unique_ptr<Backend> backend;
  LlvmBackend* llvm = nullptr;  // set when the back end can parse once and emit many times
  bool stamp = false;           // the stamp service: its own LLVM for parsing and fallback
  std::unique_ptr<LlvmBackend> stamp_llvm;
  std::unordered_map<size_t, std::unique_ptr<llvm::Module>> parsed;
  std::unordered_map<size_t, StampModule> stamp_modules;
};

class CpuService : public EmissionService {
 public:
  CpuService(const std::string& spec, Profile profile, unsigned jobs, const std::vector<ReplayModule>& modules)
      : spec_(spec), modules_(modules) {
    unsigned n = std::max(1u, jobs);
    workers_.resize(n);
    for (auto& w : workers_) {
      if (spec == "stamp") {
        w.stamp = true;
        w.stamp_llvm = std::make_unique<LlvmBackend>(profile);
        continue;
      }
      w.backend = make_backend(spec, profile);
      w.llvm = dynamic_cast<LlvmBackend*>(w.backend.get());
    }
    for (unsigned i = 0; i < n; ++i) threads_.emplace_back([this, i] { worker_loop(i); });
  }

  ~CpuService() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }

  std::string name() const override {
    return "cpu:" + spec_ + " x" + std::to_string(workers_.size());
  }
  std::string backend() const override { return spec_; }
  unsigned workers() const override { return static_cast<unsigned>(workers_.size()); }

  RoundResult run_round(int round) override {
    RoundResult result;
    result.service = name();
    result.round = round;
    result.emissions.assign(modules_.size(), {});
    current_ = &result;
    // Rotate where the shared queue starts so that, over rounds, modules land on
    // different workers and the byte check covers workers as well as rounds.
    start_ = (static_cast<size_t>(round) * 7919u) % std::max<size_t>(1, modules_.size());
    next_ = 0;
    progress_ = std::make_unique<Progress>("round " + std::to_string(round), modules_.size());
    Stopwatch clock;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      pending_ = workers_.size();
      ++generation_;
      wake_.notify_all();
      done_.wait(lock, [&] { return pending_ == 0; });
    }
    result.wall_seconds = clock.seconds();
    progress_->finish();
    current_ = nullptr;
    return result;
  }

 private:
  void worker_loop(unsigned index) {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
      }
      for (size_t k; (k = next_.fetch_add(1)) < modules_.size();) {
        size_t i = (k + start_) % modules_.size();
        current_->emissions[i] = emit_one(workers_[index], index, i);
        progress_->advance();
      }
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_all();
    }
  }

  ModuleEmission emit_one(Worker& w, unsigned index, size_t i) {
    ModuleEmission e;
    e.worker = index;
    const ReplayModule& m = modules_[i];
    try {
      std::string object;
      if (w.stamp) return emit_stamp(w, index, i);
      if (w.llvm) {
        Stopwatch clock;
        auto& slot = w.parsed[i];
        if (!slot) {
          auto parsed = w.llvm->parse(m.bytes, m.id);
          // Invalid IR can crash the code generator: verify once, like kiln-emit does.
          std::string problem = verify_problem(*parsed);
          if (!problem.empty()) throw KilnError(kExitBadInput, m.id, problem);
          slot = std::move(parsed);
          e.parse = clock.lap();
        }
        count_module(*slot, e.functions, e.instructions);
        // Code generation rewrites IR, so each emission works on a fresh copy.
        std::unique_ptr<llvm::Module> copy = llvm::CloneModule(*slot);
        e.clone = clock.lap();
        object = w.llvm->codegen(*copy, m.id);
        e.codegen = clock.lap();
      } else {
        EmitResult r = w.backend->emit(m.bytes, m.id);
        e.parse = r.stages.parse;
        e.codegen = r.stages.codegen + r.stages.read + r.stages.write;
        object = std::move(r.object);
      }
      e.object_xxh3 = xxh3_128_hex(object);
      e.object_bytes = object.size();
      e.text_bytes = elf_text_bytes(object);
    } catch (const std::exception& err) {
      e.error = err.what();
    }
    return e;
  }

  // stamp: stages and ELF writing every round on the module exported once per worker.
  // A module whose functions are all stamp's comes out whole (globals included);
  // otherwise the functions it leaves and the globals go to LLVM (fallback), and the
  // two objects are hashed together: combining them (ld.lld -r, deterministic) is not
  // part of the loop.
  ModuleEmission emit_stamp(Worker& w, unsigned index, size_t i) {
    ModuleEmission e;
    e.worker = index;
    const ReplayModule& m = modules_[i];
    try {
      auto& sm = w.stamp_modules[i];
      if (!sm.module) sm = prepare_stamp_module(*w.stamp_llvm, m, e);
      count_stamp_functions(sm.plan, e);
      Stopwatch clock;
      std::string stamp_object;
      if (sm.plan.flat.stamp_function_count) stamp_object = write_stamp_part(sm.plan, *sm.module, &e.stages);
      e.codegen = clock.lap();
      e.elf = e.codegen - e.stages;
      finish_stamp_emission(*w.stamp_llvm, sm, m.id, stamp_object, e);
    } catch (const std::exception& err) {
      e.error = err.what();
    }
    return e;
  }

  std::string spec_;
  const std::vector<ReplayModule>& modules_;
  std::vector<Worker> workers_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  bool stopping_ = false;
  uint64_t generation_ = 0;
  size_t pending_ = 0, start_ = 0;
  std::atomic<size_t> next_{0};
  RoundResult* current_ = nullptr;
  std::unique_ptr<Progress> progress_;
};

}  // namespace

std::unique_ptr<EmissionService> make_cpu_service(const std::string& backend_spec, Profile profile, unsigned jobs,
                                                  const std::vector<ReplayModule>& modules) {
  return std::make_unique<CpuService>(backend_spec, profile, jobs, modules);
}

namespace {

struct StageSums {
  double parse = 0, clone = 0, codegen = 0, flat_export = 0, fallback = 0, stages = 0, elf = 0;
  uint64_t instructions = 0, modules = 0, failed = 0, instructions_stamp = 0, functions_stamp = 0, functions = 0;
  uint64_t text_bytes = 0, kernel_launches = 0;
  double gpu_upload = 0, gpu_kernels = 0, gpu_download = 0;
};

StageSums sum_round(const RoundResult& r) {
  StageSums s;
  for (const auto& e : r.emissions) {
    s.parse += e.parse;
    s.clone += e.clone;
    s.codegen += e.codegen;
    s.flat_export += e.flat_export;
    s.fallback += e.fallback;
    s.stages += e.stages;
    s.elf += e.elf;
    if (e.device.empty() || e.first_in_batch) s.kernel_launches += e.kernel_launches;
    s.gpu_upload += e.gpu_upload;
    s.gpu_kernels += e.gpu_kernels;
    s.gpu_download += e.gpu_download;
    if (e.error.empty()) {
      s.instructions += e.instructions;
      s.instructions_stamp += e.instructions_stamp;
      s.functions_stamp += e.functions_stamp;
      s.functions += e.functions;
      s.text_bytes += e.text_bytes;
      s.modules++;
    } else {
      s.failed++;
    }
  }
  return s;
}

// A module left out of the rounds: it crashed LLVM, or stopped it with a fatal error.
struct Excluded {
  std::string id, error;
};

// The services run LLVM in this process, across rounds: a module that crashes LLVM
// there would take the whole replay (and its report) down. So each module is emitted
// once with every back end that runs LLVM here (llvm, stamp), in worker processes
// forked before any service starts a thread; those that crash are taken out of
// `modules` and returned with the reason. Ordinary failures stay: the rounds report them.
std::vector<Excluded> vet_modules(std::vector<ReplayModule>& modules, const ReplayOptions& options) {
  std::vector<std::string> in_process;
  for (const auto& b : options.backends)
    if (b == "llvm" || b == "stamp") in_process.push_back(b);
  if (in_process.empty()) return {};
  std::map<std::string, std::unique_ptr<Backend>> backends;  // per worker process
  std::vector<std::string> crashed(modules.size());
  Progress progress("vetting", modules.size());
  run_isolated(
      modules.size(), std::max(1u, options.jobs),
      [&](size_t i) {
        for (const auto& b : in_process) {
          auto& backend = backends[b];
          if (!backend) backend = make_backend(b, options.profile);
          try {
            backend->emit(modules[i].bytes, modules[i].id);
          } catch (const KilnError&) {
            // Bad input that LLVM reports: the rounds fail it with its reason.
          }
        }
        return std::string();
      },
      [&](size_t i, IsolatedResult r) {
        // The reason without the module id that the report puts beside it.
        const std::string& id = modules[i].id;
        if (!r.ok) crashed[i] = r.text.rfind(id + ": ", 0) == 0 ? r.text.substr(id.size() + 2) : r.text;
        progress.advance();
      },
      [&](size_t i) { return modules[i].id; });
  progress.finish();
  std::vector<Excluded> excluded;
  std::vector<ReplayModule> kept;
  for (size_t i = 0; i < modules.size(); ++i) {
    if (crashed[i].empty()) kept.push_back(std::move(modules[i]));
    else excluded.push_back({modules[i].id, crashed[i]});
  }
  modules = std::move(kept);
  return excluded;
}

}  // namespace

ReplayOutcome run_replay(const ReplayOptions& options) {
  Corpus corpus = Corpus::open(options.corpus_dir);
  std::vector<ReplayModule> modules;
  for (const auto& rec : corpus.modules()) modules.push_back({rec.id, corpus.load_blob(rec.id)});
  if (modules.empty()) throw KilnError(kExitBadInput, options.corpus_dir, "the corpus holds no modules");
  if (options.rounds < 1) throw KilnError(kExitUsage, "", "--rounds must be at least 1");
  std::vector<Excluded> excluded = vet_modules(modules, options);

  std::vector<std::unique_ptr<EmissionService>> services;
  if (options.cuda) {
    if (std::find(options.backends.begin(), options.backends.end(), "stamp") == options.backends.end())
      throw KilnError(kExitUsage, "", "--device cuda runs stamp's stages: add stamp to --backend");
    services.push_back(make_gpu_service(options.profile, modules, options.gpu_streams, options.gpu_batch_instructions));
  }
  if (options.cpu)
    for (const auto& b : options.backends) services.push_back(make_cpu_service(b, options.profile, options.jobs, modules));
  else
    for (const auto& b : options.backends)
      if (b != "stamp") services.push_back(make_cpu_service(b, options.profile, options.jobs, modules));

  // rounds[service][round]
  std::vector<std::vector<RoundResult>> rounds(services.size());
  for (int r = 1; r <= options.rounds; ++r)
    for (size_t s = 0; s < services.size(); ++s) rounds[s].push_back(services[s]->run_round(r));

  ReplayOutcome outcome;
  JsonWriter w;
  w.begin_object().field("schema", "kiln-replay-report").field("v", kReplaySchemaVersion)
      .field("corpus", absolute_path(options.corpus_dir)).field("time", iso8601_now())
      .field("profile", profile_name(options.profile)).field("rounds", options.rounds).field("jobs", std::max(1u, options.jobs))
      .field("modules", static_cast<uint64_t>(modules.size() + excluded.size()))
      .field("modules_excluded", static_cast<uint64_t>(excluded.size()));
  std::string table;
  char line[512];
  std::snprintf(line, sizeof line, "%-16s %5s %8s %8s %8s %8s %9s %9s %11s %9s %s\n", "service", "round", "wall s",
                "parse s", "export s", "clone s", "codegen s", "fallback", "M instr/s", "modules/s", "failed");
  table += line;
  w.key("services").begin_array();
  for (size_t s = 0; s < services.size(); ++s) {
    w.begin_object().field("name", services[s]->name()).field("backend", services[s]->backend())
        .field("workers", services[s]->workers());
    w.key("rounds").begin_array();
    for (const auto& r : rounds[s]) {
      StageSums sums = sum_round(r);
      // Throughput of the emission work itself, per core-second (llvm: clone + codegen;
      // stamp: its stages and ELF writing, plus LLVM for what it left), and over the
      // round's wall time (all workers together).
      double emit_cpu = sums.clone + sums.codegen + sums.fallback;
      double per_core = emit_cpu > 0 ? static_cast<double>(sums.instructions) / emit_cpu : 0;
      double wall_rate = r.wall_seconds > 0 ? static_cast<double>(sums.instructions) / r.wall_seconds : 0;
      w.begin_object().field("round", r.round).field("wall_seconds", r.wall_seconds)
          .key("stages").begin_object().field("parse", sums.parse).field("flat_export", sums.flat_export)
          .field("clone", sums.clone).field("codegen", sums.codegen).field("fallback", sums.fallback)
          .field("stamp_stages", sums.stages).field("stamp_elf", sums.elf).end_object()
          .field("instructions", sums.instructions).field("modules_ok", sums.modules).field("modules_failed", sums.failed)
          .field("functions", sums.functions).field("functions_stamp", sums.functions_stamp)
          .field("instructions_stamp", sums.instructions_stamp).field("text_bytes", sums.text_bytes)
          .field("kernel_launches", sums.kernel_launches).field("gpu_upload", sums.gpu_upload)
          .field("gpu_kernels", sums.gpu_kernels).field("gpu_download", sums.gpu_download)
          .field("instructions_per_second_wall", wall_rate).field("instructions_per_core_second", per_core)
          .field("modules_per_second_wall", r.wall_seconds > 0 ? static_cast<double>(sums.modules) / r.wall_seconds : 0.0)
          .end_object();
      std::snprintf(line, sizeof line, "%-16s %5d %8.3f %8.3f %8.3f %8.3f %9.3f %9.3f %11.3f %9.1f %llu\n",
                    services[s]->name().c_str(), r.round, r.wall_seconds, sums.parse, sums.flat_export, sums.clone,
                    sums.codegen, sums.fallback, per_core / 1e6, r.wall_seconds > 0 ? sums.modules / r.wall_seconds : 0.0,
                    (unsigned long long)sums.failed);
      table += line;
    }
    w.end_array().end_object();
  }
  w.end_array();

  // stamp against llvm on the same modules, from the last (warm) round of each.
  int llvm_s = -1, stamp_s = -1, gpu_s = -1;
  for (size_t s = 0; s < services.size(); ++s) {
    bool on_gpu = services[s]->name().rfind("cuda:", 0) == 0;
    if (services[s]->backend() == "llvm") llvm_s = static_cast<int>(s);
    if (services[s]->backend() == "stamp" && !on_gpu) stamp_s = static_cast<int>(s);
    if (on_gpu) gpu_s = static_cast<int>(s);
  }
  // Medians over the warm rounds (all but the first, which also parses and exports,
  // and on the GPU warms up), so that one noisy round does not decide a ratio.
  auto warm_median = [&](int service, auto value) {
    std::vector<double> v;
    for (size_t r = rounds[service].size() > 1 ? 1 : 0; r < rounds[service].size(); ++r) v.push_back(value(sum_round(rounds[service][r])));
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  if (llvm_s >= 0 && stamp_s >= 0) {
    StageSums l = sum_round(rounds[llvm_s].back()), st = sum_round(rounds[stamp_s].back()), first = sum_round(rounds[stamp_s].front());
    double llvm_time = warm_median(llvm_s, [](const StageSums& x) { return x.clone + x.codegen; });
    double stamp_time = warm_median(stamp_s, [](const StageSums& x) { return x.codegen; });
    double stamp_stages_time = warm_median(stamp_s, [](const StageSums& x) { return x.stages; });
    double fallback_time = warm_median(stamp_s, [](const StageSums& x) { return x.fallback; });
    st.stages = stamp_stages_time;
    st.elf = stamp_time - stamp_stages_time;
    st.codegen = stamp_time;
    double llvm_rate = l.instructions / std::max(1e-12, llvm_time);
    double stamp_rate = st.instructions_stamp / std::max(1e-12, stamp_time);
    double end_to_end = llvm_time / std::max(1e-12, stamp_time + fallback_time);
    double export_rate = first.instructions / std::max(1e-12, first.flat_export);
    double parse_rate = first.instructions / std::max(1e-12, first.parse);
    double text_ratio = l.text_bytes ? static_cast<double>(st.text_bytes) / static_cast<double>(l.text_bytes) : 0;
    w.key("stamp_vs_llvm").begin_object()
        .field("llvm_instructions_per_core_second", llvm_rate).field("stamp_instructions_per_core_second", stamp_rate)
        .field("stamp_speedup_on_its_functions", stamp_rate / llvm_rate).field("end_to_end_speedup_with_fallback", end_to_end)
        .field("stamp_share_of_instructions", st.instructions ? static_cast<double>(st.instructions_stamp) / st.instructions : 0.0)
        .field("stamp_share_of_functions", st.functions ? static_cast<double>(st.functions_stamp) / st.functions : 0.0)
        .field("flat_export_instructions_per_second", export_rate).field("parse_instructions_per_second", parse_rate)
        .field("text_ratio", text_ratio).field("stamp_stages_seconds", st.stages).field("stamp_elf_seconds", st.elf)
        .end_object();
    char block[2048];
    std::snprintf(block, sizeof block,
                  "\nstamp vs llvm (medians of warm rounds 2..%d, one core per worker):\n"
                  "  stamp emits its %.1f%% of instructions (%.1f%% of functions) at %.2f M instr/s; llvm %s emits all at %.3f M instr/s: %.1fx\n"
                  "  of stamp's time, %.0f%% is its stages (the kernels, on the CPU: %.1f M instr/s) and %.0f%% writing ELF objects\n"
                  "  end to end per module, stamp + llvm fallback vs llvm alone: %.2fx (ld.lld -r combining not included)\n"
                  "  flat export %.2f M instr/s, LLVM bitcode parsing %.2f M instr/s (both once per worker)\n"
                  "  .text: stamp + fallback %.2fx the size of llvm's\n",
                  rounds[stamp_s].back().round, 100.0 * st.instructions_stamp / std::max<uint64_t>(1, st.instructions),
                  100.0 * st.functions_stamp / std::max<uint64_t>(1, st.functions), stamp_rate / 1e6,
                  profile_name(options.profile), llvm_rate / 1e6, stamp_rate / llvm_rate,
                  100.0 * st.stages / std::max(1e-12, st.codegen), st.instructions_stamp / std::max(1e-12, st.stages) / 1e6,
                  100.0 * st.elf / std::max(1e-12, st.codegen), end_to_end,
                  export_rate / 1e6,
                  parse_rate / 1e6, text_ratio);
    table += block;
  }

  // The GPU service: its stages (upload, kernels, download) against llvm and against
  // the CPU executor's stages, on the same modules.
  if (gpu_s >= 0) {
    StageSums g = sum_round(rounds[gpu_s].back());
    // Its rate is over the wall time of the batches (streams overlapped; host
    // preparation and cutting included), not the sum of the batches' busy times.
    auto warm_round_median = [&](double RoundResult::*field) {
      std::vector<double> v;
      for (size_t r = rounds[gpu_s].size() > 1 ? 1 : 0; r < rounds[gpu_s].size(); ++r) v.push_back(rounds[gpu_s][r].*field);
      std::sort(v.begin(), v.end());
      return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    };
    double gpu_time = warm_round_median(&RoundResult::device_phase_seconds);
    // The device's own time, first upload to last download: the GPU emission time.
    double span = warm_round_median(&RoundResult::device_span_seconds);
    double span_rate = g.instructions_stamp / std::max(1e-12, span);
    double busy = warm_median(gpu_s, [](const StageSums& x) { return x.stages; });
    double upload = warm_median(gpu_s, [](const StageSums& x) { return x.gpu_upload; });
    double kernels = warm_median(gpu_s, [](const StageSums& x) { return x.gpu_kernels; });
    double download = warm_median(gpu_s, [](const StageSums& x) { return x.gpu_download; });
    double gpu_rate = g.instructions_stamp / std::max(1e-12, gpu_time);
    double llvm_rate = 0, cpu_stages_rate = 0;
    if (llvm_s >= 0)
      llvm_rate = sum_round(rounds[llvm_s].back()).instructions /
                  std::max(1e-12, warm_median(llvm_s, [](const StageSums& x) { return x.clone + x.codegen; }));
    if (stamp_s >= 0)
      cpu_stages_rate = sum_round(rounds[stamp_s].back()).instructions_stamp /
                        std::max(1e-12, warm_median(stamp_s, [](const StageSums& x) { return x.stages; }));
    uint32_t batches = 0;
    for (const ModuleEmission& e : rounds[gpu_s].back().emissions) batches += e.first_in_batch ? 1 : 0;
    w.key("gpu").begin_object().field("service", services[gpu_s]->name())
        .field("streams", services[gpu_s]->workers()).field("batches", batches)
        .field("batch_instructions", options.gpu_batch_instructions)
        .field("stages_instructions_per_second", gpu_rate).field("device_phase_seconds", gpu_time)
        .field("device_span_seconds", span).field("span_instructions_per_second", span_rate)
        .field("span_speedup_vs_llvm", llvm_rate > 0 ? span_rate / llvm_rate : 0.0)
        .field("busy_seconds", busy).field("upload_seconds", upload)
        .field("kernels_seconds", kernels).field("download_seconds", download)
        .field("first_round_device_phase_seconds", rounds[gpu_s].front().device_phase_seconds)
        .field("kernel_launches_per_round", g.kernel_launches)
        .field("speedup_vs_llvm", llvm_rate > 0 ? gpu_rate / llvm_rate : 0.0)
        .field("speedup_vs_cpu_stages", cpu_stages_rate > 0 ? gpu_rate / cpu_stages_rate : 0.0);
    // A receipt per module emitted on the device in the last round.
    w.key("receipts").begin_array();
    const RoundResult& last = rounds[gpu_s].back();
    for (size_t i = 0; i < modules.size(); ++i) {
      const ModuleEmission& e = last.emissions[i];
      if (e.device.empty()) continue;
      w.begin_object().field("module", modules[i].id).field("round", last.round).field("device", e.device)
          .field("object_from_device", e.object_from_device).field("batch", e.batch)
          .field("batch_modules", e.batch_modules).field("batch_kernel_launches", e.kernel_launches)
          .field("object_xxh3", e.object_xxh3).end_object();
    }
    w.end_array().end_object();
    char block[1024];
    std::snprintf(block, sizeof block,
                  "\n%s, %u streams, %u batches of >= %llu instr (medians of warm rounds; round 1, with warm-up: %.4f s):\n"
                  "  stages %.2f M instr/s over the batches' wall time %.4f s (busy %.4f s: upload %.4f, kernels %.4f, "
                  "download %.4f); %llu launches a round\n"
                  "  device span, first upload to last download: %.4f s, %.2f M instr/s\n",
                  services[gpu_s]->name().c_str(), services[gpu_s]->workers(), batches,
                  static_cast<unsigned long long>(options.gpu_batch_instructions),
                  rounds[gpu_s].front().device_phase_seconds, gpu_rate / 1e6, gpu_time, busy, upload, kernels, download,
                  static_cast<unsigned long long>(g.kernel_launches), span, span_rate / 1e6);
    table += block;
    if (llvm_rate > 0) {
      std::snprintf(block, sizeof block, "  %.1fx llvm %s on one core (%.1fx over the device span)\n", gpu_rate / llvm_rate,
                    profile_name(options.profile), span_rate / llvm_rate);
      table += block;
    }
    if (cpu_stages_rate > 0) {
      std::snprintf(block, sizeof block, "  %.1fx stamp's stages on one CPU core\n", gpu_rate / cpu_stages_rate);
      table += block;
    }
  }

  // Stability: within each back end, every emission of a module must hash the same;
  // stamp's objects from the GPU service must equal the CPU executor's.
  w.key("instability").begin_array();
  for (size_t s = 0; s < services.size(); ++s) {
    if (static_cast<int>(s) == gpu_s && stamp_s >= 0) continue;  // checked with the CPU stamp service
    std::vector<size_t> group{s};
    if (static_cast<int>(s) == stamp_s && gpu_s >= 0) group.push_back(static_cast<size_t>(gpu_s));
    for (size_t i = 0; i < modules.size(); ++i) {
      std::map<std::string, std::vector<std::string>> hashes;  // hash -> "[cuda ]round r worker w"
      std::string error;
      for (size_t g : group) {
        for (const auto& r : rounds[g]) {
          const ModuleEmission& e = r.emissions[i];
          if (!e.error.empty()) {
            error = e.error;
            continue;
          }
          hashes[e.object_xxh3].push_back(std::string(static_cast<int>(g) == gpu_s ? "cuda " : "") + "round " +
                                          std::to_string(r.round) + " worker " + std::to_string(e.worker));
        }
      }
      if (!error.empty()) outcome.failed_modules++;
      if (hashes.size() <= 1 && error.empty()) continue;
      // Emits the module twice from its blob and compares: runs anywhere, offline.
      std::string emit = "kiln-emit " + shell_quote(absolute_path(corpus.blob_path(modules[i].id))) + " --backend " +
                         shell_quote(services[s]->backend()) + " --profile " + profile_name(options.profile);
      std::string reproduce = "d=$(mktemp -d) && " + emit + " -o \"$d/a.o\" && " + emit + " -o \"$d/b.o\" && cmp \"$d/a.o\" \"$d/b.o\"";
      if (hashes.size() > 1) outcome.unstable_modules++;
      w.begin_object().field("module", modules[i].id).field("backend", services[s]->backend())
          .field("kind", hashes.size() > 1 ? "bytes differ" : "failed");
      if (!error.empty()) w.field("error", error);
      w.key("objects").begin_object();
      for (const auto& [h, where] : hashes) w.string_array(h, where);
      w.end_object().field("reproduce", reproduce).end_object();
      std::snprintf(line, sizeof line, "%s: module %s (%s): %s\n  reproduce: %s\n",
                    hashes.size() > 1 ? "UNSTABLE" : "FAILED", modules[i].id.c_str(), services[s]->backend().c_str(),
                    hashes.size() > 1 ? "object bytes differ between rounds, workers or devices" : error.c_str(),
                    reproduce.c_str());
      table += line;
    }
  }
  w.end_array();
  w.key("excluded").begin_array();
  for (const auto& x : excluded) {
    w.begin_object().field("module", x.id).field("error", x.error).end_object();
    table += "FAILED: module " + x.id + ", left out of the rounds: " + x.error + "\n";
  }
  w.end_array();
  outcome.failed_modules += excluded.size();
  w.field("unstable_modules", static_cast<uint64_t>(outcome.unstable_modules))
      .field("failed_modules", static_cast<uint64_t>(outcome.failed_modules));
  w.end_object();
  std::snprintf(line, sizeof line, "\n%zu modules x %d rounds x %zu back end(s): %zu unstable, %zu failed\n",
                modules.size() + excluded.size(),
                options.rounds, services.size(), outcome.unstable_modules, outcome.failed_modules);
  table += line;
  outcome.report_json = w.str() + "\n";
  outcome.table = table;
  std::string report_path = options.report_path.empty() ? options.corpus_dir + "/replay-report.json" : options.report_path;
  write_file_atomic(report_path, outcome.report_json);
  return outcome;
}

}  // namespace kiln
