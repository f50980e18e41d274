// The CUDA executor's unit tests, for the GPU machine (no LLVM, no test framework):
// edge cases of batches, checked against the CPU executor on real flat files.
//   gpu_unit DIR     (DIR: flat files, e.g. the regex corpus of tests/device/corpus)
// With KILN_GPU_STANDIN=cpu it runs on the CPU stand-in (machines without a GPU).
// Exit 0: every check passed; 1: a check failed; 7: no usable GPU.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "error.h"
#include "flat_file.h"
#include "fs.h"
#include "stamp_batch.h"
#include "stamp_cpu.h"
#include "stamp_gpu.h"

using namespace kiln;

namespace {

int failures = 0, checks = 0;

void check(bool ok, const std::string& what) {
  ++checks;
  if (!ok) ++failures;
  std::printf("%s - %s\n", ok ? "ok" : "FAIL", what.c_str());
}

bool same(const StampOutput& a, const StampOutput& b) {
  if (a.code != b.code || a.code_start != b.code_start || a.code_size != b.code_size || a.lsda != b.lsda ||
      a.lsda_start != b.lsda_start || a.lsda_size != b.lsda_size || a.reloc_start != b.reloc_start ||
      a.reloc_count != b.reloc_count || a.relocs.size() != b.relocs.size())
    return false;
  for (size_t r = 0; r < a.relocs.size(); ++r)
    if (a.relocs[r].offset != b.relocs[r].offset || a.relocs[r].type != b.relocs[r].type ||
        a.relocs[r].symbol != b.relocs[r].symbol || a.relocs[r].addend != b.relocs[r].addend)
      return false;
  return true;
}

std::vector<FlatModuleData> read_dir(const std::string& dir) {
  std::vector<FlatModuleData> modules;
  for (const std::string& path : flat_files_named({dir})) modules.push_back(read_flat_file(read_file(path), path));
  return modules;
}

constexpr size_t kEmpty = ~size_t(0);  // in a pick: a module without functions

// Runs the modules (by index) as one batch and compares each with the CPU executor.
bool batch_matches(StampGpuExecutor& gpu, const std::vector<FlatModuleData>& all, const std::vector<size_t>& pick) {
  std::vector<FlatModuleView> views;
  for (size_t k : pick) views.push_back(k == kEmpty ? FlatModuleView{} : all[k].view());
  std::vector<StampOutput> out = gpu.run_batch(views.data(), views.size());
  if (out.size() != pick.size()) return false;
  for (size_t j = 0; j < pick.size(); ++j)
    if (!same(out[j], pick[j] == kEmpty ? StampOutput{} : run_stamp_cpu(all[pick[j]].view(), 1))) return false;
  return true;
}

int run(int argc, char** argv) {
  if (argc != 2) throw KilnError(kExitUsage, "", "usage: gpu_unit DIR_OF_FLAT_FILES");
  std::vector<FlatModuleData> all = read_dir(argv[1]);
  if (all.size() < 4) throw KilnError(kExitBadInput, argv[1], "fewer than 4 flat files");
  std::string why;
  std::unique_ptr<StampGpuExecutor> gpu = open_stamp_gpu_or_standin(0, &why);
  if (!gpu) throw KilnError(kExitNoDevice, "", "no usable GPU: " + why);
  std::printf("# %s, %zu flat modules\n", gpu->device_name().c_str(), all.size());

  size_t largest = 0;
  for (size_t k = 0; k < all.size(); ++k)
    if (all[k].insts.size() > all[largest].insts.size()) largest = k;
  check(gpu->run_batch(nullptr, 0).empty(), "an empty batch gives no outputs");
  check(batch_matches(*gpu, all, {kEmpty}), "a batch of one module without functions");
  // Small, then everything at once (every buffer grows), then small again (reused).
  check(batch_matches(*gpu, all, {1}), "one module");
  std::vector<size_t> everything(all.size());
  for (size_t k = 0; k < all.size(); ++k) everything[k] = k;
  check(batch_matches(*gpu, all, everything), "the whole corpus as one batch");
  check(batch_matches(*gpu, all, {2, 0}), "two modules after the large batch, in reverse order");
  check(batch_matches(*gpu, all, {largest}), "the module with the most instructions");
  check(batch_matches(*gpu, all, {0, kEmpty, 1, kEmpty}), "modules without functions inside a batch and at its end");
  gpu->set_order_by_opcode(false);
  check(batch_matches(*gpu, all, everything), "the whole corpus, instructions in file order");
  gpu->set_order_by_opcode(true);
  check(gpu->last_times().launches >= 10 && gpu->last_times().modules == all.size(), "launches and modules counted");
  std::printf("%d of %d checks passed\n", checks - failures, checks);
  return failures ? kExitFailed : kExitOk;
}

}  // namespace

int main(int argc, char** argv) { return run_tool("gpu_unit", run, argc, argv); }
