// The corpus's records as JSON lines, and the append a rustc wrapper makes: no JSON
// reader here (simdjson), so that kiln-rustc-wrapper, which cargo starts for every rustc
// call, links none and starts with no shared library but libc.
#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "json_writer.h"

namespace kiln {

std::string ModuleRecord::to_json() const {
  JsonWriter w;
  w.begin_object()
      .field("id", id)
      .field("bytes", bytes)
      .field("triple", triple)
      .field("producer", producer)
      .field("tool", tool)
      .field("crate", crate)
      .field("cgu", cgu)
      .string_array("args", args)
      .field("args_hash", args_hash)
      .field("opt_level", opt_level)
      .field("debuginfo", debuginfo)
      .field("cwd", cwd)
      .field("invocation", invocation)
      .field("time", time)
      .end_object();
  return w.str();
}

std::string InvocationRecord::to_json() const {
  JsonWriter w;
  w.begin_object()
      .field("id", id)
      .field("tool", tool)
      .field("action", action)
      .field("reason", reason)
      .string_array("args", args)
      .field("cwd", cwd)
      .field("time", time)
      .field("modules", modules)
      .field("seconds", seconds);
  // Milliseconds as an integer: the writer's doubles keep 9 digits, not a clock's 13.
  if (start > 0) w.field("start_ms", static_cast<uint64_t>(start * 1000.0 + 0.5));
  if (!phases.empty()) {
    w.key("phases").begin_object();
    for (const auto& [name, s] : phases) w.field(name, s);
    w.end_object();
  }
  w.end_object();
  return w.str();
}

void append_invocation_to(const std::string& corpus_dir, const InvocationRecord& r) {
  // Corpus::open's checks, less reading the manifest: the capture that runs this
  // wrapper made the corpus, and a wrapper reads nothing from it.
  if (!is_directory(corpus_dir)) throw KilnError(kExitIo, corpus_dir, "no such corpus directory");
  if (!path_exists(corpus_dir + "/" + kCorpusManifestName))
    throw KilnError(kExitBadInput, corpus_dir, std::string("not a kiln corpus (no ") + kCorpusManifestName + ")");
  append_line_locked(corpus_dir + "/" + kInvocationsFileName, r.to_json());
}

}  // namespace kiln
