#include "replay.h"

#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "backend_llvm.h"
#include "bitcode.h"
#include "process.h"
#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "hash.h"
#include "json.h"
#include "progress.h"
#include "timeutil.h"

namespace kiln {

namespace {

// What one worker thread owns for the whole replay.
struct Worker {
  std::unique_ptr<Backend> backend;
  LlvmBackend* llvm = nullptr;  // set when the back end can parse once and emit many times
  std::unordered_map<size_t, std::unique_ptr<llvm::Module>> parsed;
};

class CpuService : public EmissionService {
 public:
  CpuService(const std::string& spec, Profile profile, unsigned jobs, const std::vector<ReplayModule>& modules)
      : spec_(spec), modules_(modules) {
    unsigned n = std::max(1u, jobs);
    workers_.resize(n);
    for (auto& w : workers_) {
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

  std::string name() const override { return "cpu:" + spec_ + " x" + std::to_string(workers_.size()); }
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
  double parse = 0, clone = 0, codegen = 0;
  uint64_t instructions = 0, modules = 0, failed = 0;
};

StageSums sum_round(const RoundResult& r) {
  StageSums s;
  for (const auto& e : r.emissions) {
    s.parse += e.parse;
    s.clone += e.clone;
    s.codegen += e.codegen;
    if (e.error.empty()) {
      s.instructions += e.instructions;
      s.modules++;
    } else {
      s.failed++;
    }
  }
  return s;
}

}  // namespace

ReplayOutcome run_replay(const ReplayOptions& options) {
  Corpus corpus = Corpus::open(options.corpus_dir);
  std::vector<ReplayModule> modules;
  for (const auto& rec : corpus.modules()) modules.push_back({rec.id, corpus.load_blob(rec.id)});
  if (modules.empty()) throw KilnError(kExitBadInput, options.corpus_dir, "the corpus holds no modules");
  if (options.rounds < 1) throw KilnError(kExitUsage, "", "--rounds must be at least 1");

  std::vector<std::unique_ptr<EmissionService>> services;
  for (const auto& b : options.backends) services.push_back(make_cpu_service(b, options.profile, options.jobs, modules));

  // rounds[service][round]
  std::vector<std::vector<RoundResult>> rounds(services.size());
  for (int r = 1; r <= options.rounds; ++r)
    for (size_t s = 0; s < services.size(); ++s) rounds[s].push_back(services[s]->run_round(r));

  ReplayOutcome outcome;
  JsonWriter w;
  w.begin_object().field("schema", "kiln-replay-report").field("v", kReplaySchemaVersion)
      .field("corpus", absolute_path(options.corpus_dir)).field("time", iso8601_now())
      .field("profile", profile_name(options.profile)).field("rounds", options.rounds).field("jobs", std::max(1u, options.jobs))
      .field("modules", static_cast<uint64_t>(modules.size()));
  std::string table;
  char line[512];
  std::snprintf(line, sizeof line, "%-22s %5s %9s %9s %9s %9s %12s %10s %s\n", "service", "round", "wall s", "parse s",
                "clone s", "codegen s", "M instr/s", "modules/s", "failed");
  table += line;
  w.key("services").begin_array();
  for (size_t s = 0; s < services.size(); ++s) {
    w.begin_object().field("name", services[s]->name()).field("backend", services[s]->backend())
        .field("workers", services[s]->workers());
    w.key("rounds").begin_array();
    for (const auto& r : rounds[s]) {
      StageSums sums = sum_round(r);
      // Throughput over the emission work itself (clone + codegen), per core-second,
      // and over the round's wall time (all workers together).
      double emit_cpu = sums.clone + sums.codegen;
      double per_core = emit_cpu > 0 ? static_cast<double>(sums.instructions) / emit_cpu : 0;
      double wall_rate = r.wall_seconds > 0 ? static_cast<double>(sums.instructions) / r.wall_seconds : 0;
      w.begin_object().field("round", r.round).field("wall_seconds", r.wall_seconds)
          .key("stages").begin_object().field("parse", sums.parse).field("clone", sums.clone).field("codegen", sums.codegen).end_object()
          .field("instructions", sums.instructions).field("modules_ok", sums.modules).field("modules_failed", sums.failed)
          .field("instructions_per_second_wall", wall_rate).field("instructions_per_core_second", per_core)
          .field("modules_per_second_wall", r.wall_seconds > 0 ? static_cast<double>(sums.modules) / r.wall_seconds : 0.0)
          .end_object();
      std::snprintf(line, sizeof line, "%-22s %5d %9.3f %9.3f %9.3f %9.3f %12.3f %10.1f %llu\n", services[s]->name().c_str(),
                    r.round, r.wall_seconds, sums.parse, sums.clone, sums.codegen, wall_rate / 1e6,
                    r.wall_seconds > 0 ? sums.modules / r.wall_seconds : 0.0, (unsigned long long)sums.failed);
      table += line;
    }
    w.end_array().end_object();
  }
  w.end_array();

  // Stability: within each back end, every emission of a module must hash the same.
  w.key("instability").begin_array();
  for (size_t s = 0; s < services.size(); ++s) {
    for (size_t i = 0; i < modules.size(); ++i) {
      std::map<std::string, std::vector<std::string>> hashes;  // hash -> "round r worker w"
      std::string error;
      for (const auto& r : rounds[s]) {
        const ModuleEmission& e = r.emissions[i];
        if (!e.error.empty()) {
          error = e.error;
          continue;
        }
        hashes[e.object_xxh3].push_back("round " + std::to_string(r.round) + " worker " + std::to_string(e.worker));
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
                    hashes.size() > 1 ? "object bytes differ between rounds or workers" : error.c_str(), reproduce.c_str());
      table += line;
    }
  }
  w.end_array();
  w.field("unstable_modules", static_cast<uint64_t>(outcome.unstable_modules))
      .field("failed_modules", static_cast<uint64_t>(outcome.failed_modules));
  w.end_object();
  std::snprintf(line, sizeof line, "\n%zu modules x %d rounds x %zu back end(s): %zu unstable, %zu failed\n", modules.size(),
                options.rounds, services.size(), outcome.unstable_modules, outcome.failed_modules);
  table += line;
  outcome.report_json = w.str() + "\n";
  outcome.table = table;
  std::string report_path = options.report_path.empty() ? options.corpus_dir + "/replay-report.json" : options.report_path;
  write_file_atomic(report_path, outcome.report_json);
  return outcome;
}

}  // namespace kiln
