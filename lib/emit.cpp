#include "emit.h"

#include <llvm/Config/llvm-config.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "hash.h"
#include "json.h"
#include "progress.h"
#include "timeutil.h"

namespace kiln {

std::string receipt_json(const ReceiptInput& in, const EmitResult& r, const std::string& error) {
  JsonWriter w;
  w.begin_object()
      .field("v", kReceiptSchemaVersion).field("id", in.id).field("input", in.label)
      .field("backend", in.backend).field("profile", in.profile).field("llvm", LLVM_VERSION_STRING)
      .field("origin", in.origin).field("time", iso8601_now())
      .field("ok", error.empty());
  if (!error.empty()) w.field("error", error);
  if (error.empty()) w.field("object_xxh3", xxh3_128_hex(r.object)).field("object_bytes", static_cast<uint64_t>(r.object.size()));
  w.key("stages").begin_object()
      .field("read", r.stages.read).field("parse", r.stages.parse).field("verify", r.stages.verify)
      .field("codegen", r.stages.codegen).field("write", r.stages.write)
      .field("flat_export", r.stages.flat_export).field("fallback", r.stages.fallback).field("combine", r.stages.combine)
      .end_object();
  w.key("functions").begin_object().field("stamp", r.counts.functions_stamp).field("llvm", r.counts.functions_llvm).end_object();
  w.key("instructions").begin_object().field("stamp", r.counts.instructions_stamp).field("llvm", r.counts.instructions_llvm).end_object();
  w.end_object();
  return w.str();
}

EmitFileResult emit_file(const std::string& in_path, const std::string& out_path, const std::string& backend_spec,
                         Profile profile) {
  auto backend = make_backend(backend_spec, profile);
  Stopwatch clock;
  std::string bytes = read_file(in_path);
  double read_s = clock.lap();
  EmitFileResult out;
  out.result = backend->emit(bytes, in_path);
  out.result.stages.read += read_s;
  clock.lap();
  write_file_atomic(out_path, out.result.object);
  out.result.stages.write += clock.lap();
  out.receipt = receipt_json({xxh3_128_hex(bytes), in_path, backend->name(), profile_name(profile), "kiln-emit"}, out.result);
  return out;
}

CorpusEmitSummary emit_corpus(const std::string& corpus_dir, const std::string& out_dir,
                              const std::string& backend_spec, Profile profile, unsigned jobs) {
  Corpus corpus = Corpus::open(corpus_dir);
  std::vector<ModuleRecord> modules = corpus.modules();
  make_dirs(out_dir);
  make_backend(backend_spec, profile);  // reject a bad spec before starting threads
  CorpusEmitSummary summary;
  summary.modules = modules.size();
  std::atomic<size_t> next{0}, emitted{0}, failed{0};
  std::mutex first_error_mutex;
  std::string first_error;
  Progress progress("kiln-emit", modules.size());
  Stopwatch total;
  std::string receipts_path = out_dir + "/receipts.jsonl";
  auto worker = [&] {
    auto backend = make_backend(backend_spec, profile);
    for (size_t i; (i = next.fetch_add(1)) < modules.size();) {
      const ModuleRecord& m = modules[i];
      std::string label = corpus_dir + "/" + m.id;
      EmitResult r;
      std::string error;
      try {
        Stopwatch clock;
        std::string bytes = corpus.load_blob(m.id);
        double read_s = clock.lap();
        r = backend->emit(bytes, label);
        r.stages.read += read_s;
        clock.lap();
        write_file_atomic(out_dir + "/" + m.id + ".o", r.object);
        r.stages.write += clock.lap();
        emitted++;
      } catch (const std::exception& e) {
        error = e.what();
        failed++;
        std::lock_guard<std::mutex> lock(first_error_mutex);
        if (first_error.empty()) first_error = error;
      }
      std::string line = receipt_json({m.id, label, backend->name(), profile_name(profile), "kiln-emit"}, r, error);
      corpus.append_receipt(line);
      append_line_locked(receipts_path, line);
      progress.advance();
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::max(1u, jobs); ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  progress.finish();
  summary.emitted = emitted;
  summary.failed = failed;
  summary.seconds = total.seconds();
  if (!first_error.empty()) std::fprintf(stderr, "kiln-emit: first failure: %s\n", first_error.c_str());
  return summary;
}

}  // namespace kiln
