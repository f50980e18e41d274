// kiln-replay's GPU service: stamp with its stages on a GPU. Each module is parsed,
// verified and exported once; every round its flat form goes to the GPU in batches,
// and several executors (a CUDA stream, buffers and a host thread each) take batches
// from one queue, so that one batch's upload, another's kernels and a third's download
// overlap (lib/stamp/stamp_gpu_pool.h, shared with kiln-replay-flat). LLVM emits its
// part for the functions stamp leaves on a thread of its own while the GPU runs; stamp's
// objects are written from the GPU's code afterwards, on all the host's threads.
#include <llvm/IR/Module.h>

#include <algorithm>
#include <thread>

#include "backend_llvm.h"
#include "backend_stamp.h"
#include "error.h"
#include "parallel.h"
#include "progress.h"
#include "replay.h"
#include "replay_internal.h"
#include "stamp_gpu_pool.h"
#include "timeutil.h"

namespace kiln {

namespace {

struct PreparedModule {
  StampModule sm;
  std::string error;  // why it could not be prepared (then it fails every round)
  bool tried = false;
};

class GpuStampService : public EmissionService {
 public:
  GpuStampService(Profile profile, const std::vector<ReplayModule>& modules, unsigned streams,
                  uint64_t batch_instructions)
      : modules_(modules),
        llvm_(std::make_unique<LlvmBackend>(profile)),
        pool_(streams),
        batch_instructions_(batch_instructions),
        prepared_(modules.size()) {}

  std::string name() const override { return "cuda:stamp (" + pool_[0].device_name() + ")"; }
  std::string backend() const override { return "stamp"; }
  unsigned workers() const override { return static_cast<unsigned>(pool_.size()); }

  RoundResult run_round(int round) override {
    RoundResult result;
    result.service = name();
    result.round = round;
    result.emissions.assign(modules_.size(), {});
    Progress progress("round " + std::to_string(round) + " (gpu)", modules_.size());
    Stopwatch clock;
    for (size_t i = 0; i < modules_.size(); ++i) prepare(i, result.emissions[i]);
    std::vector<StampGpuBatch> batches = make_batches();
    std::vector<StampOutput> code(modules_.size());
    std::vector<std::string> rest(modules_.size()), rest_error(modules_.size());
    std::thread fallback([&] {
      for (size_t i = 0; i < modules_.size(); ++i) emit_rest(i, rest[i], rest_error[i], result.emissions[i]);
    });
    try {
      result.device_phase_seconds = run_batches(batches, code, result.emissions, &result.device_span_seconds);
    } catch (...) {
      fallback.join();
      throw;
    }
    fallback.join();
    parallel_for(modules_.size(), hardware_threads(), [&](size_t i) {
      finish(i, code[i], rest[i], rest_error[i], result.emissions[i]);
      progress.advance();
    });
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

  // Consecutive modules with stamp functions, at least batch_instructions_ in all.
  std::vector<StampGpuBatch> make_batches() const {
    std::vector<StampGpuBatch> batches;
    for (size_t i = 0; i < modules_.size(); ++i) {
      const PreparedModule& p = prepared_[i];
      if (!p.sm.prepared || !p.sm.plan.flat.stamp_function_count) continue;
      add_to_stamp_batches(batches, i, p.sm.plan.flat.flat.view(), batch_instructions_);
    }
    return batches;
  }

  // Every stream's thread takes the next batch; a batch that fails fails its modules.
  // Returns the wall time of it all, and in *span the device's time from the first
  // upload to the last download.
  double run_batches(const std::vector<StampGpuBatch>& batches, std::vector<StampOutput>& code,
                     std::vector<ModuleEmission>& emissions, double* span) {
    const StampGpuRun run = pool_.run(
        batches,
        [&](size_t b, unsigned k, std::vector<StampOutput>& cut) {
          const StampGpuBatch& batch = batches[b];
          const StampGpuTimes& t = pool_[k].last_times();
          const double kernels = t.order + t.frame + t.measure + t.offsets + t.encode + t.lsda;
          for (size_t j = 0; j < batch.modules.size(); ++j) {
            const size_t i = batch.modules[j];
            code[i] = std::move(cut[j]);
            ModuleEmission& e = emissions[i];
            const double share = double(batch.views[j].inst_count) / double(std::max<uint64_t>(1, batch.instructions));
            e.device = pool_[k].device_name();
            e.object_from_device = true;
            e.batch = static_cast<uint32_t>(b);
            e.batch_modules = static_cast<uint32_t>(batch.modules.size());
            e.first_in_batch = j == 0;
            e.kernel_launches = t.launches;
            e.worker = k;
            e.stages = share * (t.prepare + t.device_seconds() + t.cut);
            e.gpu_upload = share * t.upload;
            e.gpu_kernels = share * kernels;
            e.gpu_download = share * t.download;
          }
        },
        [&](size_t b, const std::exception& err) {
          for (size_t i : batches[b].modules) emissions[i].error = err.what();
        });
    *span = run.span();
    return run.wall;
  }

  // LLVM's part for what stamp left (on the fallback thread, while the GPU runs). Only
  // e.fallback is written here: the batches' callbacks write e's other fields meanwhile.
  void emit_rest(size_t i, std::string& rest, std::string& error, ModuleEmission& e) {
    const PreparedModule& p = prepared_[i];
    if (!p.error.empty()) return;
    try {
      rest = emit_stamp_rest(*llvm_, p.sm, modules_[i].id, e);
    } catch (const std::exception& err) {
      error = err.what();
    }
  }

  // The object: stamp's part from the GPU's code (ELF writing on the CPU) and LLVM's
  // part, hashed together as the CPU stamp service does.
  void finish(size_t i, const StampOutput& code, const std::string& rest, const std::string& rest_error,
              ModuleEmission& e) {
    const PreparedModule& p = prepared_[i];
    if (!p.error.empty()) {
      e.error = p.error;
      return;
    }
    if (!e.error.empty()) return;  // its batch failed
    if (!rest_error.empty()) {
      e.error = rest_error;
      return;
    }
    try {
      count_stamp_functions(p.sm.plan, e);
      Stopwatch clock;
      std::string stamp_object;
      if (p.sm.plan.flat.stamp_function_count)
        stamp_object = write_stamp_object_for(p.sm.plan.flat.flat, p.sm.plan.data, p.sm.source_name, code);
      e.elf = clock.lap();
      e.codegen = e.stages + e.elf;
      record_stamp_object(stamp_object, rest, e);
    } catch (const std::exception& err) {
      e.error = err.what();
    }
  }

  const std::vector<ReplayModule>& modules_;
  std::unique_ptr<LlvmBackend> llvm_;
  StampGpuPool pool_;
  uint64_t batch_instructions_;
  std::vector<PreparedModule> prepared_;
};

}  // namespace

std::unique_ptr<EmissionService> make_gpu_service(Profile profile, const std::vector<ReplayModule>& modules,
                                                  unsigned streams, uint64_t batch_instructions) {
  if (streams < 1) throw KilnError(kExitUsage, "", "--gpu-streams must be at least 1");
  if (batch_instructions < 1) throw KilnError(kExitUsage, "", "--gpu-batch must be at least 1");
  return std::make_unique<GpuStampService>(profile, modules, streams, batch_instructions);
}

}  // namespace kiln
