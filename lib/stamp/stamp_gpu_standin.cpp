// The GPU stand-in: StampGpuExecutor over the CPU executor, for tests without a GPU.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "stamp_batch.h"
#include "stamp_gpu.h"
#include "timeutil.h"

namespace kiln {

namespace {

// The stand-in's clock for span times: seconds since the first stand-in was made.
double since_standin_epoch() {
  static const Stopwatch epoch;
  return epoch.seconds();
}

class CpuStandinExecutor final : public StampGpuExecutor {
 public:
  CpuStandinExecutor() { since_standin_epoch(); }
  std::vector<StampOutput> run_batch(const FlatModuleView* modules, size_t count) override {
    times_ = StampGpuTimes{};
    times_.modules = static_cast<uint32_t>(count);
    Stopwatch clock;
    const StampBatchLayout batch = plan_stamp_batch(modules, count);
    if (batch.function_count() == 0) return std::vector<StampOutput>(count);
    if (batch.bytes > capacity_) {  // grows like the CUDA executor's staging
      block_.reset(static_cast<uint8_t*>(::operator new[](batch.bytes, std::align_val_t(16))));
      capacity_ = batch.bytes;
    }
    const FlatModuleView view = write_stamp_batch(modules, batch, block_.get());
    times_.prepare = clock.lap();
    times_.span_begin = since_standin_epoch();
    StampOutput whole = run_stamp_cpu(view, 1, StampForm::wide);  // the CUDA executor's form of the stages
    times_.span_end = since_standin_epoch();
    clock.lap();
    std::vector<StampOutput> outputs;
    outputs.reserve(count);
    const StampOutputView out = view_of(whole);
    for (size_t k = 0; k < count; ++k) outputs.push_back(cut_stamp_output(out, batch, k));
    times_.cut = clock.lap();
    times_.frame = whole.frame, times_.measure = whole.measure, times_.offsets = whole.offsets;
    times_.encode = whole.encode, times_.lsda = whole.lsda_seconds;
    times_.launches = whole.launches;
    return outputs;
  }
  void set_order_by_opcode(bool) override {}  // one thread: the order changes nothing
  const StampGpuTimes& last_times() const override { return times_; }
  std::string device_name() const override { return "CPU stand-in for a GPU (KILN_GPU_STANDIN=cpu, for tests)"; }
  int numa_node() const override { return -1; }
  bool on_gpu_node() const override { return false; }

 private:
  struct AlignedDelete {
    void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t(16)); }
  };
  std::unique_ptr<uint8_t[], AlignedDelete> block_;
  size_t capacity_ = 0;
  StampGpuTimes times_;
};

}  // namespace

std::unique_ptr<StampGpuExecutor> open_stamp_gpu_standin() { return std::make_unique<CpuStandinExecutor>(); }

std::unique_ptr<StampGpuExecutor> open_stamp_gpu_or_standin(int device, std::string* why) {
  const char* standin = std::getenv("KILN_GPU_STANDIN");
  if (standin && std::strcmp(standin, "cpu") == 0) return open_stamp_gpu_standin();
  return open_stamp_gpu(device, why);
}

}  // namespace kiln
