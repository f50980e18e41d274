// kiln-replay's report as figures (what replay.cpp computes from the rounds, and what
// replay_merge.cpp reads back from shards' reports and joins), and its two renderings.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "corpus.h"
#include "replay.h"
#include "stats.h"

namespace kiln {

struct StageSums {
  double parse = 0, clone = 0, codegen = 0, flat_export = 0, fallback = 0, stages = 0, elf = 0;
  double bitcode_read = 0, direct_export = 0;
  uint64_t modules_direct = 0, modules_read_directly = 0;
  uint64_t instructions = 0, modules = 0, failed = 0, instructions_stamp = 0, functions_stamp = 0, functions = 0;
  uint64_t text_bytes = 0, object_bytes = 0, kernel_launches = 0;
  double gpu_upload = 0, gpu_kernels = 0, gpu_download = 0;
};

// A module left out of the rounds: it crashed LLVM, or stopped it with a fatal error.
struct Excluded {
  std::string id, error;
};

// Everything the report and the table say, computed once from the rounds; the two
// renderers below only lay it out.

// One round of one service: its sums and throughputs.
struct RoundSummary {
  int round = 0;
  double wall_seconds = 0;
  StageSums sums;
  // Throughput of the emission work itself, per core-second (llvm: clone + codegen;
  // stamp: its stages and ELF writing, plus LLVM for what it left), and over the
  // round's wall time (all workers together).
  double per_core = 0, wall_rate = 0, modules_per_second = 0;
};

struct ServiceSummary {
  std::string name, backend;
  unsigned workers = 0;
  std::vector<RoundSummary> rounds;
};

// stamp against llvm on the same modules, from the last (warm) round of each.
struct StampVsLlvm {
  int last_round = 0;  // the stamp service's
  StageSums st;        // the stamp service's last round, its times the warm medians
  // Every figure below but the reader's compares the same modules: those both back ends
  // emitted without an error in every round (a module that failed on one alone made
  // one side's sums cover it and the other's not). Their sums per round, each service's,
  // are kept for a merge of shards to add up.
  uint64_t modules_compared = 0, modules_left_out = 0;
  std::vector<StageSums> llvm_rounds, stamp_rounds;
  double llvm_rate = 0, stamp_rate = 0, end_to_end = 0, export_rate = 0, parse_rate = 0, text_ratio = 0;
  double object_ratio = 0;  // whole objects' bytes: symbols, relocations, unwind and exception tables too
  // The direct reader (first round): on the modules it read (module and every function),
  // LLVM's parse plus export against its read plus export; and on the modules it took
  // whole, bitcode to stamp's object (read, export, stages, ELF) against LLVM's parse
  // plus its code generation (the llvm service's warm median per module).
  uint64_t modules = 0, modules_read = 0, modules_direct = 0;
  double read_llvm_seconds = 0, read_direct_seconds = 0, read_speedup = 0;
  double direct_llvm_seconds = 0, direct_seconds = 0, direct_end_to_end = 0;
};

// A module the GPU service emitted on the device in its last round.
struct GpuReceipt {
  std::string module;
  int round = 0;
  ModuleEmission emission;
};

struct GpuSummary {
  std::string service;
  unsigned streams = 0;
  uint32_t batches = 0;
  uint64_t batch_instructions = 0, kernel_launches = 0;
  double gpu_rate = 0, gpu_time = 0, span = 0, span_rate = 0, llvm_rate = 0, cpu_stages_rate = 0;
  double busy = 0, upload = 0, kernels = 0, download = 0, first_round_device_phase = 0;
  std::vector<GpuReceipt> receipts;
};

// A module whose objects differ between emissions, or that failed.
struct Instability {
  std::string module, backend;
  bool differ = false;  // else failed
  std::string error;
  std::map<std::string, std::vector<std::string>> objects;  // hash -> "[cuda ]round r worker w"
  std::string reproduce;
};

// A module's verdict under one back end: stable (the same object every round, on every
// worker and device), unstable (objects differ) or failed; its object's hash when
// stable, its instructions from the last round.
struct ModuleVerdict {
  std::string module, backend, verdict, object_xxh3;
  uint64_t instructions = 0;
};

struct ReplaySummary {
  std::string corpus, time;
  std::string shard;  // "K/N" for a shard's report (--shard); empty for the whole corpus
  std::string profile;
  int rounds = 0;
  unsigned jobs = 0;
  size_t modules = 0;  // all, excluded ones included
  std::vector<ServiceSummary> services;
  std::optional<StampVsLlvm> stamp_vs_llvm;
  std::optional<GpuSummary> gpu;
  std::vector<Instability> instability;
  std::vector<ModuleVerdict> verdicts;  // back end by back end, modules in corpus order
  std::vector<Excluded> excluded;
  size_t unstable_modules = 0, failed_modules = 0;
};

// The median over the warm rounds (all but the first, unless there is only one) of
// one figure of the rounds' sums.
template <class Value>
double warm_median_of_sums(const std::vector<StageSums>& rounds, Value value) {
  std::vector<double> v;
  for (size_t r = rounds.size() > 1 ? 1 : 0; r < rounds.size(); ++r) v.push_back(value(rounds[r]));
  return median(v);
}

// The throughputs of a round from its sums and wall time.
void round_rates(RoundSummary& r);
// stamp against llvm from the sums of each service's rounds over the modules compared
// (warm medians); the direct reader's figures (c.modules ... c.direct_end_to_end), the
// module counts and the rounds' sums are left to the caller.
StampVsLlvm compare_round_sums(const std::vector<StageSums>& llvm, const std::vector<StageSums>& stamp, int last_round);
// stamp against llvm from the rounds of the two services (each round's emissions
// indexed alike), over the modules both emitted without an error in every round.
StampVsLlvm compare_stamp_llvm(const std::vector<RoundResult>& llvm, const std::vector<RoundResult>& stamp);
// The command line that emits a module of the corpus twice and compares the objects.
std::string reproduce_command(const Corpus& corpus, const std::string& id, const std::string& backend,
                              const std::string& profile);
// The report (kiln-replay-report, JSON) and the table for people.
std::string render_report_json(const ReplaySummary& sum);
std::string render_table(const ReplaySummary& sum);

}  // namespace kiln
