#include "replay_flat.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include "direct_export.h"
#include "error.h"
#include "flat_file.h"
#include "fs.h"
#include "json_writer.h"
#include "parallel.h"
#include "stamp_batch.h"
#include "stamp_cpu.h"
#include "stamp_gpu_pool.h"
#include "stamp_object.h"
#include "stats.h"
#include "timeutil.h"

namespace kiln {

namespace {

struct Module {
  std::string path, source;
  FlatModuleData flat;
  std::string cpu_object;  // the oracle
};

void add(ReplayFlatRound& r, const StampGpuTimes& t) {
  r.prepare += t.prepare, r.upload += t.upload, r.order += t.order, r.frame += t.frame, r.measure += t.measure;
  r.offsets += t.offsets, r.encode += t.encode, r.lsda += t.lsda, r.download += t.download, r.cut += t.cut;
  r.launches += t.launches;
  r.span_begin = std::min(r.span_begin, t.span_begin), r.span_end = std::max(r.span_end, t.span_end);
}
void add(ReplayFlatRound& r, const ReplayFlatRound& s) {
  r.prepare += s.prepare, r.upload += s.upload, r.order += s.order, r.frame += s.frame, r.measure += s.measure;
  r.offsets += s.offsets, r.encode += s.encode, r.lsda += s.lsda, r.download += s.download, r.cut += s.cut;
  r.launches += s.launches;
  r.span_begin = std::min(r.span_begin, s.span_begin), r.span_end = std::max(r.span_end, s.span_end);
}

void note_mismatch(ReplayFlatResult& result, const std::string& line) {
  if (result.mismatches++ < 10) result.mismatch_list += line;
}

// --- The work ---

// The files the arguments name: each FILE as it is; in each DIR, every *.flat and
// every *.bc, in name order, and a directory's subdirectories too (a kiln corpus keeps
// its bitcode under blobs/AB/ID.bc).
std::vector<std::string> list_directory(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (!d) throw KilnError(kExitIo, dir, std::string("cannot list: ") + std::strerror(errno));
  while (dirent* e = readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.push_back(e->d_name);
  closedir(d);
  return names;
}

void collect_inputs(const std::string& dir, std::vector<std::string>& files, int depth) {
  std::vector<std::string> found, subdirs;
  for (const std::string& name : list_directory(dir)) {
    std::string path = dir + "/" + name;
    bool flat = name.size() > 5 && name.compare(name.size() - 5, 5, ".flat") == 0;
    bool bc = name.size() > 3 && name.compare(name.size() - 3, 3, ".bc") == 0;
    if (flat || bc) found.push_back(path);
    else if (depth < 4 && is_directory(path)) subdirs.push_back(path);
  }
  std::sort(found.begin(), found.end());
  std::sort(subdirs.begin(), subdirs.end());
  files.insert(files.end(), found.begin(), found.end());
  for (const std::string& d : subdirs) collect_inputs(d, files, depth + 1);
}

std::vector<std::string> inputs_named(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  for (const std::string& a : args) {
    if (is_directory(a)) collect_inputs(a, files, 0);
    else files.push_back(a);
  }
  return files;
}

// The tag local symbols are renamed with: a corpus blob's name is its id (xxh3-128 of
// its bytes, the tag the other tools use); any other file gets a fixed one.
std::string tag_for(const std::string& path) {
  std::string name = path.substr(path.rfind('/') + 1);
  std::string stem = name.substr(0, name.find('.'));
  bool id = stem.size() == 32 && stem.find_first_not_of("0123456789abcdef") == std::string::npos;
  return id ? stem.substr(0, 12) : "direct";
}

// A bitcode file through the direct reader: its stamp functions as a flat module (the
// functions it leaves to LLVM are not replayed); false when the reader declines it.
bool read_bitcode_module(const std::string& path, const std::string& bytes, Module& m, ReplayFlatResult& result) {
  DirectExport d = export_direct(bytes, path, tag_for(path));
  result.bitcode_modules++;
  result.read_seconds += d.read_seconds + d.export_seconds;
  if (std::string problem = target_problem(d.triple); !problem.empty()) throw KilnError(kExitBadInput, path, problem);
  if (!d.declined.empty()) {
    result.bitcode_declined++;
    return false;
  }
  m.flat = std::move(d.flat);
  m.source = d.source_filename;
  return true;
}

// Every file read and checked, and the oracle: the CPU executor's objects (also the
// CPU rounds' reference).
std::vector<Module> load_modules(const std::vector<std::string>& files, ReplayFlatResult& result) {
  std::vector<Module> modules;
  for (const std::string& path : files) {
    Module m;
    m.path = path;
    std::string bytes = read_file(path);
    if (bytes.compare(0, 8, "KILNFLAT") == 0) m.flat = read_flat_file(bytes, path, &m.source);
    else if (!read_bitcode_module(path, bytes, m, result)) continue;
    result.instructions += m.flat.insts.size();
    modules.push_back(std::move(m));
  }
  for (Module& m : modules) m.cpu_object = emit_flat_module(m.flat, m.source);
  return modules;
}

// The batches on the CPU executor first: each module cut from its batch must give the
// oracle's object (what the GPU is then held to as well).
void check_cpu_batches(const std::vector<Module>& modules, const std::vector<StampGpuBatch>& batches,
                       ReplayFlatResult& result) {
  for (const StampGpuBatch& b : batches) {
    std::vector<StampOutput> cut = run_stamp_cpu_batch(b.views.data(), b.views.size(), 1);
    for (size_t k = 0; k < b.modules.size(); ++k) {
      const Module& m = modules[b.modules[k]];
      if (write_stamp_object(stamp_object_parts(m.flat, cut[k], m.source).view, m.source) != m.cpu_object)
        note_mismatch(result, "  cpu batch: " + m.path + "\n");
    }
  }
}

// The GPU phase (wall): every stream's thread takes the next batch. Then ELF writing
// on the host's threads, and the comparison with the oracle.
ReplayFlatRound gpu_round(StampGpuPool& pool, const std::vector<Module>& modules,
                          const std::vector<StampGpuBatch>& batches, int r, ReplayFlatResult& result) {
  std::vector<StampOutput> outputs(modules.size());
  std::vector<ReplayFlatRound> per_stream(pool.size());
  ReplayFlatRound g;
  try {
    g.wall = pool.run(batches,
                      [&](size_t b, unsigned k, std::vector<StampOutput>& cut) {
                        for (size_t j = 0; j < cut.size(); ++j) outputs[batches[b].modules[j]] = std::move(cut[j]);
                        add(per_stream[k], pool[k].last_times());
                      })
                 .wall;
  } catch (const std::exception& e) {
    throw std::runtime_error(e.what());  // a failed batch is an internal error here, whatever it threw
  }
  for (const ReplayFlatRound& p : per_stream) add(g, p);
  // The objects after the GPU phase, spread over the host's threads (the GPU machine has
  // 16 cores): ELF writing is host work that a build through the GPU pays on top.
  Stopwatch elf;
  std::mutex mismatch_mutex;
  parallel_for(modules.size(), hardware_threads(), [&](size_t i) {
    std::string object = write_stamp_object(stamp_object_parts(modules[i].flat, outputs[i], modules[i].source).view, modules[i].source);
    if (object != modules[i].cpu_object) {
      std::lock_guard<std::mutex> lock(mismatch_mutex);
      note_mismatch(result, "  round " + std::to_string(r) + ": " + modules[i].path + "\n");
    }
  });
  g.elf = elf.seconds();
  return g;
}

// The CPU executor on one thread, module after module, each object compared with the
// oracle; then, with cpu_threads above 1, every module's stages with all threads busy
// (the strongest CPU side).
ReplayFlatRound cpu_round(const std::vector<Module>& modules, unsigned cpu_threads, int r, ReplayFlatResult& result) {
  ReplayFlatRound c;
  Stopwatch wall;
  for (const Module& m : modules) {
    StampOutput code = run_stamp_cpu(m.flat.view(), 1);
    c.frame += code.frame, c.measure += code.measure, c.offsets += code.offsets, c.encode += code.encode;
    c.lsda += code.lsda_seconds;
    Stopwatch elf;
    std::string object = write_stamp_object(stamp_object_parts(m.flat, code, m.source).view, m.source);
    c.elf += elf.seconds();
    if (object != m.cpu_object) note_mismatch(result, "  cpu round " + std::to_string(r) + ": " + m.path + "\n");
  }
  c.wall = wall.seconds();
  if (cpu_threads > 1) {
    Stopwatch parallel;
    parallel_for(modules.size(), cpu_threads, [&](size_t i) { run_stamp_cpu(modules[i].flat.view(), 1); });
    c.parallel_wall = parallel.seconds();
  }
  return c;
}

// --- The medians ---

// The median of f over the warm rounds (2..N); 0 with one round, which has none.
double warm(const std::vector<ReplayFlatRound>& rs, double (*f)(const ReplayFlatRound&)) {
  std::vector<double> v;
  for (size_t i = 1; i < rs.size(); ++i) v.push_back(f(rs[i]));
  return v.empty() ? 0 : median(v);
}

// One number from a kiln-replay report, found by its key.
double number_in(const std::string& text, const std::string& key) {
  size_t at = text.find("\"" + key + "\"");
  if (at == std::string::npos) return 0;
  at = text.find(':', at);
  return at == std::string::npos ? 0 : std::strtod(text.c_str() + at + 1, nullptr);
}

void take_medians(ReplayFlatResult& r) {
  using R = const ReplayFlatRound&;
  if (!r.cpu_rounds.empty()) {
    r.cpu_stages = warm(r.cpu_rounds, [](R x) { return x.stages(); });
    r.cpu_elf = warm(r.cpu_rounds, [](R x) { return x.elf; });
    if (r.options.cpu_threads > 1) r.cpu_parallel = warm(r.cpu_rounds, [](R x) { return x.parallel_wall; });
  }
  if (!r.gpu_rounds.empty()) {
    double (*const step[kReplayFlatGpuSteps])(R) = {[](R x) { return x.prepare; },  [](R x) { return x.upload; },
                                                    [](R x) { return x.order; },    [](R x) { return x.frame; },
                                                    [](R x) { return x.measure; },  [](R x) { return x.offsets; },
                                                    [](R x) { return x.encode; },   [](R x) { return x.lsda; },
                                                    [](R x) { return x.download; }, [](R x) { return x.cut; }};
    for (int k = 0; k < kReplayFlatGpuSteps; ++k) r.gpu_steps[k] = warm(r.gpu_rounds, step[k]);
    // The GPU's throughput is the wall time of its phase (streams overlapped), not
    // the sum of the steps' busy times.
    r.gpu_wall = warm(r.gpu_rounds, [](R x) { return x.wall; });
    r.gpu_busy = warm(r.gpu_rounds, [](R x) { return x.stages(); });
    r.gpu_elf = warm(r.gpu_rounds, [](R x) { return x.elf; });
    // GPU emission by itself: upload, kernels and download, from the first batch's
    // upload to the last one's download (device clock).
    r.gpu_span = warm(r.gpu_rounds, [](R x) { return x.span(); });
  }
}

}  // namespace

ReplayFlatResult run_replay_flat(const ReplayFlatOptions& options) {
  ReplayFlatResult result;
  result.options = options;
  std::vector<std::string> files = inputs_named(options.inputs);
  if (files.empty()) throw KilnError(kExitUsage, "", "no flat IR or bitcode files given (see --help)");
  const std::vector<Module> modules = load_modules(files, result);
  result.modules = modules.size();
  std::vector<StampGpuBatch> batches;
  for (size_t i = 0; i < modules.size(); ++i)
    add_to_stamp_batches(batches, i, modules[i].flat.view(), options.batch_instructions);
  result.batches = batches.size();
  check_cpu_batches(modules, batches, result);

  // One executor per stream, each driven by its own host thread: while one stream
  // uploads a batch, another runs its kernels and a third downloads.
  std::unique_ptr<StampGpuPool> pool;
  if (options.cuda) {
    Stopwatch clock;
    pool = std::make_unique<StampGpuPool>(options.streams);
    result.context_seconds = clock.seconds();
    pool->set_order_by_opcode(options.order_by_opcode);
  }
  for (int r = 1; r <= options.rounds; ++r) {
    // The GPU first in each round, then the CPU: interleaved, as kiln-replay does.
    if (pool) result.gpu_rounds.push_back(gpu_round(*pool, modules, batches, r, result));
    if (options.cpu) result.cpu_rounds.push_back(cpu_round(modules, options.cpu_threads, r, result));
  }
  if (pool) {
    result.gpu_name = (*pool)[0].device_name();
    result.numa_node = (*pool)[0].numa_node();
    result.on_gpu_node = (*pool)[0].on_gpu_node();
    result.streams = pool->size();
  }
  take_medians(result);
  if (!options.baseline_path.empty())
    result.llvm_rate = number_in(read_file(options.baseline_path), "llvm_instructions_per_core_second");
  result.objects =
      modules.size() * (1 + static_cast<size_t>(options.rounds) * ((pool ? 1 : 0) + (options.cpu ? 1 : 0)));
  return result;
}

// --- The reports ---

namespace {

// printf into `out`, one line of at most 511 bytes.
[[gnu::format(printf, 2, 3)]] void appendf(std::string& out, const char* format, ...) {
  char line[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  out += line;
}

// A JSON number with `digits` decimals.
std::string fixed(double v, int digits) {
  std::string text;
  appendf(text, "%.*f", digits, v);
  return text;
}

double per_second(double n, double seconds) { return n / std::max(1e-12, seconds); }

const char* const kStepNames[kReplayFlatGpuSteps] = {"prepare (host)", "upload",           "order+select",
                                                     "uses+frame",     "measure",          "offsets+scans",
                                                     "encode",         "exception tables", "download",
                                                     "cut (host)"};
const char* const kStepKeys[kReplayFlatGpuSteps] = {"prepare",  "upload",  "order",  "frame",
                                                    "measure",  "offsets", "encode", "exception_tables",
                                                    "download", "cut"};

void table_cpu(const ReplayFlatResult& r, std::string& t) {
  appendf(t, "cpu (one thread)   stages %.4f s  %7.2f M instr/s  ELF writing %.4f s\n", r.cpu_stages,
          per_second(r.instructions, r.cpu_stages) / 1e6, r.cpu_elf);
  if (r.options.cpu_threads > 1)
    appendf(t, "cpu (%u threads)   stages %.4f s  %7.2f M instr/s (wall, modules in parallel)\n", r.options.cpu_threads,
            r.cpu_parallel, per_second(r.instructions, r.cpu_parallel) / 1e6);
}

void table_gpu(const ReplayFlatResult& r, std::string& t) {
  const ReplayFlatOptions& o = r.options;
  const double rate = per_second(r.instructions, r.gpu_wall), span_rate = per_second(r.instructions, r.gpu_span);
  appendf(t,
          "cuda (%s, NUMA node %d%s), %zu streams, %zu batches (>= %llu instr), instructions %s: context %.3f s; "
          "round 1 %.4f s (warm-up, not counted)\n",
          r.gpu_name.c_str(), r.numa_node, r.on_gpu_node ? ", threads bound to it" : "", r.streams, r.batches,
          static_cast<unsigned long long>(o.batch_instructions), o.order_by_opcode ? "by opcode" : "in file order",
          r.context_seconds, r.gpu_rounds[0].wall);
  appendf(t, "  %llu launches a round; busy time per step, summed over streams:\n",
          static_cast<unsigned long long>(r.gpu_rounds.back().launches));
  for (int k = 0; k < kReplayFlatGpuSteps; ++k) appendf(t, "    %-18s %.5f s\n", kStepNames[k], r.gpu_steps[k]);
  appendf(t,
          "  GPU phase (prepare, upload, kernels, download, cut; wall): %.4f s: %.2f M instr/s, %.0f modules/s "
          "(device busy %.4f s); ELF writing afterwards on %u host threads %.4f s\n",
          r.gpu_wall, rate / 1e6, per_second(r.modules, r.gpu_wall), r.gpu_busy, hardware_threads(), r.gpu_elf);
  appendf(t, "  device span (first upload to last download, streams overlapped): %.4f s: %.2f M instr/s\n", r.gpu_span,
          span_rate / 1e6);
  if (r.cpu_stages > 0) {
    appendf(t, "  %.1fx stamp's CPU executor (one thread) over the GPU phase, %.1fx over the span\n",
            r.cpu_stages / std::max(1e-12, r.gpu_wall), r.cpu_stages / std::max(1e-12, r.gpu_span));
    if (r.cpu_parallel > 0)
      appendf(t, "  %.1fx stamp's CPU executor on %u threads over the GPU phase, %.1fx over the span\n",
              r.cpu_parallel / std::max(1e-12, r.gpu_wall), o.cpu_threads,
              r.cpu_parallel / std::max(1e-12, r.gpu_span));
  }
  if (r.llvm_rate > 0)
    appendf(t, "  %.1fx llvm -O0 on one core over the GPU phase, %.1fx over the span (llvm %.3f M instr/s, from %s)\n",
            rate / r.llvm_rate, span_rate / r.llvm_rate, r.llvm_rate / 1e6, o.baseline_path.c_str());
}

void json_cpu(const ReplayFlatResult& r, JsonWriter& j) {
  j.key("cpu").begin_object();
  j.key("stages_seconds").raw(fixed(r.cpu_stages, 6));
  j.key("elf_seconds").raw(fixed(r.cpu_elf, 6));
  j.key("instructions_per_second").raw(fixed(per_second(r.instructions, r.cpu_stages), 1));
  if (r.options.cpu_threads > 1) {
    j.field("threads", r.options.cpu_threads);
    j.key("parallel_stages_seconds").raw(fixed(r.cpu_parallel, 6));
  }
  j.end_object();
}

void json_gpu(const ReplayFlatResult& r, JsonWriter& j) {
  const double rate = per_second(r.instructions, r.gpu_wall), span_rate = per_second(r.instructions, r.gpu_span);
  j.key("gpu").begin_object();
  j.field("device", r.gpu_name).field("numa_node", r.numa_node).field("threads_on_gpu_node", r.on_gpu_node);
  j.field("streams", uint64_t(r.streams)).field("batches", uint64_t(r.batches));
  j.field("batch_instructions", r.options.batch_instructions).field("order_by_opcode", r.options.order_by_opcode);
  j.field("launches_per_round", r.gpu_rounds.back().launches);
  for (int k = 0; k < kReplayFlatGpuSteps; ++k)
    j.key(std::string(kStepKeys[k]) + "_busy_seconds").raw(fixed(r.gpu_steps[k], 6));
  j.key("wall_seconds").raw(fixed(r.gpu_wall, 6));
  j.key("busy_seconds").raw(fixed(r.gpu_busy, 6));
  j.key("elf_seconds").raw(fixed(r.gpu_elf, 6));
  j.key("instructions_per_second").raw(fixed(rate, 1));
  j.key("modules_per_second").raw(fixed(per_second(r.modules, r.gpu_wall), 1));
  j.key("context_seconds").raw(fixed(r.context_seconds, 6));
  j.key("first_round_seconds").raw(fixed(r.gpu_rounds[0].wall, 6));
  j.key("span_seconds").raw(fixed(r.gpu_span, 6));
  j.key("span_instructions_per_second").raw(fixed(span_rate, 1));
  if (r.llvm_rate > 0) {
    j.key("speedup_vs_llvm").raw(fixed(rate / r.llvm_rate, 3));
    j.key("span_speedup_vs_llvm").raw(fixed(span_rate / r.llvm_rate, 3));
  }
  j.end_object();
}

}  // namespace

std::string replay_flat_table(const ReplayFlatResult& r) {
  std::string t;
  const size_t from_bitcode = r.bitcode_modules - r.bitcode_declined;
  appendf(t, "%zu modules (%zu from flat IR files, %zu from bitcode), %llu IR instructions, %d rounds (medians of "
          "rounds 2..%d)\n", r.modules, r.modules - from_bitcode, from_bitcode,
          static_cast<unsigned long long>(r.instructions), r.options.rounds, r.options.rounds);
  if (r.bitcode_modules)
    appendf(t, "bitcode: %zu modules read directly in %.3f s (no LLVM), %zu declined by the reader and skipped\n",
            r.bitcode_modules - r.bitcode_declined, r.read_seconds, r.bitcode_declined);
  if (!r.cpu_rounds.empty()) table_cpu(r, t);
  if (!r.gpu_rounds.empty()) table_gpu(r, t);
  if (r.llvm_rate > 0 && r.cpu_stages > 0)
    appendf(t, "cpu stages: %.1fx llvm -O0 on one core\n", per_second(r.instructions, r.cpu_stages) / r.llvm_rate);
  appendf(t, "objects: %zu of %zu differ from the CPU executor's\n", r.mismatches, r.objects);
  appendf(t, "  (each module once cut from its batch, %zu batches, on the CPU executor; then every round)\n",
          r.batches);
  return t + r.mismatch_list;
}

std::string replay_flat_json(const ReplayFlatResult& r) {
  JsonWriter j;
  j.begin_object().field("schema", "kiln-replay-flat").field("v", 1);
  j.field("modules", uint64_t(r.modules)).field("instructions", r.instructions).field("rounds", r.options.rounds);
  j.field("bitcode_modules", uint64_t(r.bitcode_modules))
      .field("bitcode_declined", uint64_t(r.bitcode_declined))
      .field("bitcode_read_seconds", r.read_seconds);
  if (!r.cpu_rounds.empty()) json_cpu(r, j);
  if (!r.gpu_rounds.empty()) json_gpu(r, j);
  j.field("mismatches", uint64_t(r.mismatches)).end_object();
  return j.str() + "\n";
}

}  // namespace kiln
