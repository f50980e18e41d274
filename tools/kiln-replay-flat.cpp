// kiln-replay-flat: replays flat IR files (kiln-flat(5)) through stamp's executors,
// on the GPU and on the CPU, round after round; checks that every module's object is
// byte-identical on both (the CPU executor is the oracle) and reports per-stage times
// and throughput. It links no LLVM, so it runs where LLVM is not installed (the GPU
// machine), and it takes its command line by hand so that it builds with nvcc and a
// C++ compiler alone.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "error.h"
#include "flat_file.h"
#include "fs.h"
#include "kiln_config.h"
#include "stamp_batch.h"
#include "stamp_cpu.h"
#include "stamp_gpu.h"
#include "stamp_object.h"
#include "stats.h"
#include "timeutil.h"

namespace kiln {
namespace {

const char* kUsage =
    "Replay flat IR files through stamp's GPU and CPU executors and check identical objects.\n"
    "  kiln-replay-flat [--device cuda,cpu] [--rounds N] [--streams N] [--batch INSTR] [--order opcode|none]\n"
    "                   [--cpu-threads N] [--baseline REPORT] [--json FILE] FLAT|DIR...\n"
    "Options:\n"
    "  --device LIST     cuda, cpu, or cuda,cpu (default): where the stages run\n"
    "  --rounds N        rounds over the files, at least 2 (default 5; round 1 warms up)\n"
    "  --streams N       CUDA streams, each with its own host thread and buffers (default 4)\n"
    "  --batch INSTR     modules go to the GPU in batches of at least INSTR IR instructions\n"
    "                    (consecutive files; default 32768; 1: one module per batch)\n"
    "  --cpu-threads N   also time the CPU executor with modules spread over N threads\n"
    "                    (default 1: one thread only)\n"
    "  --order WHAT      opcode: measure and encode kernels take instructions by opcode (default);\n"
    "                    none: in file order\n"
    "  --baseline FILE   a kiln-replay report from the same modules, for the ratio to llvm\n"
    "  --json FILE       also write the results as JSON\n"
    "  -h, --help        this text;  --version  the version\n"
    "Exit: 0 identical objects, 1 objects differ, 2 usage, 3 bad input, 5 I/O, 7 no usable GPU.\n";

struct Module {
  std::string path, source;
  FlatModuleData flat;
  uint64_t instructions = 0;
  std::string cpu_object;  // the oracle
};

// One number from a kiln-replay report, found by its key (no JSON library here).
double number_in(const std::string& text, const std::string& key) {
  size_t at = text.find("\"" + key + "\"");
  if (at == std::string::npos) return 0;
  at = text.find(':', at);
  return at == std::string::npos ? 0 : std::strtod(text.c_str() + at + 1, nullptr);
}

// Per-round sums over the modules (the GPU: over the batches).
struct Round {
  double prepare = 0, upload = 0, order = 0, frame = 0, measure = 0, offsets = 0, encode = 0, lsda = 0, download = 0,
         cut = 0, elf = 0, wall = 0;
  double span_begin = 1e300, span_end = 0;  // the device's: first upload to last download
  double parallel_wall = 0;  // the CPU executor's stages with modules spread over --cpu-threads
  double span() const { return span_end > span_begin ? span_end - span_begin : 0; }
  uint64_t launches = 0;
  double stages() const { return upload + order + frame + measure + offsets + encode + lsda + download; }
  void add(const StampGpuTimes& t) {
    prepare += t.prepare, upload += t.upload, order += t.order, frame += t.frame, measure += t.measure;
    offsets += t.offsets, encode += t.encode, lsda += t.exception_tables, download += t.download, cut += t.cut;
    launches += t.launches;
    span_begin = std::min(span_begin, t.span_begin), span_end = std::max(span_end, t.span_end);
  }
  void add(const Round& r) {
    prepare += r.prepare, upload += r.upload, order += r.order, frame += r.frame, measure += r.measure;
    offsets += r.offsets, encode += r.encode, lsda += r.lsda, download += r.download, cut += r.cut;
    launches += r.launches;
    span_begin = std::min(span_begin, r.span_begin), span_end = std::max(span_end, r.span_end);
  }
};

// Consecutive modules, at least `instructions` IR instructions in all (the last batch
// takes what is left).
struct Batch {
  size_t first = 0, count = 0;
  std::vector<FlatModuleView> views;
};
template <class Modules>
std::vector<Batch> make_batches(const Modules& modules, uint64_t instructions) {
  std::vector<Batch> batches;
  uint64_t held = 0;
  for (size_t i = 0; i < modules.size(); ++i) {
    if (batches.empty() || held >= instructions) batches.push_back(Batch{i, 0, {}}), held = 0;
    batches.back().count++;
    batches.back().views.push_back(modules[i].flat.view());
    held += modules[i].instructions;
  }
  return batches;
}

}  // namespace

int replay_flat_main(int argc, char** argv) {
  bool want_cpu = true, want_cuda = true;
  int rounds = 5;
  unsigned streams = 4;
  uint64_t batch_instructions = 32768;
  bool order_by_opcode = true;
  unsigned cpu_threads = 1;
  std::string baseline_path, json_path;
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw KilnError(kExitUsage, "", a + " needs a value (see --help)");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    } else if (a == "--version") {
      std::printf("kiln-replay-flat %s (no LLVM%s)\n", KILN_VERSION, KILN_HAVE_CUDA ? ", CUDA kernels built" : "");
      return kExitOk;
    } else if (a == "--device") {
      want_cpu = want_cuda = false;
      std::stringstream list(value());
      for (std::string d; std::getline(list, d, ',');) {
        if (d == "cpu") want_cpu = true;
        else if (d == "cuda") want_cuda = true;
        else throw KilnError(kExitUsage, "", "--device " + d + ": expected cpu or cuda");
      }
    } else if (a == "--rounds") {
      rounds = std::atoi(value().c_str());
      if (rounds < 2) throw KilnError(kExitUsage, "", "--rounds must be at least 2 (round 1 warms up)");
    } else if (a == "--streams") {
      int n = std::atoi(value().c_str());
      if (n < 1 || n > 64) throw KilnError(kExitUsage, "", "--streams must be 1 to 64");
      streams = static_cast<unsigned>(n);
    } else if (a == "--batch") {
      long long n = std::atoll(value().c_str());
      if (n < 1) throw KilnError(kExitUsage, "", "--batch must be at least 1 (IR instructions)");
      batch_instructions = static_cast<uint64_t>(n);
    } else if (a == "--cpu-threads") {
      int n = std::atoi(value().c_str());
      if (n < 1 || n > 1024) throw KilnError(kExitUsage, "", "--cpu-threads must be 1 to 1024");
      cpu_threads = static_cast<unsigned>(n);
    } else if (a == "--order") {
      std::string o = value();
      if (o != "opcode" && o != "none") throw KilnError(kExitUsage, "", "--order " + o + ": expected opcode or none");
      order_by_opcode = o == "opcode";
    } else if (a == "--baseline") {
      baseline_path = value();
    } else if (a == "--json") {
      json_path = value();
    } else if (!a.empty() && a[0] == '-') {
      throw KilnError(kExitUsage, "", "unknown option " + a + " (see --help)");
    } else {
      inputs.push_back(a);
    }
  }
  if (!want_cpu && !want_cuda) throw KilnError(kExitUsage, "", "--device names no device");
  std::vector<std::string> files = flat_files_named(inputs);
  if (files.empty()) throw KilnError(kExitUsage, "", "no flat IR files given (see --help)");

  std::vector<Module> modules(files.size());
  uint64_t instructions = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    modules[i].path = files[i];
    modules[i].flat = read_flat_file(read_file(files[i]), files[i], &modules[i].source);
    modules[i].instructions = modules[i].flat.insts.size();
    instructions += modules[i].instructions;
  }
  // The oracle: the CPU executor's objects (also the CPU rounds' reference).
  for (Module& m : modules) m.cpu_object = emit_flat_module(m.flat, m.source);
  std::vector<Batch> batches = make_batches(modules, batch_instructions);
  // The batches on the CPU executor first: each module cut from its batch must give the
  // oracle's object (what the GPU is then held to as well).
  size_t batch_mismatches = 0;
  std::string mismatch_list;
  for (const Batch& b : batches) {
    std::vector<StampOutput> cut = run_stamp_cpu_batch(b.views.data(), b.count, 1);
    for (size_t k = 0; k < b.count; ++k) {
      const Module& m = modules[b.first + k];
      if (write_stamp_object(stamp_object_parts(m.flat, cut[k]).view, m.source) != m.cpu_object &&
          batch_mismatches++ < 10)
        mismatch_list += "  cpu batch: " + m.path + "\n";
    }
  }

  // One executor per stream, each driven by its own host thread: while one stream
  // uploads a module, another runs its kernels and a third downloads.
  std::vector<std::unique_ptr<StampGpuExecutor>> executors;
  double context_seconds = 0;
  std::string gpu_name;
  if (want_cuda) {
    Stopwatch clock;
    std::string why;
    for (unsigned k = 0; k < streams; ++k) {
      executors.push_back(open_stamp_gpu_for_tools(0, &why));
      if (!executors.back()) throw KilnError(kExitNoDevice, "", "--device cuda: " + why);
    }
    context_seconds = clock.seconds();
    gpu_name = executors[0]->device_name();
  }
  StampGpuExecutor* gpu = executors.empty() ? nullptr : executors[0].get();

  for (auto& e : executors) e->set_order_by_opcode(order_by_opcode);
  std::vector<Round> cpu_rounds, gpu_rounds;
  size_t mismatches = batch_mismatches;
  for (int r = 1; r <= rounds; ++r) {
    if (gpu) {  // the GPU first in each round, then the CPU: interleaved, as kiln-replay does
      // The GPU phase (wall): every stream's thread takes the next batch.
      std::vector<StampOutput> outputs(modules.size());
      std::vector<Round> per_stream(executors.size());
      std::atomic<size_t> next{0};
      std::vector<std::string> errors(executors.size());
      Stopwatch wall;
      std::vector<std::thread> threads;
      for (size_t k = 0; k < executors.size(); ++k)
        threads.emplace_back([&, k] {
          try {
            for (size_t i; (i = next++) < batches.size();) {
              std::vector<StampOutput> cut = executors[k]->run_batch(batches[i].views.data(), batches[i].count);
              for (size_t j = 0; j < cut.size(); ++j) outputs[batches[i].first + j] = std::move(cut[j]);
              per_stream[k].add(executors[k]->last_times());
            }
          } catch (const std::exception& e) {
            errors[k] = e.what();
            next = batches.size();
          }
        });
      for (auto& t : threads) t.join();
      Round g;
      g.wall = wall.seconds();
      for (const std::string& e : errors)
        if (!e.empty()) throw std::runtime_error(e);
      for (const Round& p : per_stream) g.add(p);
      // ELF writing on the CPU afterwards, and the comparison with the oracle.
      Stopwatch elf;
      for (size_t i = 0; i < modules.size(); ++i) {
        std::string object = write_stamp_object(stamp_object_parts(modules[i].flat, outputs[i]).view, modules[i].source);
        if (object != modules[i].cpu_object && mismatches++ < 10)
          mismatch_list += "  round " + std::to_string(r) + ": " + modules[i].path + "\n";
      }
      g.elf = elf.seconds();
      gpu_rounds.push_back(g);
    }
    if (want_cpu) {
      Round c;
      Stopwatch wall;
      for (Module& m : modules) {
        StampOutput code = run_stamp_cpu(m.flat.view(), 1);
        c.frame += code.frame, c.measure += code.measure, c.offsets += code.offsets, c.encode += code.encode;
        c.lsda += code.exception_tables;
        Stopwatch elf;
        std::string object = write_stamp_object(stamp_object_parts(m.flat, code).view, m.source);
        c.elf += elf.seconds();
        if (object != m.cpu_object && mismatches++ < 10)
          mismatch_list += "  cpu round " + std::to_string(r) + ": " + m.path + "\n";
      }
      c.wall = wall.seconds();
      if (cpu_threads > 1) {  // the strongest CPU side: every module's stages, all threads busy
        std::atomic<size_t> next{0};
        Stopwatch parallel;
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < cpu_threads; ++t)
          pool.emplace_back([&] {
            for (size_t i; (i = next++) < modules.size();) run_stamp_cpu(modules[i].flat.view(), 1);
          });
        for (auto& t : pool) t.join();
        c.parallel_wall = parallel.seconds();
      }
      cpu_rounds.push_back(c);
    }
  }

  // Medians of the warm rounds (2..N).
  auto warm = [](const std::vector<Round>& rs, double (*f)(const Round&)) {
    std::vector<double> v;
    for (size_t i = 1; i < rs.size(); ++i) v.push_back(f(rs[i]));
    return v.empty() ? 0 : median(v);  // one round: no warm ones
  };
  double llvm_rate = 0;
  if (!baseline_path.empty()) llvm_rate = number_in(read_file(baseline_path), "llvm_instructions_per_core_second");
  std::string table, json = "{\"schema\":\"kiln-replay-flat\",\"v\":1";
  char line[512];
  std::snprintf(line, sizeof line, "%zu flat modules, %llu IR instructions, %d rounds (medians of rounds 2..%d)\n",
                modules.size(), static_cast<unsigned long long>(instructions), rounds, rounds);
  table += line;
  std::snprintf(line, sizeof line, ",\"modules\":%zu,\"instructions\":%llu,\"rounds\":%d", modules.size(),
                static_cast<unsigned long long>(instructions), rounds);
  json += line;
  double cpu_stages = 0, gpu_stages = 0, cpu_parallel = 0;
  if (!cpu_rounds.empty()) {
    cpu_stages = warm(cpu_rounds, [](const Round& x) { return x.stages(); });
    double elf = warm(cpu_rounds, [](const Round& x) { return x.elf; });
    std::snprintf(line, sizeof line, "cpu (one thread)   stages %.4f s  %7.2f M instr/s  ELF writing %.4f s\n", cpu_stages,
                  instructions / std::max(1e-12, cpu_stages) / 1e6, elf);
    table += line;
    std::snprintf(line, sizeof line, ",\"cpu\":{\"stages_seconds\":%.6f,\"elf_seconds\":%.6f,\"instructions_per_second\":%.1f",
                  cpu_stages, elf, instructions / std::max(1e-12, cpu_stages));
    json += line;
    if (cpu_threads > 1) {
      cpu_parallel = warm(cpu_rounds, [](const Round& x) { return x.parallel_wall; });
      std::snprintf(line, sizeof line, "cpu (%u threads)   stages %.4f s  %7.2f M instr/s (wall, modules in parallel)\n",
                    cpu_threads, cpu_parallel, instructions / std::max(1e-12, cpu_parallel) / 1e6);
      table += line;
      std::snprintf(line, sizeof line, ",\"threads\":%u,\"parallel_stages_seconds\":%.6f", cpu_threads, cpu_parallel);
      json += line;
    }
    json += "}";
  }
  if (!gpu_rounds.empty()) {
    double (*const part_of[10])(const Round&) = {
        [](const Round& x) { return x.prepare; }, [](const Round& x) { return x.upload; },
        [](const Round& x) { return x.order; },   [](const Round& x) { return x.frame; },
        [](const Round& x) { return x.measure; }, [](const Round& x) { return x.offsets; },
        [](const Round& x) { return x.encode; },  [](const Round& x) { return x.lsda; },
        [](const Round& x) { return x.download; }, [](const Round& x) { return x.cut; }};
    double parts[10];
    for (int k = 0; k < 10; ++k) parts[k] = warm(gpu_rounds, part_of[k]);
    const char* names[10] = {"prepare (host)", "upload", "order+select", "uses+frame", "measure", "offsets+scans",
                             "encode", "exception tables", "download", "cut (host)"};
    const char* keys[10] = {"prepare", "upload", "order", "frame", "measure", "offsets", "encode", "exception_tables",
                            "download", "cut"};
    // The GPU's throughput is the wall time of its phase (streams overlapped), not
    // the sum of the steps' busy times.
    gpu_stages = warm(gpu_rounds, [](const Round& x) { return x.wall; });
    double busy = warm(gpu_rounds, [](const Round& x) { return x.stages(); });
    double elf = warm(gpu_rounds, [](const Round& x) { return x.elf; });
    double rate = instructions / std::max(1e-12, gpu_stages);
    // The measure of GPU emission: upload, kernels and download, from the
    // first batch's upload to the last one's download (device clock), warm rounds.
    double span = warm(gpu_rounds, [](const Round& x) { return x.span(); });
    double span_rate = instructions / std::max(1e-12, span);
    std::snprintf(line, sizeof line,
                  "cuda (%s, NUMA node %d%s), %zu streams, %zu batches (>= %llu instr), instructions %s: context %.3f s; "
                  "round 1 %.4f s (warm-up, not counted)\n",
                  gpu_name.c_str(), gpu->numa_node(), gpu->on_gpu_node() ? ", threads bound to it" : "", executors.size(),
                  batches.size(), static_cast<unsigned long long>(batch_instructions),
                  order_by_opcode ? "by opcode" : "in file order", context_seconds, gpu_rounds[0].wall);
    table += line;
    std::snprintf(line, sizeof line, "  %llu launches a round; busy time per step, summed over streams:\n",
                  static_cast<unsigned long long>(gpu_rounds.back().launches));
    table += line;
    json += ",\"gpu\":{\"device\":\"" + gpu_name + "\",\"numa_node\":" + std::to_string(gpu->numa_node()) +
            ",\"threads_on_gpu_node\":" + (gpu->on_gpu_node() ? "true" : "false") +
            ",\"streams\":" + std::to_string(executors.size()) + ",\"batches\":" + std::to_string(batches.size()) +
            ",\"batch_instructions\":" + std::to_string(batch_instructions) +
            ",\"order_by_opcode\":" + (order_by_opcode ? "true" : "false") +
            ",\"launches_per_round\":" + std::to_string(gpu_rounds.back().launches);
    for (int k = 0; k < 10; ++k) {
      std::snprintf(line, sizeof line, "    %-18s %.5f s\n", names[k], parts[k]);
      table += line;
      std::snprintf(line, sizeof line, ",\"%s_busy_seconds\":%.6f", keys[k], parts[k]);
      json += line;
    }
    std::snprintf(line, sizeof line,
                  "  GPU phase (prepare, upload, kernels, download, cut; wall): %.4f s: %.2f M instr/s, %.0f modules/s "
                  "(device busy %.4f s); ELF writing afterwards on one CPU thread %.4f s\n",
                  gpu_stages, rate / 1e6, modules.size() / std::max(1e-12, gpu_stages), busy, elf);
    table += line;
    std::snprintf(line, sizeof line,
                  ",\"wall_seconds\":%.6f,\"busy_seconds\":%.6f,\"elf_seconds\":%.6f,\"instructions_per_second\":%.1f,"
                  "\"modules_per_second\":%.1f,\"context_seconds\":%.6f,\"first_round_seconds\":%.6f",
                  gpu_stages, busy, elf, rate, modules.size() / std::max(1e-12, gpu_stages), context_seconds,
                  gpu_rounds[0].wall);
    json += line;
    std::snprintf(line, sizeof line,
                  "  device span (first upload to last download, streams overlapped): %.4f s: %.2f M instr/s\n", span,
                  span_rate / 1e6);
    table += line;
    std::snprintf(line, sizeof line, ",\"span_seconds\":%.6f,\"span_instructions_per_second\":%.1f", span, span_rate);
    json += line;
    if (cpu_stages > 0) {
      std::snprintf(line, sizeof line, "  %.1fx stamp's CPU executor (one thread) over the GPU phase, %.1fx over the span\n",
                    cpu_stages / std::max(1e-12, gpu_stages), cpu_stages / std::max(1e-12, span));
      table += line;
      if (cpu_parallel > 0) {
        std::snprintf(line, sizeof line, "  %.1fx stamp's CPU executor on %u threads over the GPU phase, %.1fx over the span\n",
                      cpu_parallel / std::max(1e-12, gpu_stages), cpu_threads, cpu_parallel / std::max(1e-12, span));
        table += line;
      }
    }
    if (llvm_rate > 0) {
      std::snprintf(line, sizeof line, "  %.1fx llvm -O0 on one core over the GPU phase, %.1fx over the span (llvm %.3f M instr/s, from %s)\n",
                    rate / llvm_rate, span_rate / llvm_rate, llvm_rate / 1e6, baseline_path.c_str());
      table += line;
      std::snprintf(line, sizeof line, ",\"speedup_vs_llvm\":%.3f,\"span_speedup_vs_llvm\":%.3f", rate / llvm_rate,
                    span_rate / llvm_rate);
      json += line;
    }
    json += "}";
  }
  if (llvm_rate > 0 && cpu_stages > 0) {
    std::snprintf(line, sizeof line, "cpu stages: %.1fx llvm -O0 on one core\n",
                  instructions / std::max(1e-12, cpu_stages) / llvm_rate);
    table += line;
  }
  std::snprintf(line, sizeof line, "objects: %zu of %zu differ from the CPU executor's\n", mismatches,
                modules.size() * (1 + static_cast<size_t>(rounds) * ((gpu ? 1 : 0) + (want_cpu ? 1 : 0))));
  table += line;
  std::snprintf(line, sizeof line, "  (each module once cut from its batch, %zu batches, on the CPU executor; then every round)\n",
                batches.size());
  table += line + mismatch_list;
  std::snprintf(line, sizeof line, ",\"mismatches\":%zu}\n", mismatches);
  json += line;
  std::fputs(table.c_str(), stdout);
  if (!json_path.empty()) write_file_atomic(json_path, json);
  return mismatches ? kExitFailed : kExitOk;
}

}  // namespace kiln

int main(int argc, char** argv) { return kiln::run_tool("kiln-replay-flat", kiln::replay_flat_main, argc, argv); }
