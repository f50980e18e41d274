// The corpus on disk (see kiln-corpus(5)):
//   CORPUS/kiln-corpus.json   the corpus manifest, versioned, rewritten atomically
//   CORPUS/blobs/AB/ID.bc     bitcode, content-addressed by xxh3-128 of its bytes
//   CORPUS/modules.jsonl      one line per captured module occurrence
//   CORPUS/invocations.jsonl  one line per compiler invocation the wrapper saw
//   CORPUS/census.jsonl       kiln-census facts and verdicts, one line per module
//                             (every back end inside), rewritten whole by each census
//   CORPUS/receipts.jsonl     kiln-emit / kiln-capture emission receipts
//   CORPUS/replay-report.json the last kiln-replay report, rewritten whole by each replay
//   CORPUS/census.shard-K-of-N.jsonl, CORPUS/replay-report.shard-K-of-N.json
//                             the same for one shard (--shard K/N, lib/base/shard.h), so
//                             that shards run into one corpus do not overwrite each other;
//                             `kiln-census merge` and `kiln-replay merge` join them
// The other JSON Lines files are only appended to, one locked write per line, so many
// wrapper processes of one parallel build can record into the same corpus.
#pragma once
#include <simdjson.h>

#include "json.h"
#include "shard.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

constexpr int kCorpusSchemaVersion = 1;
constexpr const char* kCorpusManifestName = "kiln-corpus.json";
constexpr const char* kInvocationsFileName = "invocations.jsonl";

struct CorpusManifest {
  int version = kCorpusSchemaVersion;
  std::string kiln_version, llvm_version, rustc_version, clang_version;
  std::string host;                  // uname -srm
  std::string hardware_json = "{}";  // hardware profile, as written by kiln-measure hw
  std::vector<std::string> build_command;
  std::string build_cwd;
  std::string profile;  // fast | balanced | release | "" (the build's own)
  std::string backend;  // native | llvm | cmd:...
  std::string created, updated;
  double build_seconds = 0;
  int build_exit_code = 0;
  std::string origin;  // how it was made: capture | add | merge | filter
};

struct ModuleRecord {
  std::string id;  // xxh3-128 of the bitcode bytes
  uint64_t bytes = 0;
  std::string triple, producer;
  std::string tool;               // rustc | clang | clang++ | import
  std::string crate;              // crate name, or the C/C++ source file
  std::string cgu;                // codegen-unit name (rustc), or the source's file name
  std::vector<std::string> args;  // the compiler's exact arguments
  std::string args_hash;          // xxh3-128 of the arguments, each followed by a NUL
  std::string opt_level;          // 0 1 2 3 s z
  int debuginfo = 0;              // 0 1 2
  std::string cwd;
  std::string invocation;  // id of the invocation that produced it
  std::string time;
  // Filled by Corpus::modules(): how many occurrences share these bytes.
  int multiplicity = 1;
  std::vector<std::string> invocations;

  std::string to_json() const;
};

struct InvocationRecord {
  std::string id, tool, action;  // action: captured | passthrough | fallback | failed
  std::string reason;            // why it passed through, fell back or failed
  std::vector<std::string> args;
  std::string cwd, time;
  int modules = 0;
  double seconds = 0;
  // Where the invocation's time went, in the order it was spent (kiln-corpus(5): startup,
  // rustc, store, emit, link for the rustc wrapper), and when it began (Unix seconds,
  // kept to the millisecond as start_ms; 0 in records from before kiln recorded it).
  std::vector<std::pair<std::string, double>> phases;
  double start = 0;
  std::string to_json() const;
};
// Appends one invocation to the corpus at `corpus_dir` (Corpus::append_invocation)
// without reading its manifest: what a rustc wrapper does (lib/corpus_records.cpp).
void append_invocation_to(const std::string& corpus_dir, const InvocationRecord& r);

// One parsed JSON Lines record together with where it came from.
struct JsonLine {
  std::string file;
  size_t line = 0;
  simdjson::dom::element value;
};

class Corpus {
 public:
  // Creates the directory layout and writes a fresh manifest. An existing corpus is
  // opened and kept (captures add to it).
  static Corpus create_or_open(const std::string& dir, const CorpusManifest& fresh);
  // Opens an existing corpus; throws KilnError when missing, corrupt or newer.
  static Corpus open(const std::string& dir);
  static bool looks_like_corpus(const std::string& dir);
  // What the checks of kiln-emit run over: every module of the corpus at `input` as
  // (its id, its blob's path), or, when `corpus` is false, the one file (input, input).
  static std::vector<std::pair<std::string, std::string>> modules_to_check(const std::string& input, bool corpus);

  const std::string& dir() const { return dir_; }
  CorpusManifest& manifest() { return manifest_; }
  void save_manifest();

  std::string blob_path(const std::string& id) const;
  // Removes the temporary files that writers killed before their rename left in the
  // corpus (its top, blobs/*/ and objects/; see remove_orphaned_temp_files); how many.
  size_t remove_orphaned_temp_files() const;
  // Stores the bytes (temp + rename; a blob already there is left alone) and returns its id.
  std::string store_blob(std::string_view bytes);
  // Stores many blobs with one batched sync (write_new_files_durable); their ids, in
  // order. What is stored already (or twice in `blobs`) is written once.
  std::vector<std::string> store_blobs(const std::vector<std::string_view>& blobs);
  std::string load_blob(const std::string& id) const;

  // The object cache, objects/KEY.o: objects a back end emitted, under a key that names
  // the bitcode, the back end and everything else the bytes depend on (kiln-capture's
  // object_cache_key). A rebuild in which the compiler reuses a unit finds its object
  // here. Each file starts with a line carrying its object's xxh3-128, so a damaged
  // entry reads as absent and is written again.
  std::string object_path(const std::string& key) const;
  std::optional<std::string> cached_object(const std::string& key) const;
  void store_object(const std::string& key, std::string_view object);
  // Bounds the object cache: while its entries take more than `max_bytes`, the least
  // recently used (by modification time, which a hit renews) are removed. Returns the
  // bytes removed. Entries another process removes meanwhile are skipped.
  uint64_t prune_objects(uint64_t max_bytes);

  void append_module(const ModuleRecord& m);
  void append_invocation(const InvocationRecord& r);  // append_invocation_to(dir())
  void append_census(const std::string& json_line);
  void append_receipt(const std::string& json_line);

  // The files a step rewrites whole, atomically (temp + rename).
  // With a shard given (--shard, even 1/1): that shard's own file (CORPUS/census.shard-K-of-N.jsonl).
  std::string census_path(Shard shard = {}) const;
  void write_census(std::string_view json_lines);
  // With a shard given (--shard, even 1/1): CORPUS/replay-report.shard-K-of-N.json.
  std::string replay_report_path(Shard shard = {}) const;
  void write_replay_report(std::string_view json);

  // Modules merged by id, in first-seen order, with multiplicity filled in.
  std::vector<ModuleRecord> modules() const;
  std::vector<InvocationRecord> invocations() const;
  // Calls visit for every complete record of a JSON Lines file in the corpus.
  void for_each_line(const std::string& name, const std::function<void(const JsonLine&)>& visit) const;

 private:
  explicit Corpus(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
  CorpusManifest manifest_;
};

// The records of JSON Lines text read from `path`, as for_each_line reads a corpus file.
void for_each_record(std::string_view text, const std::string& path, const std::function<void(const JsonLine&)>& visit);
ModuleRecord module_from_json(simdjson::dom::element e, const JsonContext& ctx);
std::string manifest_to_json(const CorpusManifest& m);
CorpusManifest manifest_from_json(const std::string& text, const std::string& path);

// Copies the selected modules (and their blobs, census and receipt lines) of the
// sources into a new corpus at out_dir.
struct CorpusFilter {
  std::vector<std::string> ids;     // empty: any
  std::vector<std::string> crates;  // empty: any
  std::string reason;               // substring of a census reason; empty: any
  std::string backend;              // back end whose census reason is matched
};
// A file of module ids, one a line ('#' comments and blank lines skipped); any other
// line is an error naming the file and line.
std::vector<std::string> read_id_list(const std::string& path);
void merge_corpora(const std::vector<std::string>& sources, const std::string& out_dir, const CorpusFilter& filter,
                   const std::string& origin);

}  // namespace kiln
