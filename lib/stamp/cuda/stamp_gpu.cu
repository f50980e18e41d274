// The CUDA executor: writes a batch of flat modules into pinned staging and uploads
// it, groups the instructions by opcode (CUB radix sort) and selects the functions
// with exception tables (CUB select), runs stamp's stages as kernels
// (stamp_kernels.cuh) in the order of the CPU executor (uses, frame, offsets and
// exception tables in their wide form, with CUB scans by function and sums over
// instructions, so no thread walks a function), places the functions with CUB scans, downloads code,
// relocations and exception tables through pinned staging, and cuts each module's
// part out. One stream; buffers grow on demand and are reused.
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <cuda/std/functional>

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <string>

#include "gpu_probe.h"
#include "stamp_batch.h"
#include "stamp_gpu.h"
#include "stamp_kernels.cuh"

namespace kiln {

namespace {

void cuda_check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(err));
}
#define CUDA_CHECK(call) cuda_check((call), #call)

constexpr unsigned kThreads = 256;
// At least one block: a launch of zero blocks is an error, and every kernel checks its range.
unsigned blocks_for(uint64_t n) { return static_cast<unsigned>(std::max<uint64_t>(1, (n + kThreads - 1) / kThreads)); }

// Memory that only grows: device memory (cudaMalloc) or page-locked host memory
// (cudaHostAlloc, what the copy engines transfer from without staging of their own).
cudaError_t alloc_device(void** p, size_t bytes) { return cudaMalloc(p, bytes); }
cudaError_t alloc_pinned(void** p, size_t bytes) { return cudaHostAlloc(p, bytes, cudaHostAllocDefault); }

template <cudaError_t (*Alloc)(void**, size_t), cudaError_t (*Free)(void*), size_t kMinimum>
class GrowingBuffer {
 public:
  ~GrowingBuffer() {
    if (ptr_) Free(ptr_);
  }
  uint8_t* reserve(size_t bytes) {
    if (bytes > capacity_) {
      if (ptr_) CUDA_CHECK(Free(ptr_));
      ptr_ = nullptr;
      size_t want = std::max<size_t>({bytes, capacity_ * 2, kMinimum});
      CUDA_CHECK(Alloc(&ptr_, want));
      capacity_ = want;
    }
    return static_cast<uint8_t*>(ptr_);
  }
  template <class T>
  T* as(size_t count) {
    return reinterpret_cast<T*>(reserve(count * sizeof(T)));
  }

 private:
  void* ptr_ = nullptr;
  size_t capacity_ = 0;
};
using DeviceBuffer = GrowingBuffer<alloc_device, cudaFree, 4096>;
using PinnedBuffer = GrowingBuffer<alloc_pinned, cudaFreeHost, 1 << 16>;

size_t align16(size_t n) { return (n + 15) / 16 * 16; }

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// With more than one NUMA node, the CPUs of `node` in *set (a thread on them allocates
// and touches pinned buffers local to the GPU). False with one node, or none known.
bool node_cpus(int node, cpu_set_t* set) {
  if (node < 0 || !std::ifstream("/sys/devices/system/node/node1/cpulist")) return false;  // one node
  std::ifstream list("/sys/devices/system/node/node" + std::to_string(node) + "/cpulist");
  std::string text;
  if (!(list >> text)) return false;
  CPU_ZERO(set);
  size_t at = 0;
  while (at < text.size()) {  // "0-15,32-47"
    size_t end = text.find(',', at);
    std::string range = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    size_t dash = range.find('-');
    int lo = std::atoi(range.c_str()), hi = dash == std::string::npos ? lo : std::atoi(range.c_str() + dash + 1);
    for (int c = lo; c <= hi && c < CPU_SETSIZE; ++c) CPU_SET(c, set);
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return CPU_COUNT(set) > 0;
}

// One event recorded once per process, the zero of every executor's span times.
cudaEvent_t process_epoch(cudaStream_t stream) {
  static std::once_flag once;
  static cudaEvent_t epoch{};
  std::call_once(once, [stream] {
    CUDA_CHECK(cudaEventCreate(&epoch));
    CUDA_CHECK(cudaEventRecord(epoch, stream));
    CUDA_CHECK(cudaEventSynchronize(epoch));
  });
  return epoch;
}

class CudaStampExecutor final : public StampGpuExecutor {
 public:
  explicit CudaStampExecutor(int device) : device_(device) {
    CUDA_CHECK(cudaSetDevice(device));
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    name_ = prop.name;
    numa_node_ = gpu_numa_node(device);
    has_node_cpus_ = node_cpus(numa_node_, &node_cpus_);
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    for (cudaEvent_t& e : events_) CUDA_CHECK(cudaEventCreate(&e));
    epoch_ = process_epoch(stream_);
  }
  ~CudaStampExecutor() override {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    cudaStreamDestroy(stream_);
  }

  const StampGpuTimes& last_times() const override { return times_; }
  std::string device_name() const override { return name_; }
  int numa_node() const override { return numa_node_; }
  bool on_gpu_node() const override { return on_gpu_node_; }

  void set_order_by_opcode(bool on) override { order_by_opcode_ = on; }

  std::vector<StampOutput> run_batch(const FlatModuleView* modules, size_t count) override {
    CUDA_CHECK(cudaSetDevice(device_));
    bind_host_thread();
    times_ = StampGpuTimes{};
    times_.modules = static_cast<uint32_t>(count);
    const auto host_clock = std::chrono::steady_clock::now();
    b_.batch = plan_stamp_batch(modules, count);
    b_.F = b_.batch.function_count(), b_.B = b_.batch.first_block.back(), b_.N = b_.batch.inst_count();
    if (b_.F == 0) return std::vector<StampOutput>(count);
    upload(modules, host_clock);  // 1
    order_and_select();           // 2
    working_arrays();
    frame();                                        // 3
    measure();                                      // 4
    offsets_and_table_sizes();                      // 5
    encode();                                       // 6
    write_lsda();                                   // 7
    download();                                     // 8
    std::vector<StampOutput> outputs = cut(count);  // 9
    record_times();
    return outputs;
  }

 private:
  // What one batch's steps hand on to the next: the batch's layout, its view on the
  // device, and the device arrays of this run (sized for it).
  struct BatchState {
    StampBatchLayout batch;
    uint32_t F = 0, B = 0, N = 0;
    FlatModuleView m{};         // the batch on the device
    uint32_t* order = nullptr;  // instructions by opcode; nullptr: in file order
    uint32_t *selected = nullptr, *selected_count = nullptr;
    uint32_t *use_count = nullptr, *frame_size = nullptr, *prologue_size = nullptr, *size = nullptr, *relocs = nullptr,
             *call_begin = nullptr, *call_end = nullptr, *inst_offset = nullptr, *reloc_start = nullptr,
             *block_offset = nullptr;
    uint8_t* home = nullptr;
    int32_t *inst_slot = nullptr, *alloca_mem = nullptr, *arg_slot = nullptr;
    uint32_t *per_fn = nullptr, *code_size = nullptr, *code_start = nullptr, *reloc_count = nullptr,
             *fn_reloc_start = nullptr, *lsda_size = nullptr, *lsda_start = nullptr;
    uint32_t* fn_of = nullptr;
    StampLayout layout{};
    WideLsdaScans lsda_scans{};
    uint32_t code_total = 0, reloc_total = 0, lsda_total = 0;
    uint8_t *code = nullptr, *lsda = nullptr;
    StampReloc* reloc_out = nullptr;
    uint8_t* down = nullptr;  // pinned download staging: per-function tables, code, relocations, LSDAs,
                              // instruction offsets
    size_t at_code = 0, at_relocs = 0, at_lsda = 0, at_inst = 0;
  };

  // The host thread that runs a batch works on the CPUs of the GPU's NUMA node (where
  // the host has more than one node), so that the pinned buffers it allocates and
  // touches are local to the GPU. Checked on every batch, not once per thread: a
  // thread may have been put back since (stamp_gpu_pool.h does so for its caller).
  void bind_host_thread() {
    if (!has_node_cpus_) return;
    cpu_set_t now;
    CPU_ZERO(&now);
    if (sched_getaffinity(0, sizeof now, &now) == 0 && CPU_EQUAL(&now, &node_cpus_)) {
      on_gpu_node_ = true;
      return;
    }
    on_gpu_node_ = sched_setaffinity(0, sizeof node_cpus_, &node_cpus_) == 0;
  }

  // 1. The batch is written (rebased) straight into pinned staging, then uploaded in
  //    one copy.
  void upload(const FlatModuleView* modules, std::chrono::steady_clock::time_point host_clock) {
    const StampBatchLayout& batch = b_.batch;
    uint8_t* staging = upload_staging_.reserve(batch.bytes);
    const FlatModuleView on_host = write_stamp_batch(modules, batch, staging);
    times_.prepare = seconds_since(host_clock);
    CUDA_CHECK(cudaEventRecord(events_[0], stream_));
    uint8_t* flat = flat_.reserve(batch.bytes);
    CUDA_CHECK(cudaMemcpyAsync(flat, staging, batch.bytes, cudaMemcpyHostToDevice, stream_));
    FlatModuleView& m = b_.m;
    m = on_host;
    m.functions = reinterpret_cast<const FlatFunction*>(flat + batch.array_offset[0]);
    m.blocks = reinterpret_cast<const FlatBlock*>(flat + batch.array_offset[1]);
    m.insts = reinterpret_cast<const FlatInst*>(flat + batch.array_offset[2]);
    m.operands = reinterpret_cast<const FlatOperand*>(flat + batch.array_offset[3]);
    m.arg_widths = flat + batch.array_offset[4];
    CUDA_CHECK(cudaEventRecord(events_[1], stream_));
  }

  // 2. Instructions grouped by opcode (a CUB radix sort, stable), for the measure and
  //    encode kernels; and the functions that need an exception table (a CUB
  //    selection), for the per-function table kernels.
  void order_and_select() {
    const uint32_t N = b_.N, F = b_.F;
    const FlatModuleView& m = b_.m;
    b_.order = nullptr;
    uint16_t* opcode_keys = opcode_keys_.as<uint16_t>(2 * size_t(N));
    uint32_t* identity = identity_.as<uint32_t>(2 * size_t(std::max(N, F)));
    stamp_opcode_keys_kernel<<<blocks_for(N), kThreads, 0, stream_>>>(m, opcode_keys, identity);
    ++launches_;
    CUDA_CHECK(cudaGetLastError());
    if (order_by_opcode_) {
      uint32_t* order = b_.order = identity + std::max(N, F);
      size_t temp_bytes = 0;
      const int key_bits = 8;  // kOpCount < 256
      CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, opcode_keys, opcode_keys + N, identity, order, N,
                                                 0, key_bits, stream_));
      void* temp = cub_temp_.reserve(std::max<size_t>(temp_bytes, 1));
      CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, opcode_keys, opcode_keys + N, identity, order, N, 0,
                                                 key_bits, stream_));
      ++launches_;
    }
    uint32_t* selected = b_.selected = selected_.as<uint32_t>(size_t(F) + 1);
    uint32_t* selected_count = b_.selected_count = selected + F;
    {
      size_t temp_bytes = 0;
      thrust::counting_iterator<uint32_t> functions(0);
      HasExceptionTable has_table{m.functions};
      CUDA_CHECK(
          cub::DeviceSelect::If(nullptr, temp_bytes, functions, selected, selected_count, F, has_table, stream_));
      void* temp = cub_temp_.reserve(std::max<size_t>(temp_bytes, 1));
      CUDA_CHECK(cub::DeviceSelect::If(temp, temp_bytes, functions, selected, selected_count, F, has_table, stream_));
      ++launches_;
    }
    CUDA_CHECK(cudaEventRecord(events_[2], stream_));
  }

  // Per-instruction and per-function working arrays.
  void working_arrays() {
    const uint32_t N = b_.N, F = b_.F, B = b_.B;
    b_.use_count = use_count_.as<uint32_t>(N);
    b_.home = home_.as<uint8_t>(N);
    b_.inst_slot = inst_slot_.as<int32_t>(N);
    b_.alloca_mem = alloca_mem_.as<int32_t>(N);
    b_.arg_slot = arg_slot_.as<int32_t>(std::max<uint32_t>(b_.m.arg_count, 1));
    b_.frame_size = frame_size_.as<uint32_t>(F);
    b_.prologue_size = prologue_size_.as<uint32_t>(F);
    b_.size = size_.as<uint32_t>(size_t(N) + 1);
    b_.relocs = relocs_.as<uint32_t>(size_t(N) + 1);
    b_.call_begin = call_begin_.as<uint32_t>(N);
    b_.call_end = call_end_.as<uint32_t>(N);
    b_.inst_offset = inst_offset_.as<uint32_t>(N);
    b_.reloc_start = reloc_start_.as<uint32_t>(N);
    b_.block_offset = block_offset_.as<uint32_t>(std::max<uint32_t>(B, 1));
    // Per function, back to back: code_size, code_start, reloc_count, fn_reloc_start,
    // lsda_size, lsda_start (what comes back to the host, in one copy).
    uint32_t* per_fn = b_.per_fn = per_fn_.as<uint32_t>(6 * size_t(F));
    b_.code_size = per_fn, b_.code_start = per_fn + F, b_.reloc_count = per_fn + 2 * F,
    b_.fn_reloc_start = per_fn + 3 * F, b_.lsda_size = per_fn + 4 * F, b_.lsda_start = per_fn + 5 * F;
  }

  // 3. Where results live, and frames, in the wide form (stamp_wide.h): per
  //    instruction, with a CUB segmented sort of the frame's items by function and a
  //    CUB scan by function of their steps, so that no thread walks a whole function.
  void frame() {
    const uint32_t N = b_.N, F = b_.F;
    const FlatModuleView& m = b_.m;
    uint32_t* use_count = b_.use_count;
    uint8_t* home = b_.home;
    uint32_t* fn_of = b_.fn_of = fn_of_.as<uint32_t>(N);
    uint32_t* accesses = accesses_.as<uint32_t>(2 * size_t(N));
    uint32_t* position = accesses + N;
    uint64_t* keys = frame_keys_.as<uint64_t>(2 * size_t(N));
    uint64_t* sorted = keys + N;
    FrameStep* frame_step = frame_step_.as<FrameStep>(2 * size_t(N));
    FrameStep* frame_scan = frame_step + N;
    uint32_t* fn_begin = fn_range_.as<uint32_t>(2 * size_t(std::max<uint32_t>(F, 1)));
    uint32_t* fn_end = fn_begin + F;
    CUDA_CHECK(cudaMemsetAsync(use_count, 0, N * sizeof(uint32_t), stream_));
    CUDA_CHECK(cudaMemsetAsync(accesses, 0, N * sizeof(uint32_t), stream_));
    wide_function_of_kernel<<<blocks_for(N), kThreads, 0, stream_>>>(m, fn_of);
    wide_count_uses_kernel<<<blocks_for(N), kThreads, 0, stream_>>>(m, use_count);
    wide_home_kernel<<<blocks_for(N), kThreads, 0, stream_>>>(m, use_count, home);
    wide_count_accesses_kernel<<<blocks_for(N), kThreads, 0, stream_>>>(m, use_count, accesses);
    wide_frame_key_kernel<<<blocks_for(N), kThreads, 0, stream_>>>(m, use_count, home, accesses, keys);
    wide_function_range_kernel<<<blocks_for(F), kThreads, 0, stream_>>>(m, fn_begin, fn_end);
    launches_ += 6;
    CUDA_CHECK(cudaGetLastError());
    {
      size_t temp_bytes = 0;
      CUDA_CHECK(
          cub::DeviceSegmentedSort::SortKeys(nullptr, temp_bytes, keys, sorted, N, F, fn_begin, fn_end, stream_));
      void* temp = cub_temp_.reserve(std::max<size_t>(temp_bytes, 1));
      CUDA_CHECK(cub::DeviceSegmentedSort::SortKeys(temp, temp_bytes, keys, sorted, N, F, fn_begin, fn_end, stream_));
      ++launches_;
    }
    wide_sorted_step_kernel<<<blocks_for(N), kThreads, 0, stream_>>>(m, sorted, use_count, home, frame_step, position);
    ++launches_;
    CUDA_CHECK(cudaGetLastError());
    {
      size_t temp_bytes = 0;
      CUDA_CHECK(cub::DeviceScan::InclusiveScanByKey(nullptr, temp_bytes, fn_of, frame_step, frame_scan,
                                                     FrameStepThen{}, N, cuda::std::equal_to<uint32_t>{}, stream_));
      void* temp = cub_temp_.reserve(std::max<size_t>(temp_bytes, 1));
      CUDA_CHECK(cub::DeviceScan::InclusiveScanByKey(temp, temp_bytes, fn_of, frame_step, frame_scan, FrameStepThen{},
                                                     N, cuda::std::equal_to<uint32_t>{}, stream_));
      ++launches_;
    }
    const WideFrameScans scans{position, frame_scan};
    wide_frame_inst_kernel<<<blocks_for(N), kThreads, 0, stream_>>>(m, use_count, home, scans, b_.inst_slot,
                                                                    b_.alloca_mem);
    wide_frame_function_kernel<<<blocks_for(F), kThreads, 0, stream_>>>(m, scans, b_.arg_slot, b_.frame_size);
    launches_ += 2;
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventRecord(events_[3], stream_));
  }

  // 4. Sizes (one more entry each, 0, so that their exclusive sums end with totals).
  void measure() {
    const uint32_t N = b_.N, F = b_.F;
    b_.layout = StampLayout{b_.inst_slot, b_.alloca_mem, b_.arg_slot, b_.frame_size, nullptr, nullptr, b_.home};
    CUDA_CHECK(cudaMemsetAsync(b_.size + N, 0, sizeof(uint32_t), stream_));
    CUDA_CHECK(cudaMemsetAsync(b_.relocs + N, 0, sizeof(uint32_t), stream_));
    stamp_measure_kernel<<<blocks_for(N), kThreads, 0, stream_>>>(b_.m, b_.order, b_.layout, b_.size, b_.relocs,
                                                                  b_.call_begin, b_.call_end);
    stamp_measure_prologue_kernel<<<blocks_for(F), kThreads, 0, stream_>>>(b_.m, b_.layout, b_.prologue_size);
    launches_ += 2;
    CUDA_CHECK(cudaGetLastError());
    relax();
    CUDA_CHECK(cudaEventRecord(events_[4], stream_));
  }

  // 4b. The long layout's offsets (every jump rel32), then the jumps measured again
  //     against it (stamp_relax) for the final sizes. The relocation starts written
  //     here (from the size sums, as nothing needs them) are written again in step 5.
  void relax() {
    const uint32_t N = b_.N, B = b_.B;
    const FlatModuleView& m = b_.m;
    uint32_t* size_sum = size_sum_.as<uint32_t>(2 * (size_t(N) + 1));
    uint32_t* long_inst = long_offset_.as<uint32_t>(size_t(N) + std::max<uint32_t>(B, 1));
    uint32_t* long_block = long_inst + N;
    exclusive_scan(b_.size, size_sum, N + 1);
    wide_offsets_inst_kernel<<<blocks_for(N), kThreads, 0, stream_>>>(m, b_.prologue_size, size_sum, size_sum,
                                                                      long_inst, b_.reloc_start);
    wide_offsets_block_kernel<<<blocks_for(B), kThreads, 0, stream_>>>(m, b_.prologue_size, size_sum, long_block);
    b_.layout.long_inst_offset = long_inst;
    b_.layout.long_block_offset = long_block;
    stamp_relax_kernel<<<blocks_for(N), kThreads, 0, stream_>>>(m, b_.layout, b_.size, b_.relocs, b_.call_begin,
                                                                b_.call_end);
    launches_ += 3;
    CUDA_CHECK(cudaGetLastError());
  }

  // 5. Offsets inside functions from sums over all instructions, then functions
  //    placed by exclusive scans; the exception tables sized in the wide form (a
  //    max-scan by function of invokes' ends, sums of entries and typed landing
  //    pads, sizes over the selected functions, a scan over functions). All totals
  //    come back to the host in one wait, to size the output.
  void offsets_and_table_sizes() {
    const uint32_t N = b_.N, F = b_.F, B = b_.B;
    const FlatModuleView& m = b_.m;
    uint32_t* size_sum = size_sum_.as<uint32_t>(2 * (size_t(N) + 1));
    uint32_t* reloc_sum = size_sum + N + 1;
    exclusive_scan(b_.size, size_sum, N + 1);
    exclusive_scan(b_.relocs, reloc_sum, N + 1);
    wide_offsets_inst_kernel<<<blocks_for(N), kThreads, 0, stream_>>>(m, b_.prologue_size, size_sum, reloc_sum,
                                                                      b_.inst_offset, b_.reloc_start);
    wide_offsets_block_kernel<<<blocks_for(B), kThreads, 0, stream_>>>(m, b_.prologue_size, size_sum, b_.block_offset);
    wide_offsets_function_kernel<<<blocks_for(F), kThreads, 0, stream_>>>(m, b_.prologue_size, size_sum, reloc_sum,
                                                                          b_.code_size, b_.reloc_count);
    launches_ += 3;
    CUDA_CHECK(cudaGetLastError());
    exclusive_scan(b_.code_size, b_.code_start, F);
    exclusive_scan(b_.reloc_count, b_.fn_reloc_start, F);
    size_lsda();
    uint32_t totals[6];
    fetch_totals(b_.per_fn, F, totals);
    b_.code_total = totals[0] + totals[1], b_.reloc_total = totals[2] + totals[3],
    b_.lsda_total = totals[4] + totals[5];
    CUDA_CHECK(cudaEventRecord(events_[5], stream_));
  }

  // An exclusive max-scan by function, from `init` (b_.fn_of the keys).
  template <class T, class Max>
  void max_scan_by_function(const T* in, T* out, uint32_t n, Max max, T init) {
    size_t temp_bytes = 0;
    CUDA_CHECK(cub::DeviceScan::ExclusiveScanByKey(nullptr, temp_bytes, b_.fn_of, in, out, max, init, n,
                                                   cuda::std::equal_to<uint32_t>{}, stream_));
    void* temp = cub_temp_.reserve(std::max<size_t>(temp_bytes, 1));
    CUDA_CHECK(cub::DeviceScan::ExclusiveScanByKey(temp, temp_bytes, b_.fn_of, in, out, max, init, n,
                                                   cuda::std::equal_to<uint32_t>{}, stream_));
    ++launches_;
  }

  // Step 5's exception tables: sizes per selected function, and their starts.
  void size_lsda() {
    const uint32_t N = b_.N, F = b_.F;
    const FlatModuleView& m = b_.m;
    // Nine 32-bit arrays of N + 1, then two 64-bit ones of N (8-byte aligned: N + 1 is
    // rounded up to even).
    const size_t n1 = (size_t(N) + 2) & ~size_t(1);
    uint32_t* lsda_work = lsda_work_.as<uint32_t>(9 * n1 + 4 * size_t(N) + 2);
    uint32_t *call_at = lsda_work, *last_call = lsda_work + n1, *run_mark = lsda_work + 2 * n1,
             *run_scan = lsda_work + 3 * n1, *run_end = lsda_work + 4 * n1, *bytes = lsda_work + 5 * n1,
             *typed = lsda_work + 6 * n1, *bytes_sum = lsda_work + 7 * n1, *typed_sum = lsda_work + 8 * n1;
    uint64_t* invoke_key = reinterpret_cast<uint64_t*>(lsda_work + 9 * n1);
    uint64_t* previous_key = invoke_key + N;
    wide_invoke_key_kernel<<<blocks_for(N), kThreads, 0, stream_>>>(m, b_.inst_offset, b_.call_end, b_.block_offset,
                                                                    invoke_key, call_at);
    ++launches_;
    CUDA_CHECK(cudaGetLastError());
    max_scan_by_function(invoke_key, previous_key, N, MaxOf64{}, uint64_t(0));
    max_scan_by_function(call_at, last_call, N, MaxOf{}, 0u);
    wide_run_mark_kernel<<<blocks_for(N), kThreads, 0, stream_>>>(m, invoke_key, previous_key, last_call, run_mark);
    ++launches_;
    CUDA_CHECK(cudaGetLastError());
    max_scan_by_function(run_mark, run_scan, N, MaxOf{}, 0u);
    CUDA_CHECK(cudaMemsetAsync(run_end, 0, std::max<uint32_t>(N, 1) * sizeof(uint32_t), stream_));
    wide_run_end_kernel<<<blocks_for(N), kThreads, 0, stream_>>>(m, invoke_key, previous_key, last_call, run_scan,
                                                                 run_end);
    ++launches_;
    CUDA_CHECK(cudaGetLastError());
    b_.lsda_scans = WideLsdaScans{invoke_key, previous_key, call_at, last_call, run_end, bytes_sum, typed_sum};
    wide_lsda_counts_kernel<<<blocks_for(N + 1), kThreads, 0, stream_>>>(m, b_.lsda_scans, b_.inst_offset,
                                                                         b_.call_begin, bytes, typed);
    ++launches_;
    CUDA_CHECK(cudaGetLastError());
    exclusive_scan(bytes, bytes_sum, N + 1);
    exclusive_scan(typed, typed_sum, N + 1);
    CUDA_CHECK(cudaMemsetAsync(b_.lsda_size, 0, F * sizeof(uint32_t), stream_));
    wide_lsda_size_kernel<<<blocks_for(F), kThreads, 0, stream_>>>(m, b_.selected, b_.selected_count, b_.lsda_scans,
                                                                   b_.code_size, b_.lsda_size);
    ++launches_;
    CUDA_CHECK(cudaGetLastError());
    exclusive_scan(b_.lsda_size, b_.lsda_start, F);
  }

  // 6. Code and relocations.
  void encode() {
    const uint32_t N = b_.N, F = b_.F;
    b_.code = code_.as<uint8_t>(std::max<uint32_t>(b_.code_total, 1));
    b_.reloc_out = reloc_out_.as<StampReloc>(std::max<uint32_t>(b_.reloc_total, 1));
    b_.layout.inst_offset = b_.inst_offset;
    b_.layout.block_offset = b_.block_offset;
    stamp_encode_kernel<<<blocks_for(N), kThreads, 0, stream_>>>(b_.m, b_.order, b_.layout, b_.code, b_.code_start,
                                                                 b_.reloc_out, b_.fn_reloc_start, b_.reloc_start);
    stamp_encode_prologue_kernel<<<blocks_for(F), kThreads, 0, stream_>>>(b_.m, b_.layout, b_.code, b_.code_start);
    launches_ += 2;
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventRecord(events_[6], stream_));
  }

  // 7. Exception tables: headers per function, entries per invoke.
  void write_lsda() {
    const uint32_t N = b_.N, F = b_.F;
    b_.lsda = lsda_.as<uint8_t>(std::max<uint32_t>(b_.lsda_total, 1));
    if (b_.lsda_total) {
      wide_lsda_function_kernel<<<blocks_for(F), kThreads, 0, stream_>>>(b_.m, b_.selected, b_.selected_count,
                                                                         b_.lsda_scans, b_.code_size, b_.lsda,
                                                                         b_.lsda_start);
      wide_lsda_invoke_kernel<<<blocks_for(N), kThreads, 0, stream_>>>(b_.m, b_.lsda_scans, b_.inst_offset,
                                                                       b_.call_begin, b_.code_size, b_.lsda,
                                                                       b_.lsda_start);
      launches_ += 2;
    }
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventRecord(events_[7], stream_));
  }

  // 8. Download through pinned staging: per-function tables, code, relocations, LSDAs,
  // and the instructions' offsets (the line tables of stamp's DWARF are made of them).
  void download() {
    const uint32_t F = b_.F, N = b_.N, code_total = b_.code_total, lsda_total = b_.lsda_total;
    const size_t fn_bytes = 6 * size_t(F) * sizeof(uint32_t), reloc_bytes = size_t(b_.reloc_total) * sizeof(StampReloc);
    const size_t inst_bytes = size_t(N) * sizeof(uint32_t);
    b_.at_code = align16(fn_bytes), b_.at_relocs = b_.at_code + align16(code_total),
    b_.at_lsda = b_.at_relocs + align16(reloc_bytes), b_.at_inst = b_.at_lsda + align16(lsda_total);
    const size_t down_total = b_.at_inst + inst_bytes;
    uint8_t* down = b_.down = download_staging_.reserve(down_total);
    CUDA_CHECK(cudaMemcpyAsync(down, b_.per_fn, fn_bytes, cudaMemcpyDeviceToHost, stream_));
    if (code_total)
      CUDA_CHECK(cudaMemcpyAsync(down + b_.at_code, b_.code, code_total, cudaMemcpyDeviceToHost, stream_));
    if (reloc_bytes)
      CUDA_CHECK(cudaMemcpyAsync(down + b_.at_relocs, b_.reloc_out, reloc_bytes, cudaMemcpyDeviceToHost, stream_));
    if (lsda_total)
      CUDA_CHECK(cudaMemcpyAsync(down + b_.at_lsda, b_.lsda, lsda_total, cudaMemcpyDeviceToHost, stream_));
    if (inst_bytes)
      CUDA_CHECK(cudaMemcpyAsync(down + b_.at_inst, b_.inst_offset, inst_bytes, cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaEventRecord(events_[8], stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  // 9. Each module's part, cut out of pinned staging on the host.
  std::vector<StampOutput> cut(size_t count) {
    const uint32_t F = b_.F;
    const uint8_t* down = b_.down;
    const auto cut_clock = std::chrono::steady_clock::now();
    const uint32_t* fn_tables = reinterpret_cast<const uint32_t*>(down);
    StampOutputView whole{down + b_.at_code, fn_tables + F,
                          fn_tables,         reinterpret_cast<const StampReloc*>(down + b_.at_relocs),
                          fn_tables + 3 * F, fn_tables + 2 * F,
                          down + b_.at_lsda, fn_tables + 5 * F,
                          fn_tables + 4 * F, reinterpret_cast<const uint32_t*>(down + b_.at_inst)};
    std::vector<StampOutput> outputs;
    outputs.reserve(count);
    for (size_t k = 0; k < count; ++k) outputs.push_back(cut_stamp_output(whole, b_.batch, k));
    times_.cut = seconds_since(cut_clock);
    return outputs;
  }

  // The steps' times from their events, and the launches.
  void record_times() {
    times_.upload = elapsed(0, 1);
    times_.order = elapsed(1, 2);
    times_.frame = elapsed(2, 3);
    times_.measure = elapsed(3, 4);
    times_.offsets = elapsed(4, 5);
    times_.encode = elapsed(5, 6);
    times_.lsda = elapsed(6, 7);
    times_.download = elapsed(7, 8);
    times_.span_begin = since_epoch(events_[0]);
    times_.span_end = since_epoch(events_[8]);
    times_.launches = launches_;
    launches_ = 0;
  }

  void exclusive_scan(const uint32_t* in, uint32_t* out, uint32_t n) {
    size_t temp_bytes = 0;
    CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, in, out, n, stream_));
    void* temp = cub_temp_.reserve(std::max<size_t>(temp_bytes, 1));
    CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, in, out, n, stream_));
    ++launches_;
  }
  // The last element of each of the six per-function tables (sizes and starts of code,
  // relocations and exception tables, back to back): each size plus its start is a
  // total. Waits for the stream.
  void fetch_totals(const uint32_t* per_fn, uint32_t n, uint32_t* totals) {
    uint32_t* pinned = reinterpret_cast<uint32_t*>(totals_staging_.reserve(6 * sizeof(uint32_t)));
    for (int k = 0; k < 6; ++k)
      CUDA_CHECK(cudaMemcpyAsync(pinned + k, per_fn + size_t(k) * n + n - 1, sizeof(uint32_t), cudaMemcpyDeviceToHost,
                                 stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    std::memcpy(totals, pinned, 6 * sizeof(uint32_t));
  }
  double since_epoch(cudaEvent_t e) {
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, epoch_, e));
    return ms / 1000.0;
  }
  double elapsed(int from, int to) {
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, events_[from], events_[to]));
    return ms / 1000.0;
  }

  int device_;
  std::string name_;
  int numa_node_ = -1;
  bool on_gpu_node_ = false;
  cpu_set_t node_cpus_{};  // the CPUs of the GPU's NUMA node, where has_node_cpus_
  bool has_node_cpus_ = false;
  BatchState b_;  // the batch being run
  cudaStream_t stream_{};
  cudaEvent_t events_[9]{};
  cudaEvent_t epoch_{};
  StampGpuTimes times_;
  uint64_t launches_ = 0;
  bool order_by_opcode_ = true;
  PinnedBuffer upload_staging_, download_staging_, totals_staging_;
  DeviceBuffer flat_, use_count_, home_, inst_slot_, alloca_mem_, arg_slot_, frame_size_, prologue_size_, size_,
      relocs_, call_begin_, call_end_, inst_offset_, reloc_start_, block_offset_, per_fn_, code_, reloc_out_, lsda_,
      cub_temp_, opcode_keys_, identity_, selected_, fn_of_, accesses_, frame_keys_, frame_step_, fn_range_, size_sum_,
      lsda_work_, long_offset_;
};

}  // namespace

std::unique_ptr<StampGpuExecutor> open_stamp_gpu(int device, std::string* why) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    if (why) *why = std::string("CUDA runtime: ") + cudaGetErrorString(err);
    return nullptr;
  }
  if (device < 0 || device >= count) {
    if (why)
      *why = count ? "no CUDA device " + std::to_string(device) + " (this machine has " + std::to_string(count) + ")"
                   : std::string("no CUDA device found");
    return nullptr;
  }
  try {
    return std::make_unique<CudaStampExecutor>(device);
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return nullptr;
  }
}

}  // namespace kiln
