#include "emit.h"

#include <unistd.h>

#include <sys/stat.h>

#include <llvm/Config/llvm-config.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "hash.h"
#include "isolate.h"
#include "json.h"
#include "progress.h"
#include "timeutil.h"

namespace kiln {

std::string receipt_json(const ReceiptInput& in, const EmitResult& r, const std::string& error) {
  JsonWriter w;
  w.begin_object()
      .field("v", kReceiptSchemaVersion)
      .field("id", in.id)
      .field("input", in.label)
      .field("backend", in.backend)
      .field("profile", in.profile)
      .field("llvm", LLVM_VERSION_STRING)
      .field("origin", in.origin)
      .field("time", iso8601_now())
      .field("ok", error.empty());
  if (!error.empty()) w.field("error", error);
  if (error.empty())
    w.field("object_xxh3", xxh3_128_hex(r.object)).field("object_bytes", static_cast<uint64_t>(r.object.size()));
  w.key("stages")
      .begin_object()
      .field("read", r.stages.read)
      .field("parse", r.stages.parse)
      .field("verify", r.stages.verify)
      .field("codegen", r.stages.codegen)
      .field("write", r.stages.write)
      .field("bitcode_read", r.stages.bitcode_read)
      .field("flat_export", r.stages.flat_export)
      .field("fallback", r.stages.fallback)
      .field("combine", r.stages.combine)
      .end_object();
  w.key("functions")
      .begin_object()
      .field("stamp", r.counts.functions_stamp)
      .field("llvm", r.counts.functions_llvm)
      .end_object();
  w.key("instructions")
      .begin_object()
      .field("stamp", r.counts.instructions_stamp)
      .field("llvm", r.counts.instructions_llvm)
      .end_object();
  if (!r.cache.empty()) w.field("cache", r.cache);
  if (!r.selection.empty()) w.field("selection", r.selection);
  if (!r.test_faults.empty()) w.string_array("test_fault", r.test_faults);
  if (!r.service.device.empty() || !r.service.lost.empty()) {
    w.key("service").begin_object();
    if (!r.service.device.empty())
      w.field("device", r.service.device).field("batch", r.service.batch).field("batch_modules", r.service.batch_modules);
    if (!r.service.lost.empty()) w.field("lost", r.service.lost);
    if (!r.service.check.empty()) w.field("check", r.service.check);
    w.end_object();
  }
  if (!r.reader.route.empty()) {
    w.key("reader").begin_object().field("route", r.reader.route);
    if (!r.reader.reason.empty()) w.field("reason", r.reader.reason);
    w.end_object();
  }
  w.end_object();
  return w.str();
}

EmitFileResult emit_file(const std::string& in_path, const std::string& out_path, const std::string& backend_spec,
                         Profile profile) {
  Stopwatch clock;
  std::string bytes = read_file(in_path);
  return emit_bytes(bytes, in_path, out_path, backend_spec, profile, clock.lap());
}

EmitFileResult emit_bytes(const std::string& bytes, const std::string& in_path, const std::string& out_path,
                          const std::string& backend_spec, Profile profile, double read_seconds) {
  auto backend = make_backend(backend_spec, profile);
  Stopwatch clock;
  EmitFileResult out;
  out.result = backend->emit(bytes, in_path);
  out.result.stages.read += read_seconds;
  clock.lap();
  write_file_atomic(out_path, out.result.object);
  out.result.stages.write += clock.lap();
  out.receipt =
      receipt_json({xxh3_128_hex(bytes), in_path, backend->name(), profile_name(profile), "kiln-emit"}, out.result);
  return out;
}

std::string emit_file_isolated(const std::string& in_path, const std::string& out_path, const std::string& backend_spec,
                               Profile profile, const std::string* bytes_read) {
  make_backend(backend_spec, profile);  // a bad spec is a usage error, not the input's
  // The worker writes the object (atomically): a crash leaves nothing behind.
  return run_isolated_one(in_path, [&] {
    return bytes_read ? emit_bytes(*bytes_read, in_path, out_path, backend_spec, profile).receipt
                      : emit_file(in_path, out_path, backend_spec, profile).receipt;
  });
}

namespace {

// What a worker sends back for one module: "+RECEIPT" or "-ERROR\nRECEIPT".
std::string emit_one_module(Backend& backend, const Corpus& corpus, const ModuleRecord& m, const std::string& label,
                            const std::string& out_dir, Profile profile) {
  EmitResult r;
  std::string error;
  try {
    Stopwatch clock;
    std::string bytes = corpus.load_blob(m.id);
    double read_s = clock.lap();
    r = backend.emit(bytes, label);
    r.stages.read += read_s;
    clock.lap();
    write_file_atomic(out_dir + "/" + m.id + ".o", r.object);
    r.stages.write += clock.lap();
  } catch (const std::exception& e) {
    error = e.what();
    // No object of an earlier run stays in DIR beside this module's failed receipt.
    ::unlink((out_dir + "/" + m.id + ".o").c_str());
  }
  std::string receipt = receipt_json({m.id, label, backend.name(), profile_name(profile), "kiln-emit"}, r, error);
  return error.empty() ? "+" + receipt : "-" + error + "\n" + receipt;
}

}  // namespace

CorpusEmitSummary emit_corpus(const std::string& corpus_dir, const std::string& out_dir,
                              const std::string& backend_spec, Profile profile, unsigned jobs, Shard shard) {
  Corpus corpus = Corpus::open(corpus_dir);
  std::vector<ModuleRecord> modules;
  for (auto& m : corpus.modules())
    if (in_shard(m.id, shard)) modules.push_back(std::move(m));
  make_dirs(out_dir);
  std::string backend_name = make_backend(backend_spec, profile)->name();  // reject a bad spec before the workers
  CorpusEmitSummary summary;
  summary.modules = modules.size();
  std::string first_error;
  Progress progress("kiln-emit", modules.size());
  Stopwatch total;
  std::string receipts_path = out_dir + "/receipts.jsonl";
  // --out naming the corpus itself: its receipts file is the corpus's, written once.
  struct stat out_st {
  }, corpus_st{};
  const bool out_is_corpus = ::stat(out_dir.c_str(), &out_st) == 0 && ::stat(corpus_dir.c_str(), &corpus_st) == 0 &&
      out_st.st_dev == corpus_st.st_dev && out_st.st_ino == corpus_st.st_ino;
  auto label = [&](size_t i) { return corpus_dir + "/" + modules[i].id; };
  // Modules are emitted in worker processes (each makes its back end once), so that a
  // module that crashes LLVM or hits one of its fatal errors fails alone. Receipts are
  // written here, by one thread: an error writing them stops the run with its status.
  std::unique_ptr<Backend> backend;
  auto job = [&](size_t i) {
    if (!backend) backend = make_backend(backend_spec, profile);
    return emit_one_module(*backend, corpus, modules[i], label(i), out_dir, profile);
  };
  auto done = [&](size_t i, IsolatedResult result) {
    std::string error, line;
    if (result.ok && result.text.rfind('+', 0) == 0) {
      line = result.text.substr(1);
    } else if (result.ok) {
      // The receipt is one JSON line (its strings escape newlines); the error before it
      // may hold several (a cmd: template's).
      size_t nl = result.text.rfind('\n');
      error = result.text.substr(1, nl - 1);
      line = result.text.substr(nl + 1);
    } else {  // the worker died (a crash, LLVM's fatal error): no earlier run's object stays
      error = result.text;
      ::unlink((out_dir + "/" + modules[i].id + ".o").c_str());
      line = receipt_json({modules[i].id, label(i), backend_name, profile_name(profile), "kiln-emit"}, EmitResult{},
                          error);
    }
    (error.empty() ? summary.emitted : summary.failed)++;
    if (!error.empty() && first_error.empty()) first_error = error;
    corpus.append_receipt(line);
    if (!out_is_corpus) append_line_locked(receipts_path, line);
    progress.advance();
  };
  run_isolated(modules.size(), std::max(1u, jobs), job, done, label);
  progress.finish();
  summary.seconds = total.seconds();
  if (!first_error.empty()) std::fprintf(stderr, "kiln-emit: first failure: %s\n", first_error.c_str());
  return summary;
}

}  // namespace kiln
