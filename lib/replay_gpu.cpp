// kiln-replay's GPU service: stamp with its stages on a GPU. Each module is parsed,
// verified and exported once; every round its flat form goes to the GPU in batches,
// and several executors (a CUDA stream, buffers and a host thread each) take batches
// from one queue, so that one batch's upload, another's kernels and a third's download
// overlap. The objects are then written on the CPU: stamp's part from the GPU's code,
// and LLVM's part for any function stamp leaves.
#include <llvm/IR/Module.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "backend_llvm.h"
#include "backend_stamp.h"
#include "error.h"
#include "progress.h"
#include "replay.h"
#include "replay_internal.h"
#include "stamp_gpu.h"
#include "timeutil.h"

namespace kiln {

namespace {

struct PreparedModule {
  StampModule sm;
  std::string error;  // why it could not be prepared (then it fails every round)
  bool tried = false;
};

// Consecutive modules with stamp functions, at least `instructions` in all.
struct GpuBatch {
  std::vector<size_t> modules;
  std::vector<FlatModuleView> views;
  uint64_t instructions = 0;
};

class GpuStampService : public EmissionService {
 public:
  GpuStampService(Profile profile, const std::vector<ReplayModule>& modules,
                  std::vector<std::unique_ptr<StampGpuExecutor>> executors, uint64_t batch_instructions)
      : modules_(modules), llvm_(std::make_unique<LlvmBackend>(profile)), executors_(std::move(executors)),
        batch_instructions_(batch_instructions), prepared_(modules.size()) {}

  std::string name() const override { return "cuda:stamp (" + executors_[0]->device_name() + ")"; }
  std::string backend() const override { return "stamp"; }
  unsigned workers() const override { return static_cast<unsigned>(executors_.size()); }

  RoundResult run_round(int round) override {
    RoundResult result;
    result.service = name();
    result.round = round;
    result.emissions.assign(modules_.size(), {});
    Progress progress("round " + std::to_string(round) + " (gpu)", modules_.size());
    Stopwatch clock;
    for (size_t i = 0; i < modules_.size(); ++i) prepare(i, result.emissions[i]);
    std::vector<GpuBatch> batches = make_batches();
    std::vector<StampOutput> code(modules_.size());
    result.device_phase_seconds = run_batches(batches, code, result.emissions, &result.device_span_seconds);
    for (size_t i = 0; i < modules_.size(); ++i) {
      finish(i, code[i], result.emissions[i]);
      progress.advance();
    }
    result.wall_seconds = clock.seconds();
    progress.finish();
    return result;
  }

 private:
  // Parse, verify and export, the first time only (then its times are recorded).
  void prepare(size_t i, ModuleEmission& e) {
    PreparedModule& p = prepared_[i];
    if (p.tried) return;
    p.tried = true;
    try {
      p.sm = prepare_stamp_module(*llvm_, modules_[i], e);
    } catch (const std::exception& err) {
      p.error = err.what();
    }
  }

  std::vector<GpuBatch> make_batches() const {
    std::vector<GpuBatch> batches;
    for (size_t i = 0; i < modules_.size(); ++i) {
      const PreparedModule& p = prepared_[i];
      if (!p.sm.module || !p.sm.plan.flat.stamp_function_count) continue;
      if (batches.empty() || batches.back().instructions >= batch_instructions_) batches.emplace_back();
      batches.back().modules.push_back(i);
      batches.back().views.push_back(p.sm.plan.flat.flat.view());
      batches.back().instructions += p.sm.plan.flat.flat.insts.size();
    }
    return batches;
  }

  // Every executor's thread takes the next batch. Returns the wall time of it all, and
  // in *span the device's time from the first upload to the last download.
  double run_batches(const std::vector<GpuBatch>& batches, std::vector<StampOutput>& code,
                     std::vector<ModuleEmission>& emissions, double* span) {
    std::atomic<size_t> next{0};
    std::vector<double> begin(executors_.size(), 1e300), end(executors_.size(), 0);
    Stopwatch wall;
    std::vector<std::thread> threads;
    for (size_t k = 0; k < executors_.size(); ++k)
      threads.emplace_back([&, k] {
        StampGpuExecutor& gpu = *executors_[k];
        for (size_t b; (b = next++) < batches.size();) {
          const GpuBatch& batch = batches[b];
          try {
            std::vector<StampOutput> cut = gpu.run_batch(batch.views.data(), batch.views.size());
            const StampGpuTimes& t = gpu.last_times();
            begin[k] = std::min(begin[k], t.span_begin), end[k] = std::max(end[k], t.span_end);
            const double kernels = t.order + t.frame + t.measure + t.offsets + t.encode + t.exception_tables;
            for (size_t j = 0; j < batch.modules.size(); ++j) {
              const size_t i = batch.modules[j];
              code[i] = std::move(cut[j]);
              ModuleEmission& e = emissions[i];
              const double share = double(batch.views[j].inst_count) / double(std::max<uint64_t>(1, batch.instructions));
              e.device = gpu.device_name();
              e.object_from_device = true;
              e.batch = static_cast<uint32_t>(b);
              e.batch_modules = static_cast<uint32_t>(batch.modules.size());
              e.first_in_batch = j == 0;
              e.kernel_launches = t.launches;
              e.worker = static_cast<unsigned>(k);
              e.stages = share * (t.prepare + t.device_seconds() + t.cut);
              e.gpu_upload = share * t.upload;
              e.gpu_kernels = share * kernels;
              e.gpu_download = share * t.download;
            }
          } catch (const std::exception& err) {
            for (size_t i : batch.modules) emissions[i].error = err.what();
          }
        }
      });
    for (auto& t : threads) t.join();
    const double first = *std::min_element(begin.begin(), begin.end()), last = *std::max_element(end.begin(), end.end());
    *span = last > first ? last - first : 0;
    return wall.seconds();
  }

  // The object: stamp's part from the GPU's code (ELF writing on the CPU) and LLVM's
  // part for what stamp left, hashed together as the CPU stamp service does.
  void finish(size_t i, const StampOutput& code, ModuleEmission& e) {
    const PreparedModule& p = prepared_[i];
    if (!p.error.empty()) {
      e.error = p.error;
      return;
    }
    if (!e.error.empty()) return;  // its batch failed
    try {
      count_stamp_functions(p.sm.plan, e);
      Stopwatch clock;
      std::string stamp_object;
      if (p.sm.plan.flat.stamp_function_count) stamp_object = write_stamp_part(p.sm.plan, *p.sm.module, code);
      e.elf = clock.lap();
      e.codegen = e.stages + e.elf;
      finish_stamp_emission(*llvm_, p.sm, modules_[i].id, stamp_object, e);
    } catch (const std::exception& err) {
      e.error = err.what();
    }
  }

  const std::vector<ReplayModule>& modules_;
  std::unique_ptr<LlvmBackend> llvm_;
  std::vector<std::unique_ptr<StampGpuExecutor>> executors_;
  uint64_t batch_instructions_;
  std::vector<PreparedModule> prepared_;
};

}  // namespace

std::unique_ptr<EmissionService> make_gpu_service(Profile profile, const std::vector<ReplayModule>& modules,
                                                  unsigned streams, uint64_t batch_instructions) {
  if (streams < 1) throw KilnError(kExitUsage, "", "--gpu-streams must be at least 1");
  if (batch_instructions < 1) throw KilnError(kExitUsage, "", "--gpu-batch must be at least 1");
  std::vector<std::unique_ptr<StampGpuExecutor>> executors;
  for (unsigned k = 0; k < streams; ++k) {
    std::string why;
    executors.push_back(open_stamp_gpu_for_tools(0, &why));
    if (!executors.back()) throw KilnError(kExitNoDevice, "", "--device cuda: " + why);
  }
  return std::make_unique<GpuStampService>(profile, modules, std::move(executors), batch_instructions);
}

}  // namespace kiln
