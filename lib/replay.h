// kiln-replay: emission services that stay alive across rounds over a corpus held in
// memory, and the check that every module's object bytes are the same in every
// round and on every worker. A GPU service joins by implementing EmissionService.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backend.h"
#include "shard.h"

namespace kiln {

constexpr int kReplaySchemaVersion = 1;

struct ReplayModule {
  std::string id;
  std::string bytes;
};

struct ModuleEmission {
  std::string object_xxh3;
  uint64_t object_bytes = 0;
  uint64_t functions = 0, instructions = 0;
  unsigned worker = 0;
  // parse: LLVM's bitcode parse alone (not its verifier), non-zero only the first time a
  // worker sees the module.
  double parse = 0, clone = 0, codegen = 0;
  // stamp: flat export (once per worker, like parse), its stages and ELF writing
  // (in codegen), and LLVM emitting the functions left to it (fallback).
  double flat_export = 0, fallback = 0;
  // stamp, the first time a worker sees the module: the direct reader's decoding and
  // its export (lib/stamp/direct_export.h); the route the object took ("direct": no
  // LLVM; "llvm": LLVM's parser) and why not direct; whether the reader read it
  // (module and every function, whatever the route).
  double bitcode_read = 0, direct_export = 0;
  std::string reader, reader_reason;
  bool read_directly = false;
  double stages = 0, elf = 0;  // stamp: codegen = stages (kernels, on the CPU or the GPU) + elf (object writing)
  // The GPU service: modules go in batches; a module's times are its share (by
  // instructions) of its batch's, and its launches are its batch's.
  std::string device;               // where its stages ran (empty: on the CPU)
  bool object_from_device = false;  // its stamp code, relocations and exception tables came back from `device`
  uint32_t batch = 0, batch_modules = 0;
  bool first_in_batch = false;   // counts the batch's launches in a round's sum
  uint64_t kernel_launches = 0;  // kernels, scans, sorts and selections launched for its batch
  double gpu_upload = 0, gpu_kernels = 0, gpu_download = 0;  // from CUDA events
  uint64_t functions_stamp = 0, instructions_stamp = 0;
  uint64_t text_bytes = 0;  // .text of the object(s)
  std::string error;
};

struct RoundResult {
  std::string service;
  int round = 0;
  double wall_seconds = 0;
  double device_phase_seconds = 0;        // the GPU service: wall time of its batches (streams overlapped)
  double device_span_seconds = 0;         // the GPU service: first upload to last download (device clock)
  std::vector<ModuleEmission> emissions;  // indexed like the module list
};

class EmissionService {
 public:
  virtual ~EmissionService() = default;
  virtual std::string name() const = 0;
  virtual std::string backend() const = 0;
  virtual unsigned workers() const = 0;
  // Emits every module once; the service keeps its workers and their parsed modules.
  virtual RoundResult run_round(int round) = 0;
};

// CPU workers, each with its own back end instance (for llvm: its own LLVMContext
// and TargetMachine, and each module parsed once per worker); a round runs them on
// threads through parallel_for_workers (lib/base/parallel.h).
std::unique_ptr<EmissionService> make_cpu_service(const std::string& backend_spec, Profile profile, unsigned jobs,
                                                  const std::vector<ReplayModule>& modules);
// stamp with its stages on CUDA device 0: modules in batches of at least
// `batch_instructions` IR instructions, `streams` executors (each a CUDA stream with
// its buffers and a host thread) kept for the whole replay, so that batches' uploads,
// kernels and downloads overlap; the ELF writing and any llvm fallback on the CPU.
// Throws KilnError (kExitNoDevice) saying why when there is no usable GPU.
std::unique_ptr<EmissionService> make_gpu_service(Profile profile, const std::vector<ReplayModule>& modules,
                                                  unsigned streams = 4, uint64_t batch_instructions = 32768);

struct ReplayOptions {
  std::string corpus_dir;
  std::vector<std::string> backends;  // each gets a CPU service
  bool cpu = true;                    // --device: the CPU services
  bool cuda = false;                  // --device: a GPU service for stamp too
  Profile profile = Profile::fast;
  int rounds = 3;
  unsigned jobs = 1;
  unsigned gpu_streams = 4;                 // --gpu-streams
  uint64_t gpu_batch_instructions = 32768;  // --gpu-batch
  std::string report_path;                  // JSON report; empty: CORPUS/replay-report.json
  Shard shard;                              // --shard: only these modules; its own default report
};

struct ReplayOutcome {
  std::string report_json;
  std::string table;
  size_t unstable_modules = 0, failed_modules = 0;
};

ReplayOutcome run_replay(const ReplayOptions& options);

// kiln-replay merge: shards' reports (kiln-replay --shard K/N) joined into the report
// one run over the whole corpus gives (kiln-replay(1) says which figures are summed
// and which recomputed); the report is written to `output` (empty: the corpus's
// replay-report.json). Reports of another replay (other back ends, rounds, profile),
// or shards missing or given twice, are a KilnError (kExitBadInput).
ReplayOutcome merge_replay_reports(const std::string& corpus_dir, const std::vector<std::string>& reports,
                                   const std::string& output);

}  // namespace kiln
