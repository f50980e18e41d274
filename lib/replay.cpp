#include "replay.h"

#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "backend_llvm.h"
#include "backend_stamp.h"
#include "direct_export.h"
#include "flat_export.h"
#include "replay_internal.h"
#include "replay_summary.h"
#include "fallback.h"
#include "bitcode.h"
#include "process.h"
#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "hash.h"
#include "isolate.h"
#include "json.h"
#include "parallel.h"
#include "progress.h"
#include "selection.h"
#include "stats.h"
#include "timeutil.h"

namespace kiln {

uint64_t elf_text_bytes(const std::string& o) {
  if (o.size() < 64 ||
      o.compare(0, 4,
                "\x7f"
                "ELF") != 0)
    return 0;
  auto u16 = [&](size_t at) {
    uint16_t v;
    std::memcpy(&v, o.data() + at, 2);
    return v;
  };
  auto u32 = [&](size_t at) {
    uint32_t v;
    std::memcpy(&v, o.data() + at, 4);
    return v;
  };
  auto u64 = [&](size_t at) {
    uint64_t v;
    std::memcpy(&v, o.data() + at, 8);
    return v;
  };
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
    if (u32(h + 4) == 1 /* SHT_PROGBITS */ && name + 5 <= o.size() && o.compare(name, 5, ".text") == 0)
      total += u64(h + 0x20);
  }
  return total;
}

// The direct reader's route for one module: its plan when the module is whole.
static bool prepare_direct(const ReplayModule& m, StampModule& sm, ModuleEmission& e) {
  DirectExport d;
  try {
    // m.id is the bitcode's xxh3-128; kiln-selection(5) applies as in the back end.
    d = export_direct(m.bytes, m.id, m.id.substr(0, 12), selection_filter(m.id));
  } catch (const KilnError& err) {
    e.reader_reason = std::string("reader: ") + err.what();
    return false;
  }
  e.bitcode_read = d.read_seconds;
  e.direct_export = d.export_seconds;
  e.read_directly = d.declined.empty() && d.declined_function_count == 0;
  if (!d.declined.empty()) e.reader_reason = d.declined;
  else if (!d.whole) e.reader_reason = d.globals_reason.empty() ? "functions fall back to llvm" : d.globals_reason;
  if (!d.declined.empty() || !d.whole) return false;
  sm.plan.flat.flat = std::move(d.flat);
  sm.plan.faults = apply_test_faults(sm.plan.flat.flat);
  sm.plan.flat.verdicts = std::move(d.verdicts);
  sm.plan.flat.emitted_by_stamp = std::move(d.emitted_by_stamp);
  sm.plan.flat.stamp_function_count = d.stamp_function_count;
  sm.plan.data = std::move(d.data);
  sm.plan.whole = true;
  sm.source_name = d.source_filename;
  sm.direct = true;
  return true;
}

StampModule prepare_stamp_module(LlvmBackend& llvm, const ReplayModule& m, ModuleEmission& e) {
  StampModule sm;
  sm.prepared = true;
  bool direct = reader_choice() == ReaderChoice::direct && prepare_direct(m, sm, e);
  e.reader = direct ? "direct" : "llvm";
  if (reader_choice() == ReaderChoice::llvm) e.reader_reason = "--reader llvm";
  // LLVM's route: the comparison in the report, and the route itself when not direct.
  // Verified and its triple checked; e.parse is the parse alone (the direct reader has
  // no verifier either).
  ParsedModule parsed = llvm.parse(m.bytes, m.id, {.parse_seconds = &e.parse});
  Stopwatch clock;
  StampPlan plan = plan_stamp_module(*parsed, m.id.substr(0, 12), selection_filter(m.id));
  e.flat_export = clock.lap();
  if (!direct) {
    sm.plan = std::move(plan);
    sm.source_name = parsed->getSourceFileName();
    sm.module = std::move(parsed);
  }
  return sm;
}

void count_stamp_functions(const StampPlan& plan, ModuleEmission& e) {
  for (const auto& v : plan.flat.verdicts) {
    e.functions += 1;
    e.instructions += v.instructions;
    if (v.stamp()) e.functions_stamp++, e.instructions_stamp += v.instructions;
  }
}

std::string emit_stamp_rest(LlvmBackend& llvm, const StampModule& sm, const std::string& id, ModuleEmission& e) {
  Stopwatch clock;
  std::string rest;
  if (!sm.plan.whole) rest = llvm.codegen(*fallback_module(*sm.module, sm.plan.flat.emitted_by_stamp), id);
  e.fallback = clock.seconds();
  return rest;
}

void finish_stamp_emission(LlvmBackend& llvm, const StampModule& sm, const std::string& id,
                           const std::string& stamp_object, ModuleEmission& e) {
  record_stamp_object(stamp_object, emit_stamp_rest(llvm, sm, id, e), e);
}

void record_stamp_object(const std::string& stamp_object, const std::string& rest, ModuleEmission& e) {
  e.object_xxh3 = xxh3_128_hex(stamp_object + rest);
  e.object_bytes = stamp_object.size() + rest.size();
  e.text_bytes = elf_text_bytes(stamp_object) + elf_text_bytes(rest);
}

namespace {

// What one worker owns for the whole replay; only its own thread of a round uses it.
struct Worker {
  std::unique_ptr<Backend> backend;
  LlvmBackend* llvm = nullptr;  // set when the back end can parse once and emit many times
  bool stamp = false;           // the stamp service: its own LLVM for parsing and fallback
  std::unique_ptr<LlvmBackend> stamp_llvm;
  std::unordered_map<size_t, ParsedModule> parsed;  // each in its own context
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
  }

  std::string name() const override { return "cpu:" + spec_ + " x" + std::to_string(workers_.size()); }
  std::string backend() const override { return spec_; }
  unsigned workers() const override { return static_cast<unsigned>(workers_.size()); }

  // Every module once, on the workers' threads; each worker keeps its back end and
  // what it parsed across rounds (workers_[w] is only ever used by worker w).
  RoundResult run_round(int round) override {
    RoundResult result;
    result.service = name();
    result.round = round;
    result.emissions.assign(modules_.size(), {});
    // Rotate where the shared queue starts so that, over rounds, modules land on
    // different workers and the byte check covers workers as well as rounds.
    const size_t start = (static_cast<size_t>(round) * 7919u) % std::max<size_t>(1, modules_.size());
    Progress progress("round " + std::to_string(round), modules_.size());
    Stopwatch clock;
    parallel_for_workers(modules_.size(), workers(), 1, [&](size_t k, unsigned worker) {
      size_t i = (k + start) % modules_.size();
      result.emissions[i] = emit_one(workers_[worker], worker, i);
      progress.advance();
    });
    result.wall_seconds = clock.seconds();
    progress.finish();
    return result;
  }

 private:
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
          // Invalid IR can crash the code generator: verify once, like kiln-emit does
          // (codegen checks the triple).
          slot = w.llvm->parse(m.bytes, m.id, {.verify = true, .triple = false, .parse_seconds = &e.parse});
          clock.lap();  // e.parse is the parse alone, without the verifier
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
      if (!sm.prepared) sm = prepare_stamp_module(*w.stamp_llvm, m, e);
      count_stamp_functions(sm.plan, e);
      Stopwatch clock;
      std::string stamp_object;
      if (sm.plan.flat.stamp_function_count) {
        StampOutput code = run_stamp_cpu(sm.plan.flat.flat.view(), 1);
        e.stages = clock.seconds();
        stamp_object = write_stamp_object_for(sm.plan.flat.flat, sm.plan.data, sm.source_name, code);
      }
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
};

}  // namespace

std::unique_ptr<EmissionService> make_cpu_service(const std::string& backend_spec, Profile profile, unsigned jobs,
                                                  const std::vector<ReplayModule>& modules) {
  return std::make_unique<CpuService>(backend_spec, profile, jobs, modules);
}

namespace {

// `only`, where given: the modules to sum (the others left out).
StageSums sum_round(const RoundResult& r, const std::vector<bool>* only = nullptr) {
  StageSums s;
  for (size_t i = 0; i < r.emissions.size(); ++i) {
    if (only && !(*only)[i]) continue;
    const ModuleEmission& e = r.emissions[i];
    s.parse += e.parse;
    s.clone += e.clone;
    s.codegen += e.codegen;
    s.flat_export += e.flat_export;
    s.fallback += e.fallback;
    s.stages += e.stages;
    s.elf += e.elf;
    s.bitcode_read += e.bitcode_read;
    s.direct_export += e.direct_export;
    s.modules_direct += e.reader == "direct";
    s.modules_read_directly += e.read_directly;
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
      s.object_bytes += e.object_bytes;
      s.modules++;
    } else {
      s.failed++;
    }
  }
  return s;
}

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

// Per module, the median over the warm rounds of one time of its emissions.
template <class Value>
double module_warm_median(const std::vector<RoundResult>& rounds, size_t i, Value value) {
  std::vector<double> v;
  for (size_t r = rounds.size() > 1 ? 1 : 0; r < rounds.size(); ++r) v.push_back(value(rounds[r].emissions[i]));
  return median(v);
}

void compare_readers(const std::vector<RoundResult>& llvm, const std::vector<RoundResult>& stamp, StampVsLlvm& c) {
  const RoundResult& first = stamp.front();
  c.modules = first.emissions.size();
  for (size_t i = 0; i < first.emissions.size(); ++i) {
    const ModuleEmission& e = first.emissions[i];
    if (!e.error.empty() || !e.read_directly) continue;
    c.modules_read++;
    c.read_llvm_seconds += e.parse + e.flat_export;
    c.read_direct_seconds += e.bitcode_read + e.direct_export;
    const ModuleEmission& l = llvm.front().emissions[i];
    if (e.reader != "direct" || !l.error.empty()) continue;
    c.modules_direct++;
    c.direct_seconds += e.bitcode_read + e.direct_export +
        module_warm_median(stamp, i, [](const ModuleEmission& x) { return x.codegen; });
    c.direct_llvm_seconds += l.parse + module_warm_median(llvm, i, [](const ModuleEmission& x) { return x.codegen; });
  }
  c.read_speedup = c.read_llvm_seconds / std::max(1e-12, c.read_direct_seconds);
  c.direct_end_to_end = c.direct_llvm_seconds / std::max(1e-12, c.direct_seconds);
}

// A thread kept for LLVM's service for the whole replay, which runs its rounds. glibc
// gives each thread a heap (arena) of its own, so that LLVM's memory (every module it
// parsed, kept across rounds) does not interleave with stamp's, as it would not between
// processes. Measured on regex's test corpus (warm rounds, M instr/s): stamp alone on
// the main thread 4.6-4.7; after LLVM's rounds in the same heap 3.5-4.1; with LLVM's
// service here 3.9-4.4, LLVM's own rate unchanged (0.080-0.082, as alone). stamp's
// services stay on the main thread: on a thread's heap stamp alone ran at 4.2-4.3.
class ServiceThread {
 public:
  ServiceThread() : thread_([this] { loop(); }) {}
  ~ServiceThread() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  // Runs `round` on the thread and waits for it; its exception comes back here.
  RoundResult run(const std::function<RoundResult()>& round) {
    std::packaged_task<RoundResult()> task(round);
    std::future<RoundResult> result = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      task_ = [&task] { task(); };
    }
    wake_.notify_all();
    return result.get();
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || task_; });
      if (!task_) return;  // stopped
      std::function<void()> task = std::move(task_);
      task_ = nullptr;
      lock.unlock();
      task();
      lock.lock();
    }
  }
  std::mutex mutex_;
  std::condition_variable wake_;
  std::function<void()> task_;
  bool stop_ = false;
  std::thread thread_;  // last: it starts once the members above exist
};

// The services and their rounds: rounds[service][round].
struct ReplayRounds {
  std::vector<std::unique_ptr<EmissionService>> services;
  std::vector<std::vector<RoundResult>> rounds;
};

// Running the rounds: every service emits every module once a round.
ReplayRounds run_rounds(const ReplayOptions& options, const std::vector<ReplayModule>& modules) {
  ReplayRounds run;
  if (options.cuda) {
    if (std::find(options.backends.begin(), options.backends.end(), "stamp") == options.backends.end())
      throw KilnError(kExitUsage, "", "--device cuda runs stamp's stages: add stamp to --backend");
    run.services.push_back(
        make_gpu_service(options.profile, modules, options.gpu_streams, options.gpu_batch_instructions));
  }
  for (const auto& b : options.backends)
    if (options.cpu || b != "stamp")
      run.services.push_back(make_cpu_service(b, options.profile, options.jobs, modules));
  run.rounds.resize(run.services.size());
  std::vector<std::unique_ptr<ServiceThread>> threads;  // none for stamp's services
  for (const auto& service : run.services)
    threads.push_back(service->backend() == "stamp" ? nullptr : std::make_unique<ServiceThread>());
  for (int r = 1; r <= options.rounds; ++r)
    for (size_t s = 0; s < run.services.size(); ++s) {
      EmissionService& service = *run.services[s];
      run.rounds[s].push_back(threads[s] ? threads[s]->run([&] { return service.run_round(r); })
                                         : service.run_round(r));
    }
  return run;
}

RoundSummary summarize_round(const RoundResult& r) {
  RoundSummary rs;
  rs.round = r.round;
  rs.wall_seconds = r.wall_seconds;
  rs.sums = sum_round(r);
  round_rates(rs);
  return rs;
}

// Which service is which: -1 when there is none.
struct ServiceRoles {
  int llvm = -1, stamp = -1, gpu = -1;
};

ServiceRoles find_roles(const ReplayRounds& run) {
  ServiceRoles roles;
  for (size_t s = 0; s < run.services.size(); ++s) {
    bool on_gpu = run.services[s]->name().rfind("cuda:", 0) == 0;
    if (run.services[s]->backend() == "llvm") roles.llvm = static_cast<int>(s);
    if (run.services[s]->backend() == "stamp" && !on_gpu) roles.stamp = static_cast<int>(s);
    if (on_gpu) roles.gpu = static_cast<int>(s);
  }
  return roles;
}

// Medians over the warm rounds (all but the first, which also parses and exports,
// and on the GPU warms up), so that one noisy round does not decide a ratio.
template <class Value>
double warm_median(const std::vector<RoundResult>& rounds, Value value) {
  std::vector<double> v;
  for (size_t r = rounds.size() > 1 ? 1 : 0; r < rounds.size(); ++r) v.push_back(value(rounds[r]));
  return median(v);
}

template <class Value>
double warm_sums_median(const std::vector<RoundResult>& rounds, Value value) {
  return warm_median(rounds, [&](const RoundResult& r) { return value(sum_round(r)); });
}

double llvm_emit_seconds(const StageSums& x) { return x.clone + x.codegen; }
double stamp_stages_seconds(const StageSums& x) { return x.stages; }

}  // namespace

// On the modules both emitted in every round (the failures are the report's
// instability; a ratio over different modules on each side would be wrong).
StampVsLlvm compare_stamp_llvm(const std::vector<RoundResult>& llvm, const std::vector<RoundResult>& stamp) {
  std::vector<bool> both(stamp.front().emissions.size(), true);
  for (const auto* rounds : {&llvm, &stamp})
    for (const RoundResult& r : *rounds)
      for (size_t i = 0; i < both.size(); ++i) both[i] = both[i] && r.emissions[i].error.empty();
  std::vector<StageSums> l, st;
  for (const auto& r : llvm) l.push_back(sum_round(r, &both));
  for (const auto& r : stamp) st.push_back(sum_round(r, &both));
  StampVsLlvm c = compare_round_sums(l, st, stamp.back().round);
  c.modules_compared = static_cast<uint64_t>(std::count(both.begin(), both.end(), true));
  c.modules_left_out = both.size() - c.modules_compared;
  c.llvm_rounds = std::move(l);
  c.stamp_rounds = std::move(st);
  compare_readers(llvm, stamp, c);
  return c;
}

// From the rounds' sums alone, so that a merge of shards' reports (replay_merge.cpp)
// computes the figures from its joined rounds just as one run does.
StampVsLlvm compare_round_sums(const std::vector<StageSums>& llvm, const std::vector<StageSums>& stamp,
                               int last_round) {
  StampVsLlvm c;
  c.last_round = last_round;
  StageSums l = llvm.back(), first = stamp.front();
  StageSums& st = c.st = stamp.back();
  double llvm_time = warm_median_of_sums(llvm, llvm_emit_seconds);
  double stamp_time = warm_median_of_sums(stamp, [](const StageSums& x) { return x.codegen; });
  double stamp_stages_time = warm_median_of_sums(stamp, stamp_stages_seconds);
  double fallback_time = warm_median_of_sums(stamp, [](const StageSums& x) { return x.fallback; });
  st.stages = stamp_stages_time;
  st.elf = stamp_time - stamp_stages_time;
  st.codegen = stamp_time;
  c.llvm_rate = l.instructions / std::max(1e-12, llvm_time);
  c.stamp_rate = st.instructions_stamp / std::max(1e-12, stamp_time);
  c.end_to_end = llvm_time / std::max(1e-12, stamp_time + fallback_time);
  c.export_rate = first.instructions / std::max(1e-12, first.flat_export);
  c.parse_rate = first.instructions / std::max(1e-12, first.parse);
  c.text_ratio = l.text_bytes ? static_cast<double>(st.text_bytes) / static_cast<double>(l.text_bytes) : 0;
  c.object_ratio = l.object_bytes ? static_cast<double>(st.object_bytes) / static_cast<double>(l.object_bytes) : 0;
  return c;
}

void round_rates(RoundSummary& rs) {
  const StageSums& sums = rs.sums;
  double emit_cpu = sums.clone + sums.codegen + sums.fallback;
  rs.per_core = emit_cpu > 0 ? static_cast<double>(sums.instructions) / emit_cpu : 0;
  rs.wall_rate = rs.wall_seconds > 0 ? static_cast<double>(sums.instructions) / rs.wall_seconds : 0;
  rs.modules_per_second = rs.wall_seconds > 0 ? static_cast<double>(sums.modules) / rs.wall_seconds : 0.0;
}

namespace {

// The GPU service: its stages (upload, kernels, download) against llvm and against
// the CPU executor's stages, on the same modules.
GpuSummary summarize_gpu(const ReplayOptions& options, const std::vector<ReplayModule>& modules,
                         const ReplayRounds& run, const ServiceRoles& roles) {
  const std::vector<RoundResult>& rounds = run.rounds[roles.gpu];
  const EmissionService& service = *run.services[roles.gpu];
  GpuSummary g;
  StageSums last_sums = sum_round(rounds.back());
  g.service = service.name();
  g.streams = service.workers();
  g.batch_instructions = options.gpu_batch_instructions;
  g.kernel_launches = last_sums.kernel_launches;
  g.first_round_device_phase = rounds.front().device_phase_seconds;
  // Its rate is over the wall time of the batches (streams overlapped; host
  // preparation and cutting included), not the sum of the batches' busy times.
  g.gpu_time = warm_median(rounds, [](const RoundResult& r) { return r.device_phase_seconds; });
  // The device's own time, first upload to last download: the GPU emission time.
  g.span = warm_median(rounds, [](const RoundResult& r) { return r.device_span_seconds; });
  g.span_rate = last_sums.instructions_stamp / std::max(1e-12, g.span);
  g.busy = warm_sums_median(rounds, stamp_stages_seconds);
  g.upload = warm_sums_median(rounds, [](const StageSums& x) { return x.gpu_upload; });
  g.kernels = warm_sums_median(rounds, [](const StageSums& x) { return x.gpu_kernels; });
  g.download = warm_sums_median(rounds, [](const StageSums& x) { return x.gpu_download; });
  g.gpu_rate = last_sums.instructions_stamp / std::max(1e-12, g.gpu_time);
  if (roles.llvm >= 0) {
    const auto& llvm = run.rounds[roles.llvm];
    g.llvm_rate = sum_round(llvm.back()).instructions / std::max(1e-12, warm_sums_median(llvm, llvm_emit_seconds));
  }
  if (roles.stamp >= 0) {
    const auto& stamp = run.rounds[roles.stamp];
    g.cpu_stages_rate =
        sum_round(stamp.back()).instructions_stamp / std::max(1e-12, warm_sums_median(stamp, stamp_stages_seconds));
  }
  const RoundResult& last = rounds.back();
  for (const ModuleEmission& e : last.emissions) g.batches += e.first_in_batch ? 1 : 0;
  for (size_t i = 0; i < modules.size(); ++i)
    if (!last.emissions[i].device.empty()) g.receipts.push_back({modules[i].id, last.round, last.emissions[i]});
  return g;
}

// Stability: within each back end, every emission of a module must hash the same;
// stamp's objects from the GPU service must equal the CPU executor's.
}  // namespace

// Emits the module twice from its blob and compares: runs anywhere, offline.
std::string reproduce_command(const Corpus& corpus, const std::string& id, const std::string& backend,
                              const std::string& profile) {
  std::string emit = "kiln-emit " + shell_quote(absolute_path(corpus.blob_path(id))) + " --backend " +
      shell_quote(backend) + " --profile " + profile;
  return "d=$(mktemp -d) && " + emit + " -o \"$d/a.o\" && " + emit + " -o \"$d/b.o\" && cmp \"$d/a.o\" \"$d/b.o\"";
}

namespace {

void find_instability(const ReplayOptions& options, const Corpus& corpus, const std::vector<ReplayModule>& modules,
                      const ReplayRounds& run, const ServiceRoles& roles, ReplaySummary& summary) {
  for (size_t s = 0; s < run.services.size(); ++s) {
    if (static_cast<int>(s) == roles.gpu && roles.stamp >= 0) continue;  // checked with the CPU stamp service
    std::vector<size_t> group{s};
    if (static_cast<int>(s) == roles.stamp && roles.gpu >= 0) group.push_back(static_cast<size_t>(roles.gpu));
    for (size_t i = 0; i < modules.size(); ++i) {
      Instability x;
      for (size_t g : group) {
        for (const auto& r : run.rounds[g]) {
          const ModuleEmission& e = r.emissions[i];
          if (!e.error.empty()) {
            x.error = e.error;
            continue;
          }
          x.objects[e.object_xxh3].push_back(std::string(static_cast<int>(g) == roles.gpu ? "cuda " : "") + "round " +
                                             std::to_string(r.round) + " worker " + std::to_string(e.worker));
        }
      }
      if (!x.error.empty()) summary.failed_modules++;
      x.differ = x.objects.size() > 1;
      const char* verdict = !x.error.empty() ? "failed" : x.differ ? "unstable" : "stable";
      summary.verdicts.push_back({modules[i].id, run.services[s]->backend(), verdict,
                                  verdict == std::string("stable") ? x.objects.begin()->first : "",
                                  run.rounds[s].back().emissions[i].instructions});
      if (!x.differ && x.error.empty()) continue;
      if (x.differ) summary.unstable_modules++;
      x.module = modules[i].id;
      x.backend = run.services[s]->backend();
      x.reproduce = reproduce_command(corpus, x.module, x.backend, profile_name(options.profile));
      summary.instability.push_back(std::move(x));
    }
  }
}

ReplaySummary summarize_replay(const ReplayOptions& options, const Corpus& corpus,
                               const std::vector<ReplayModule>& modules, std::vector<Excluded> excluded,
                               const ReplayRounds& run) {
  ReplaySummary summary;
  summary.corpus = absolute_path(options.corpus_dir);
  summary.time = iso8601_now();
  summary.profile = profile_name(options.profile);
  summary.rounds = options.rounds;
  summary.jobs = std::max(1u, options.jobs);
  summary.modules = modules.size() + excluded.size();
  for (size_t s = 0; s < run.services.size(); ++s) {
    ServiceSummary service{run.services[s]->name(), run.services[s]->backend(), run.services[s]->workers(), {}};
    for (const auto& r : run.rounds[s]) service.rounds.push_back(summarize_round(r));
    summary.services.push_back(std::move(service));
  }
  ServiceRoles roles = find_roles(run);
  if (roles.llvm >= 0 && roles.stamp >= 0)
    summary.stamp_vs_llvm = compare_stamp_llvm(run.rounds[roles.llvm], run.rounds[roles.stamp]);
  if (roles.gpu >= 0) summary.gpu = summarize_gpu(options, modules, run, roles);
  find_instability(options, corpus, modules, run, roles, summary);
  summary.failed_modules += excluded.size();
  summary.excluded = std::move(excluded);
  return summary;
}

// The fields of one round's sums (a service's round, a compared round).
void json_round_sums(JsonWriter& w, const StageSums& sums) {
  w.key("stages")
      .begin_object()
      .field("parse", sums.parse)
      .field("flat_export", sums.flat_export)
      .field("bitcode_read", sums.bitcode_read)
      .field("direct_export", sums.direct_export)
      .field("clone", sums.clone)
      .field("codegen", sums.codegen)
      .field("fallback", sums.fallback)
      .field("stamp_stages", sums.stages)
      .field("stamp_elf", sums.elf)
      .end_object()
      .field("instructions", sums.instructions)
      .field("modules_ok", sums.modules)
      .field("modules_failed", sums.failed)
      .field("functions", sums.functions)
      .field("functions_stamp", sums.functions_stamp)
      .field("instructions_stamp", sums.instructions_stamp)
      .field("text_bytes", sums.text_bytes)
      .field("object_bytes", sums.object_bytes)
      .field("kernel_launches", sums.kernel_launches)
      .field("gpu_upload", sums.gpu_upload)
      .field("gpu_kernels", sums.gpu_kernels)
      .field("gpu_download", sums.gpu_download);
}

void json_services(JsonWriter& w, const ReplaySummary& sum) {
  w.key("services").begin_array();
  for (const ServiceSummary& service : sum.services) {
    w.begin_object().field("name", service.name).field("backend", service.backend).field("workers", service.workers);
    w.key("rounds").begin_array();
    for (const RoundSummary& r : service.rounds) {
      w.begin_object().field("round", r.round).field("wall_seconds", r.wall_seconds);
      json_round_sums(w, r.sums);
      w.field("instructions_per_second_wall", r.wall_rate)
          .field("instructions_per_core_second", r.per_core)
          .field("modules_per_second_wall", r.modules_per_second)
          .end_object();
    }
    w.end_array().end_object();
  }
  w.end_array();
}

void json_stamp_vs_llvm(JsonWriter& w, const StampVsLlvm& c) {
  const StageSums& st = c.st;
  w.key("stamp_vs_llvm")
      .begin_object()
      .field("llvm_instructions_per_core_second", c.llvm_rate)
      .field("stamp_instructions_per_core_second", c.stamp_rate)
      .field("stamp_speedup_on_its_functions", c.llvm_rate > 0 ? c.stamp_rate / c.llvm_rate : 0.0)
      .field("end_to_end_speedup_with_fallback", c.end_to_end)
      .field("stamp_share_of_instructions",
             st.instructions ? static_cast<double>(st.instructions_stamp) / st.instructions : 0.0)
      .field("stamp_share_of_functions", st.functions ? static_cast<double>(st.functions_stamp) / st.functions : 0.0)
      .field("flat_export_instructions_per_second", c.export_rate)
      .field("parse_instructions_per_second", c.parse_rate)
      .field("text_ratio", c.text_ratio)
      .field("object_ratio", c.object_ratio)
      .field("stamp_stages_seconds", st.stages)
      .field("stamp_elf_seconds", st.elf)
      .field("modules_compared", c.modules_compared)
      .field("modules_left_out", c.modules_left_out);
  w.key("rounds").begin_array();
  for (size_t r = 0; r < c.stamp_rounds.size() && r < c.llvm_rounds.size(); ++r) {
    w.begin_object().key("llvm").begin_object();
    json_round_sums(w, c.llvm_rounds[r]);
    w.end_object().key("stamp").begin_object();
    json_round_sums(w, c.stamp_rounds[r]);
    w.end_object().end_object();
  }
  w.end_array()
      .key("reader")
      .begin_object()
      .field("modules", c.modules)
      .field("modules_read_directly", c.modules_read)
      .field("modules_direct", c.modules_direct)
      .field("llvm_parse_export_seconds", c.read_llvm_seconds)
      .field("direct_read_export_seconds", c.read_direct_seconds)
      .field("read_speedup", c.read_speedup)
      .field("llvm_parse_codegen_seconds", c.direct_llvm_seconds)
      .field("direct_bitcode_to_object_seconds", c.direct_seconds)
      .field("direct_end_to_end_speedup", c.direct_end_to_end)
      .end_object()
      .end_object();
}

void json_gpu(JsonWriter& w, const GpuSummary& g) {
  w.key("gpu")
      .begin_object()
      .field("service", g.service)
      .field("streams", g.streams)
      .field("batches", g.batches)
      .field("batch_instructions", g.batch_instructions)
      .field("stages_instructions_per_second", g.gpu_rate)
      .field("device_phase_seconds", g.gpu_time)
      .field("device_span_seconds", g.span)
      .field("span_instructions_per_second", g.span_rate)
      .field("span_speedup_vs_llvm", g.llvm_rate > 0 ? g.span_rate / g.llvm_rate : 0.0)
      .field("busy_seconds", g.busy)
      .field("upload_seconds", g.upload)
      .field("kernels_seconds", g.kernels)
      .field("download_seconds", g.download)
      .field("first_round_device_phase_seconds", g.first_round_device_phase)
      .field("kernel_launches_per_round", g.kernel_launches)
      .field("speedup_vs_llvm", g.llvm_rate > 0 ? g.gpu_rate / g.llvm_rate : 0.0)
      .field("speedup_vs_cpu_stages", g.cpu_stages_rate > 0 ? g.gpu_rate / g.cpu_stages_rate : 0.0);
  // A receipt per module emitted on the device in the last round.
  w.key("receipts").begin_array();
  for (const GpuReceipt& receipt : g.receipts) {
    const ModuleEmission& e = receipt.emission;
    w.begin_object()
        .field("module", receipt.module)
        .field("round", receipt.round)
        .field("device", e.device)
        .field("object_from_device", e.object_from_device)
        .field("batch", e.batch)
        .field("batch_modules", e.batch_modules)
        .field("batch_kernel_launches", e.kernel_launches)
        .field("object_xxh3", e.object_xxh3)
        .end_object();
  }
  w.end_array().end_object();
}

void json_instability(JsonWriter& w, const ReplaySummary& sum) {
  w.key("instability").begin_array();
  for (const Instability& x : sum.instability) {
    w.begin_object()
        .field("module", x.module)
        .field("backend", x.backend)
        .field("kind", x.differ ? "bytes differ" : "failed");
    if (!x.error.empty()) w.field("error", x.error);
    w.key("objects").begin_object();
    for (const auto& [h, where] : x.objects) w.string_array(h, where);
    w.end_object().field("reproduce", x.reproduce).end_object();
  }
  w.end_array();
  w.key("excluded").begin_array();
  for (const auto& x : sum.excluded) w.begin_object().field("module", x.id).field("error", x.error).end_object();
  w.end_array();
}

void json_verdicts(JsonWriter& w, const ReplaySummary& sum) {
  w.key("module_verdicts").begin_array();
  for (const ModuleVerdict& v : sum.verdicts) {
    w.begin_object().field("module", v.module).field("backend", v.backend).field("verdict", v.verdict);
    if (!v.object_xxh3.empty()) w.field("object_xxh3", v.object_xxh3);
    w.field("instructions", v.instructions).end_object();
  }
  w.end_array();
}

}  // namespace

// The JSON report (kiln-replay-report).
std::string render_report_json(const ReplaySummary& sum) {
  JsonWriter w;
  w.begin_object()
      .field("schema", "kiln-replay-report")
      .field("v", kReplaySchemaVersion)
      .field("corpus", sum.corpus)
      .field("time", sum.time);
  if (!sum.shard.empty()) w.field("shard", sum.shard);
  w.field("profile", sum.profile)
      .field("rounds", sum.rounds)
      .field("jobs", sum.jobs)
      .field("modules", static_cast<uint64_t>(sum.modules))
      .field("modules_excluded", static_cast<uint64_t>(sum.excluded.size()));
  json_services(w, sum);
  if (sum.stamp_vs_llvm) json_stamp_vs_llvm(w, *sum.stamp_vs_llvm);
  if (sum.gpu) json_gpu(w, *sum.gpu);
  json_instability(w, sum);
  json_verdicts(w, sum);
  w.field("unstable_modules", static_cast<uint64_t>(sum.unstable_modules))
      .field("failed_modules", static_cast<uint64_t>(sum.failed_modules));
  w.end_object();
  return w.str() + "\n";
}

namespace {

std::string table_stamp_vs_llvm(const ReplaySummary& sum) {
  const StampVsLlvm& c = *sum.stamp_vs_llvm;
  const StageSums& st = c.st;
  char block[2048];
  std::snprintf(
      block, sizeof block,
      "\nstamp vs llvm (medians of warm rounds 2..%d, one core per worker):\n"
      "  stamp emits its %.1f%% of instructions (%.1f%% of functions) at %.2f M instr/s; llvm %s emits all at %.3f M "
      "instr/s: %.1fx\n"
      "  of stamp's time, %.0f%% is its stages (the kernels, on the CPU: %.1f M instr/s) and %.0f%% writing ELF "
      "objects\n"
      "  end to end per module, stamp + llvm fallback vs llvm alone: %.2fx (ld.lld -r combining not included)\n"
      "  flat export %.2f M instr/s, LLVM bitcode parsing %.2f M instr/s (both once per worker)\n"
      "  .text: stamp + fallback %.2fx the size of llvm's; whole objects %.2fx\n"
      "  direct reader: read %llu of %llu modules (every function), took %llu whole without LLVM; read + export "
      "%.1fx faster than LLVM's parse + export; bitcode to object %.1fx faster than LLVM's parse + codegen\n",
      c.last_round, 100.0 * st.instructions_stamp / std::max<uint64_t>(1, st.instructions),
      100.0 * st.functions_stamp / std::max<uint64_t>(1, st.functions), c.stamp_rate / 1e6, sum.profile.c_str(),
      c.llvm_rate / 1e6, c.llvm_rate > 0 ? c.stamp_rate / c.llvm_rate : 0.0,
      100.0 * st.stages / std::max(1e-12, st.codegen), st.instructions_stamp / std::max(1e-12, st.stages) / 1e6,
      100.0 * st.elf / std::max(1e-12, st.codegen), c.end_to_end, c.export_rate / 1e6, c.parse_rate / 1e6, c.text_ratio,
      c.object_ratio, (unsigned long long)c.modules_read, (unsigned long long)c.modules,
      (unsigned long long)c.modules_direct, c.read_speedup, c.direct_end_to_end);
  std::string text = block;
  if (c.modules_left_out)
    text += "  (all but the reader's figures over the " + std::to_string(c.modules_compared) + " of " +
        std::to_string(c.modules_compared + c.modules_left_out) +
        " modules that both back ends emitted in every round; the others failed)\n";
  return text;
}

std::string table_gpu(const ReplaySummary& sum) {
  const GpuSummary& g = *sum.gpu;
  std::string table;
  char block[1024];
  std::snprintf(
      block, sizeof block,
      "\n%s, %u streams, %u batches of >= %llu instr (medians of warm rounds; round 1, with warm-up: %.4f s):\n"
      "  stages %.2f M instr/s over the batches' wall time %.4f s (busy %.4f s: upload %.4f, kernels %.4f, "
      "download %.4f); %llu launches a round\n"
      "  device span, first upload to last download: %.4f s, %.2f M instr/s\n",
      g.service.c_str(), g.streams, g.batches, static_cast<unsigned long long>(g.batch_instructions),
      g.first_round_device_phase, g.gpu_rate / 1e6, g.gpu_time, g.busy, g.upload, g.kernels, g.download,
      static_cast<unsigned long long>(g.kernel_launches), g.span, g.span_rate / 1e6);
  table += block;
  if (g.llvm_rate > 0) {
    std::snprintf(block, sizeof block, "  %.1fx llvm %s on one core (%.1fx over the device span)\n",
                  g.gpu_rate / g.llvm_rate, sum.profile.c_str(), g.span_rate / g.llvm_rate);
    table += block;
  }
  if (g.cpu_stages_rate > 0) {
    std::snprintf(block, sizeof block, "  %.1fx stamp's stages on one CPU core\n", g.gpu_rate / g.cpu_stages_rate);
    table += block;
  }
  return table;
}

}  // namespace

// The table for people.
std::string render_table(const ReplaySummary& sum) {
  std::string table;
  char line[512];
  std::snprintf(line, sizeof line, "%-16s %5s %8s %8s %8s %8s %9s %9s %11s %9s %s\n", "service", "round", "wall s",
                "parse s", "export s", "clone s", "codegen s", "fallback", "M instr/s", "modules/s", "failed");
  table += line;
  for (const ServiceSummary& service : sum.services) {
    for (const RoundSummary& r : service.rounds) {
      const StageSums& sums = r.sums;
      std::snprintf(line, sizeof line, "%-16s %5d %8.3f %8.3f %8.3f %8.3f %9.3f %9.3f %11.3f %9.1f %llu\n",
                    service.name.c_str(), r.round, r.wall_seconds, sums.parse, sums.flat_export, sums.clone,
                    sums.codegen, sums.fallback, r.per_core / 1e6, r.modules_per_second,
                    (unsigned long long)sums.failed);
      table += line;
    }
  }
  if (sum.stamp_vs_llvm) table += table_stamp_vs_llvm(sum);
  if (sum.gpu) table += table_gpu(sum);
  // Not through a fixed buffer: a reproduce command (a cmd: back end's, twice) is long.
  for (const Instability& x : sum.instability)
    table += std::string(x.differ ? "UNSTABLE" : "FAILED") + ": module " + x.module + " (" + x.backend +
        "): " + (x.differ ? "object bytes differ between rounds, workers or devices" : x.error) +
        "\n  reproduce: " + x.reproduce + "\n";
  for (const auto& x : sum.excluded) table += "FAILED: module " + x.id + ", left out of the rounds: " + x.error + "\n";
  std::snprintf(line, sizeof line, "\n%zu modules x %d rounds x %zu back end(s): %zu unstable, %zu failed\n",
                sum.modules, sum.rounds, sum.services.size(), sum.unstable_modules, sum.failed_modules);
  table += line;
  return table;
}

ReplayOutcome run_replay(const ReplayOptions& options) {
  Corpus corpus = Corpus::open(options.corpus_dir);
  std::vector<ModuleRecord> records = corpus.modules();
  if (records.empty()) throw KilnError(kExitBadInput, options.corpus_dir, "the corpus holds no modules");
  // A shard may hold none of them: its report is then empty, and still joins the others'.
  std::vector<ReplayModule> modules;
  for (const auto& rec : records)
    if (in_shard(rec.id, options.shard)) modules.push_back({rec.id, corpus.load_blob(rec.id)});
  if (options.rounds < 1) throw KilnError(kExitUsage, "", "--rounds must be at least 1");
  std::vector<Excluded> excluded = vet_modules(modules, options);
  ReplayRounds run = run_rounds(options, modules);
  ReplaySummary summary = summarize_replay(options, corpus, modules, std::move(excluded), run);
  if (!options.shard.whole()) summary.shard = options.shard.text();

  ReplayOutcome outcome;
  outcome.unstable_modules = summary.unstable_modules;
  outcome.failed_modules = summary.failed_modules;
  outcome.report_json = render_report_json(summary);
  outcome.table = render_table(summary);
  write_file_atomic(options.report_path.empty() ? corpus.replay_report_path(options.shard) : options.report_path,
                    outcome.report_json);
  return outcome;
}

}  // namespace kiln
