// The CUDA executor of stamp's stages: the same stage functions as the CPU executor
// (kernels/stamp_stages.h), launched as kernels on one device, with results equal to
// run_stamp_cpu's byte for byte (the CPU executor is the oracle). It keeps one CUDA
// stream, device buffers that grow on demand and are reused, and pinned (page-locked)
// host staging for every upload and download. Built where nvcc is found; elsewhere
// open_stamp_gpu says why there is no GPU.
#pragma once
#include <memory>
#include <string>

#include "stamp_cpu.h"

namespace kiln {

// Seconds per step of the last run, from CUDA events on the executor's stream.
struct StampGpuTimes {
  double upload = 0;       // flat arrays: host -> pinned staging -> device
  double frame = 0;        // uses + frame kernels
  double measure = 0;      // measure kernels
  double offsets = 0;      // offsets kernel, scans over functions, totals back to the host
  double encode = 0;       // encode kernels
  double exception_tables = 0;
  double download = 0;     // code, relocations, exception tables: device -> pinned -> host
  uint64_t launches = 0;   // kernels and scans
};

class StampGpuExecutor {
 public:
  virtual ~StampGpuExecutor() = default;
  // Runs every stage on the device; the result equals run_stamp_cpu(m)'s. Throws
  // std::runtime_error naming the CUDA call that failed.
  virtual StampOutput run(const FlatModuleView& m) = 0;
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

}  // namespace kiln
