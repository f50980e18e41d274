#include "stamp_gpu_pool.h"

#include <algorithm>

#if defined(__linux__)
#include <sched.h>
#endif

#include "error.h"
#include "parallel.h"
#include "timeutil.h"

namespace kiln {

namespace {

// Puts the calling thread's CPU affinity back when it goes out of scope: the CUDA
// executor moves each thread that runs it onto the GPU's NUMA node, and the thread
// that called StampGpuPool::run (stream 0's) must not stay there, since the threads
// it starts later (the CPU executor's, LLVM's) would inherit that node alone.
class KeepAffinity {
 public:
#if defined(__linux__)
  KeepAffinity() {
    CPU_ZERO(&mask_);
    saved_ = sched_getaffinity(0, sizeof mask_, &mask_) == 0;
  }
  ~KeepAffinity() {
    if (saved_) sched_setaffinity(0, sizeof mask_, &mask_);
  }

 private:
  cpu_set_t mask_;
  bool saved_ = false;
#endif
};

}  // namespace

void add_to_stamp_batches(std::vector<StampGpuBatch>& batches, size_t index, const FlatModuleView& view,
                          uint64_t batch_instructions) {
  if (batches.empty() || batches.back().instructions >= batch_instructions) batches.emplace_back();
  batches.back().modules.push_back(index);
  batches.back().views.push_back(view);
  batches.back().instructions += view.inst_count;
}

StampGpuPool::StampGpuPool(unsigned streams) {
  for (unsigned k = 0; k < streams; ++k) {
    std::string why;
    executors_.push_back(open_stamp_gpu_or_standin(0, &why));
    if (!executors_.back()) throw KilnError(kExitNoDevice, "", "--device cuda: " + why);
  }
}

void StampGpuPool::set_order_by_opcode(bool on) {
  for (auto& e : executors_) e->set_order_by_opcode(on);
}

StampGpuRun StampGpuPool::run(const std::vector<StampGpuBatch>& batches, const Done& done, const Failed& failed) {
  std::vector<double> begin(executors_.size(), 1e300), end(executors_.size(), 0);
  StampGpuRun run;
  Stopwatch wall;
  {
    KeepAffinity keep;
    parallel_for_workers(batches.size(), static_cast<unsigned>(executors_.size()), 1, [&](size_t b, unsigned k) {
      StampGpuExecutor& gpu = *executors_[k];
      const StampGpuBatch& batch = batches[b];
      try {
        std::vector<StampOutput> outputs = gpu.run_batch(batch.views.data(), batch.views.size());
        const StampGpuTimes& t = gpu.last_times();
        begin[k] = std::min(begin[k], t.span_begin), end[k] = std::max(end[k], t.span_end);
        done(b, k, outputs);
      } catch (const std::exception& error) {
        if (!failed) throw;
        failed(b, error);
      }
    });
  }
  run.wall = wall.seconds();
  for (size_t k = 0; k < executors_.size(); ++k)
    run.span_begin = std::min(run.span_begin, begin[k]), run.span_end = std::max(run.span_end, end[k]);
  return run;
}

}  // namespace kiln
