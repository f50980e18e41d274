// The CUDA executor of stamp's stages: the same stage functions as the CPU executor
// (kernels/stamp_stages.h), launched as kernels on one device, with results equal to
// run_stamp_cpu's byte for byte (the CPU executor is the oracle). It takes a batch of
// modules at a time (lib/stamp/stamp_batch.h): one upload, one launch per stage and one
// download for all of them. It keeps one CUDA stream, device buffers that grow on
// demand and are reused, and pinned (page-locked) host staging for every upload and
// download. Several executors on their own host threads form a pipeline: while one
// uploads batch i+1, another runs batch i's kernels and a third downloads batch i-1.
// Built where nvcc is found; elsewhere open_stamp_gpu says why there is no GPU.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "stamp_cpu.h"

namespace kiln {

// Seconds per step of the last batch, from CUDA events on the executor's stream
// (prepare and cut: host clocks).
struct StampGpuTimes {
  double prepare = 0;  // host: the batch written (rebased) into pinned staging
  double upload = 0;   // pinned staging -> device, one copy
  double order = 0;    // instructions sorted by opcode, functions with exception tables selected
  double frame = 0;    // uses + frame kernels
  double measure = 0;  // measure kernels
  double offsets =
      0;  // offsets, scans, exception tables sized, the totals back to the host (the one wait before the download)
  double encode = 0;      // encode kernels
  double lsda = 0;        // the LSDAs (exception tables) written
  double download = 0;    // code, relocations, exception tables: device -> pinned -> host
  double cut = 0;         // host: each module's output cut out of pinned staging
  uint64_t launches = 0;  // kernels, scans, sorts and selections, for the whole batch
  uint32_t modules = 0;   // in the batch
  // When this batch's upload began and its download ended, in seconds on one clock
  // shared by every executor of the process (the device's, from CUDA events), so that
  // batches on several streams give the span of a round: the first upload to the
  // last download, overlaps counted once.
  double span_begin = 0, span_end = 0;
  double device_seconds() const { return upload + order + frame + measure + offsets + encode + lsda + download; }
};

class StampGpuExecutor {
 public:
  virtual ~StampGpuExecutor() = default;
  // Runs every stage on the device over the modules as one batch; output k equals
  // run_stamp_cpu(modules[k])'s. Throws std::runtime_error naming the CUDA call that
  // failed, or KilnError for a batch too large for 32-bit indices.
  virtual std::vector<StampOutput> run_batch(const FlatModuleView* modules, size_t count) = 0;
  StampOutput run(const FlatModuleView& m) { return std::move(run_batch(&m, 1).front()); }
  // The measure and encode kernels take instructions grouped by opcode (a CUB radix
  // sort), so that the threads of a warp follow the same template; on by default.
  // (The stages that walk functions on the CPU run per instruction on the GPU:
  // kernels/stamp_wide.h.)
  virtual void set_order_by_opcode(bool on) = 0;
  virtual const StampGpuTimes& last_times() const = 0;
  virtual std::string device_name() const = 0;
  // The GPU's NUMA node (-1: unknown), and whether the thread that runs the executor
  // was moved onto that node's CPUs (only where the host has more than one node;
  // the pinned buffers are then allocated there).
  virtual int numa_node() const = 0;
  virtual bool on_gpu_node() const = 0;
};

// The executor on CUDA device `device`, or nullptr with *why set (no device, no
// driver, or a kiln built without CUDA).
std::unique_ptr<StampGpuExecutor> open_stamp_gpu(int device, std::string* why);

// A stand-in for the GPU, for tests on machines without one: the same interface, with
// the batch run by the CPU executor in the CUDA executor's form of the stages
// (StampForm::wide), on one thread (no upload or download; its times are the CPU's). It lets the GPU service's
// batching, pipelining, byte checks and reports be tested in CI. Its device name says what it is, and so does every
// report.
std::unique_ptr<StampGpuExecutor> open_stamp_gpu_standin();

// What --device cuda opens: the CPU stand-in when the environment sets
// KILN_GPU_STANDIN=cpu, else the CUDA executor, open_stamp_gpu(device, why).
std::unique_ptr<StampGpuExecutor> open_stamp_gpu_or_standin(int device, std::string* why);

}  // namespace kiln
