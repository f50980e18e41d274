// Batches for the GPU and the pool of executors that runs them, shared by
// kiln-replay-flat (lib/stamp/replay_flat.cpp) and kiln-replay's GPU service
// (lib/replay_gpu.cpp). Modules go to the GPU in batches of consecutive modules; the
// pool holds one executor per stream (a CUDA stream, buffers and, while it runs, a
// host thread each), and every executor's thread takes the next batch from one queue,
// so that one batch's upload, another's kernels and a third's download overlap.
#pragma once
#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include "stamp_gpu.h"

namespace kiln {

// Consecutive modules, at least a set number of IR instructions in all (the last
// batch takes what is left).
struct StampGpuBatch {
  std::vector<size_t> modules;        // the caller's indices of its modules
  std::vector<FlatModuleView> views;  // one per module, in that order
  uint64_t instructions = 0;
};

// Appends module `index` to the last batch, or to a new one when there is none yet or
// the last already holds at least `batch_instructions` IR instructions.
void add_to_stamp_batches(std::vector<StampGpuBatch>& batches, size_t index, const FlatModuleView& view,
                          uint64_t batch_instructions);

// What a run of batches took.
struct StampGpuRun {
  double wall = 0;  // host seconds, from the first batch handed out to the last one done
  // The device's clock (StampGpuTimes): the first upload to the last download, over
  // the batches that ran.
  double span_begin = 1e300, span_end = 0;
  double span() const { return span_end > span_begin ? span_end - span_begin : 0; }
};

class StampGpuPool {
 public:
  // `streams` executors from open_stamp_gpu_or_standin(0); throws
  // KilnError(kExitNoDevice, "--device cuda: why") when one cannot be opened.
  explicit StampGpuPool(unsigned streams);
  size_t size() const { return executors_.size(); }
  StampGpuExecutor& operator[](size_t stream) const { return *executors_[stream]; }
  void set_order_by_opcode(bool on);

  // Called on stream's thread once a batch has run; outputs[j] is batch.modules[j]'s
  // (pool[stream].last_times() holds the batch's times).
  using Done = std::function<void(size_t batch, unsigned stream, std::vector<StampOutput>& outputs)>;
  // Called for a batch that failed (its run or its `done`).
  using Failed = std::function<void(size_t batch, const std::exception& error)>;
  // Runs every batch, each stream's executor on its own thread (parallel_for_workers;
  // the calling thread is stream 0's). Without `failed`, the first error stops the
  // handing out of batches and is rethrown once every thread has stopped; with it,
  // every batch is tried. The calling thread's CPU affinity is as before afterwards
  // (an executor may move the thread that runs it onto the GPU's NUMA node).
  StampGpuRun run(const std::vector<StampGpuBatch>& batches, const Done& done, const Failed& failed = nullptr);

 private:
  std::vector<std::unique_ptr<StampGpuExecutor>> executors_;
};

}  // namespace kiln
