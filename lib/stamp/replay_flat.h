// kiln-replay-flat's engine: replays flat IR files (kiln-flat(5)) through stamp's
// executors, on the GPU and on the CPU, round after round; checks that every module's
// object is byte-identical on both (the CPU executor is the oracle) and measures the
// per-stage times and throughput. run_replay_flat does the work and returns its
// result; replay_flat_table and replay_flat_json render it. No LLVM, so it runs where
// LLVM is not installed (the GPU machine).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

struct ReplayFlatOptions {
  bool cpu = true, cuda = true;         // --device: where the stages run
  int rounds = 5;                       // at least 2: round 1 warms up
  unsigned streams = 4;                 // GPU executors, each with its own host thread
  uint64_t batch_instructions = 32768;  // modules go to the GPU in batches of at least this many
  bool order_by_opcode = true;          // measure and encode kernels take instructions by opcode
  unsigned cpu_threads = 1;             // above 1: the CPU executor also timed with modules in parallel
  std::string baseline_path;            // a kiln-replay report from the same modules, for the ratio to llvm
  // Flat IR files and bitcode files (read by the direct reader, no LLVM), and
  // directories of them (a kiln corpus too).
  std::vector<std::string> inputs;
};

// Per-round sums over the modules (the GPU: over the batches), in seconds.
struct ReplayFlatRound {
  double prepare = 0, upload = 0, order = 0, frame = 0, measure = 0, offsets = 0, encode = 0, lsda = 0, download = 0,
         cut = 0, elf = 0, wall = 0;
  double span_begin = 1e300, span_end = 0;  // the device's: first upload to last download
  double parallel_wall = 0;                 // the CPU executor's stages with modules spread over cpu_threads
  uint64_t launches = 0;
  double span() const { return span_end > span_begin ? span_end - span_begin : 0; }
  double stages() const { return upload + order + frame + measure + offsets + encode + lsda + download; }
};

// The GPU's steps, in the order of its report.
constexpr int kReplayFlatGpuSteps = 10;

// The medians of the warm rounds (2..N) and what else the reports say.
struct ReplayFlatResult {
  ReplayFlatOptions options;
  size_t modules = 0, batches = 0;
  // Bitcode inputs: how many, how many the direct reader declined (not replayed), and
  // its time to read and export them all, once.
  size_t bitcode_modules = 0, bitcode_declined = 0;
  double read_seconds = 0;
  uint64_t instructions = 0;
  std::vector<ReplayFlatRound> cpu_rounds, gpu_rounds;  // every round, the warm-up too
  // The CPU executor (when options.cpu): one thread, and over cpu_threads.
  double cpu_stages = 0, cpu_elf = 0, cpu_parallel = 0;
  // The GPU (when options.cuda): the device, then the medians.
  std::string gpu_name;
  int numa_node = -1;
  bool on_gpu_node = false;
  size_t streams = 0;
  double context_seconds = 0;
  double gpu_steps[kReplayFlatGpuSteps] = {};  // busy seconds per step, summed over streams
  double gpu_wall = 0, gpu_busy = 0, gpu_elf = 0, gpu_span = 0;
  double llvm_rate = 0;  // llvm -O0's IR instructions per core-second, from the baseline (0: none)
  // Objects that differ from the oracle, of `objects` compared; the first ten named.
  size_t mismatches = 0, objects = 0;
  std::string mismatch_list;  // "  where: path\n" lines
};

// Reads the files, runs the rounds and takes the medians. Throws KilnError: usage
// (no files), bad input, I/O, no device (--device cuda without a usable GPU);
// std::runtime_error when a batch fails on the GPU.
ReplayFlatResult run_replay_flat(const ReplayFlatOptions& options);

// The report as a table (what kiln-replay-flat prints) and as JSON (--json).
std::string replay_flat_table(const ReplayFlatResult& result);
std::string replay_flat_json(const ReplayFlatResult& result);

}  // namespace kiln
