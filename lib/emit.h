// kiln-emit's work: one bitcode file to one object, or every module of a corpus to
// a directory of objects, each with a receipt.
#pragma once
#include <string>

#include "backend.h"
#include "shard.h"

namespace kiln {

constexpr int kReceiptSchemaVersion = 1;

struct ReceiptInput {
  std::string id;     // the module's content id
  std::string label;  // path or corpus/id, for people
  std::string backend, profile;
  std::string origin;  // kiln-emit | kiln-capture
};
// One receipt line (JSON): back end, profile, LLVM version, input id, object xxh3
// and bytes, per-stage times and per-back-end function/instruction counts.
std::string receipt_json(const ReceiptInput& in, const EmitResult& r, const std::string& error = "");

struct EmitFileResult {
  std::string receipt;
  EmitResult result;
};
EmitFileResult emit_file(const std::string& in_path, const std::string& out_path, const std::string& backend_spec,
                         Profile profile);
// The same for bytes already read from in_path (a pipe can be read only once).
EmitFileResult emit_bytes(const std::string& bytes, const std::string& in_path, const std::string& out_path,
                          const std::string& backend_spec, Profile profile, double read_seconds = 0);

// emit_file in a worker process: a module that crashes LLVM or makes it stop with a
// fatal error is a KilnError (kExitBadInput) naming in_path, and no object is written.
// Returns the receipt.
std::string emit_file_isolated(const std::string& in_path, const std::string& out_path, const std::string& backend_spec,
                               Profile profile, const std::string* bytes_read = nullptr);

// --export-flat (emit_flat.cpp): the module's stamp functions, as the active selection
// allows, to a flat IR file; returns the line to print.
std::string export_flat_file(const std::string& input, const std::string& flat_path);

struct CorpusEmitSummary {
  size_t modules = 0, emitted = 0, failed = 0;
  double seconds = 0;
};
// Emits every module of the corpus into out_dir/ID.o with `jobs` worker processes,
// appending a receipt per module to the corpus and to out_dir/receipts.jsonl. A module
// that crashes LLVM fails alone (its receipt says how); an error writing receipts is
// thrown (kExitIo) after the workers are stopped. With a shard other than 1/1, only that
// shard's modules (lib/base/shard.h).
CorpusEmitSummary emit_corpus(const std::string& corpus_dir, const std::string& out_dir,
                              const std::string& backend_spec, Profile profile, unsigned jobs, Shard shard = {});

}  // namespace kiln
