#include "corpus.h"

#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include <algorithm>
#include <filesystem>
#include <set>
#include <unordered_map>

#include "error.h"
#include "fs.h"
#include "hash.h"
#include "json.h"
#include "timeutil.h"

namespace kiln {

static const char* const kModulesFile = "modules.jsonl";
static const char* const kCensusFile = "census.jsonl";
static const char* const kReceiptsFile = "receipts.jsonl";
static const char* const kReplayReportFile = "replay-report.json";

std::string manifest_to_json(const CorpusManifest& m) {
  JsonWriter w;
  w.begin_object()
      .field("schema", "kiln-corpus")
      .field("version", m.version)
      .field("kiln", m.kiln_version)
      .field("llvm", m.llvm_version)
      .field("rustc", m.rustc_version)
      .field("clang", m.clang_version)
      .field("host", m.host)
      .key("hardware")
      .raw(m.hardware_json.empty() ? "{}" : m.hardware_json)
      .key("build")
      .begin_object()
      .string_array("command", m.build_command)
      .field("cwd", m.build_cwd)
      .field("seconds", m.build_seconds)
      .field("exit_code", m.build_exit_code)
      .end_object()
      .field("profile", m.profile)
      .field("backend", m.backend)
      .field("origin", m.origin)
      .field("created", m.created)
      .field("updated", m.updated)
      .end_object();
  return w.str() + "\n";
}

// The digits of a top-level "version": N too long for 64 bits, or "".
static std::string huge_version_in(const std::string& text) {
  size_t at = text.find("\"version\"");
  if (at == std::string::npos) return "";
  size_t p = text.find_first_not_of(" \t\r\n", at + 9);
  if (p == std::string::npos || text[p] != ':') return "";
  p = text.find_first_not_of(" \t\r\n", p + 1);
  if (p == std::string::npos) return "";
  size_t end = text.find_first_not_of("0123456789", p);
  std::string digits = text.substr(p, (end == std::string::npos ? text.size() : end) - p);
  return digits.size() > 19 ? digits : "";
}

CorpusManifest manifest_from_json(const std::string& text, const std::string& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.parse(text).get(doc); err != simdjson::SUCCESS) {
    // simdjson refuses a whole document over one integer beyond 64 bits; when that
    // integer is the version, the manifest is a newer one, not a corrupt one.
    std::string huge = huge_version_in(text);
    if (err == simdjson::NUMBER_ERROR && !huge.empty())
      throw KilnError(kExitNewerSchema, path,
                      "corpus schema version " + huge + " is newer than this kiln reads; use a newer kiln");
    throw KilnError(kExitBadInput, path, std::string("corrupt manifest: ") + json_error_reason(err));
  }
  if (get_string_or(doc, "schema", "") != "kiln-corpus")
    throw KilnError(kExitBadInput, path, "not a kiln corpus manifest (schema is not \"kiln-corpus\")");
  CorpusManifest m;
  // The version is read as it is written, before any narrowing: 2^32 + 1 is not 1.
  int64_t version = 0;
  if (doc["version"].get(version) != simdjson::SUCCESS) {
    uint64_t huge = 0;
    if (doc["version"].get(huge) == simdjson::SUCCESS)
      throw KilnError(kExitNewerSchema, path,
                      "corpus schema version " + std::to_string(huge) +
                          " is newer than this kiln reads; use a newer kiln");
    throw KilnError(kExitBadInput, path, "corrupt manifest: 'version' is missing or not an integer");
  }
  if (version > kCorpusSchemaVersion)
    throw KilnError(kExitNewerSchema, path,
                    "corpus schema version " + std::to_string(version) + " is newer than this kiln reads (" +
                        std::to_string(kCorpusSchemaVersion) + "); use a newer kiln");
  if (version < 1) throw KilnError(kExitBadInput, path, "corrupt manifest: version " + std::to_string(version));
  m.version = static_cast<int>(version);
  m.kiln_version = get_string_or(doc, "kiln", "");
  m.llvm_version = get_string_or(doc, "llvm", "");
  m.rustc_version = get_string_or(doc, "rustc", "");
  m.clang_version = get_string_or(doc, "clang", "");
  m.host = get_string_or(doc, "host", "");
  simdjson::dom::element hw;
  if (doc["hardware"].get(hw) == simdjson::SUCCESS) m.hardware_json = simdjson::minify(hw);
  simdjson::dom::element build;
  if (doc["build"].get(build) == simdjson::SUCCESS) {
    m.build_command = get_string_array(build, "command");
    m.build_cwd = get_string_or(build, "cwd", "");
    m.build_seconds = get_double_or(build, "seconds", 0);
    m.build_exit_code = static_cast<int>(get_int_or(build, "exit_code", 0));
  }
  m.profile = get_string_or(doc, "profile", "");
  m.backend = get_string_or(doc, "backend", "");
  m.origin = get_string_or(doc, "origin", "");
  m.created = get_string_or(doc, "created", "");
  m.updated = get_string_or(doc, "updated", "");
  return m;
}

ModuleRecord module_from_json(simdjson::dom::element e, const JsonContext& ctx) {
  ModuleRecord m;
  m.id = get_string(e, "id", ctx);
  if (!is_content_id(m.id))
    throw KilnError(kExitBadInput, ctx.where(), "module id is not a 32-digit xxh3-128: " + m.id);
  int64_t bytes = get_int(e, "bytes", ctx);
  if (bytes < 0)
    throw KilnError(kExitBadInput, ctx.where(), "module size 'bytes' is negative: " + std::to_string(bytes));
  m.bytes = static_cast<uint64_t>(bytes);
  m.triple = get_string_or(e, "triple", "");
  m.producer = get_string_or(e, "producer", "");
  m.tool = get_string_or(e, "tool", "");
  m.crate = get_string_or(e, "crate", "");
  m.cgu = get_string_or(e, "cgu", "");
  m.args = get_string_array(e, "args");
  m.args_hash = get_string_or(e, "args_hash", "");
  m.opt_level = get_string_or(e, "opt_level", "");
  int64_t debuginfo = get_int_or(e, "debuginfo", 0);
  if (debuginfo < 0 || debuginfo > 2)
    throw KilnError(kExitBadInput, ctx.where(), "'debuginfo' is " + std::to_string(debuginfo) + ", not 0, 1 or 2");
  m.debuginfo = static_cast<int>(debuginfo);
  m.cwd = get_string_or(e, "cwd", "");
  m.invocation = get_string_or(e, "invocation", "");
  m.time = get_string_or(e, "time", "");
  return m;
}

bool Corpus::looks_like_corpus(const std::string& dir) { return path_exists(dir + "/" + kCorpusManifestName); }

namespace {

// What a corpus's creation leaves before its manifest: nothing, an empty blobs/, the
// manifest's temporary files (removed here: a creation holds the lock, so under it
// they are a killed one's).
bool holds_only_a_corpus_start(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) throw KilnError(kExitIo, dir, errno_reason(errno));
  std::vector<std::string> temporary;
  bool other = false;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (name.rfind(".kiln-tmp-", 0) == 0) temporary.push_back(dir + "/" + name);
    else if (name != "blobs" || !is_empty_directory(dir + "/blobs")) other = true;
  }
  ::closedir(d);
  if (!other)
    for (const std::string& t : temporary) ::unlink(t.c_str());
  return !other;
}

}  // namespace

Corpus Corpus::create_or_open(const std::string& dir, const CorpusManifest& fresh) {
  if (looks_like_corpus(dir)) return open(dir);
  if (path_exists(dir) && !is_directory(dir)) throw KilnError(kExitIo, dir, "exists and is not a directory");
  // Made under an exclusive lock on the directory: two captures starting into one new
  // corpus at once must both find a corpus, not one of them the other's half-made one.
  make_dirs(dir);
  const int lock = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock < 0) throw KilnError(kExitIo, dir, errno_reason(errno));
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }
  } unlock{lock};
  // Where a directory cannot be locked (NFS takes flock as a lock of a file open for
  // writing), it is made unlocked, as before the lock: a race there stays possible.
  while (::flock(lock, LOCK_EX) != 0 && errno == EINTR) {}
  if (looks_like_corpus(dir)) return open(dir);
  // A directory of the user's own (a project, a home) is no corpus to add to: kiln
  // would put its files among theirs, append to files of theirs with a corpus file's
  // name, and prune `objects/*.o` there. What a killed creation left is no such thing.
  if (!holds_only_a_corpus_start(dir))
    throw KilnError(kExitBadInput, dir,
                    std::string("is not empty and is not a kiln corpus (no ") + kCorpusManifestName +
                        "): name a new or empty directory");
  make_dirs(dir + "/blobs");
  Corpus c(dir);
  c.manifest_ = fresh;
  if (c.manifest_.created.empty()) c.manifest_.created = iso8601_now();
  c.save_manifest();
  return c;
}

Corpus Corpus::open(const std::string& dir) {
  std::string path = dir + "/" + kCorpusManifestName;
  if (!is_directory(dir)) throw KilnError(kExitIo, dir, "no such corpus directory");
  if (!path_exists(path))
    throw KilnError(kExitBadInput, dir, std::string("not a kiln corpus (no ") + kCorpusManifestName + ")");
  Corpus c(dir);
  c.manifest_ = manifest_from_json(read_file(path), path);
  return c;
}

void Corpus::save_manifest() {
  manifest_.updated = iso8601_now();
  write_file_atomic(dir_ + "/" + kCorpusManifestName, manifest_to_json(manifest_));
}

std::vector<std::pair<std::string, std::string>> Corpus::modules_to_check(const std::string& input, bool corpus) {
  std::vector<std::pair<std::string, std::string>> modules;
  if (!corpus) return {{input, input}};
  Corpus c = Corpus::open(input);
  for (const ModuleRecord& m : c.modules()) modules.push_back({m.id, c.blob_path(m.id)});
  return modules;
}

size_t Corpus::remove_orphaned_temp_files() const {
  size_t removed = kiln::remove_orphaned_temp_files(dir_) + kiln::remove_orphaned_temp_files(dir_ + "/objects") +
                   kiln::remove_orphaned_temp_files(dir_ + "/blobs");
  if (DIR* d = ::opendir((dir_ + "/blobs").c_str())) {
    while (dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') removed += kiln::remove_orphaned_temp_files(dir_ + "/blobs/" + e->d_name);
    ::closedir(d);
  }
  return removed;
}

std::string Corpus::blob_path(const std::string& id) const {
  return dir_ + "/blobs/" + id.substr(0, 2) + "/" + id + ".bc";
}

std::string Corpus::store_blob(std::string_view bytes) {
  std::string id = xxh3_128_hex(bytes);
  std::string path = blob_path(id);
  if (!path_exists(path)) {
    make_dirs(dirname_of(path));
    write_file_atomic(path, bytes);  // racing writers write identical bytes; rename is atomic
  }
  return id;
}

std::vector<std::string> Corpus::store_blobs(const std::vector<std::string_view>& blobs) {
  std::vector<std::string> ids;
  std::vector<std::pair<std::string, std::string_view>> files;
  std::set<std::string> queued;
  for (std::string_view bytes : blobs) {
    ids.push_back(xxh3_128_hex(bytes));
    std::string path = blob_path(ids.back());
    if (path_exists(path) || !queued.insert(path).second) continue;
    make_dirs(dirname_of(path));
    files.emplace_back(std::move(path), bytes);
  }
  write_new_files_durable(files);
  return ids;
}

std::string Corpus::load_blob(const std::string& id) const {
  std::string path = blob_path(id);
  std::string bytes = read_file(path);
  if (xxh3_128_hex(bytes) != id)
    throw KilnError(kExitBadInput, path, "blob content does not match its id (corrupt corpus)");
  return bytes;
}

static constexpr std::string_view kObjectHeader = "kiln-object-cache 1 ";

std::string Corpus::object_path(const std::string& key) const { return dir_ + "/objects/" + key + ".o"; }

std::optional<std::string> Corpus::cached_object(const std::string& key) const {
  std::string path = object_path(key);
  if (!path_exists(path)) return std::nullopt;
  std::string bytes;
  try {
    bytes = read_file(path);
  } catch (const KilnError&) {
    return std::nullopt;  // unreadable: emitted again, and rewritten
  }
  size_t nl = bytes.find('\n');
  if (bytes.compare(0, kObjectHeader.size(), kObjectHeader) != 0 || nl == std::string::npos) return std::nullopt;
  std::string hash = bytes.substr(kObjectHeader.size(), nl - kObjectHeader.size());
  std::string object = bytes.substr(nl + 1);
  if (xxh3_128_hex(object) != hash) return std::nullopt;
  // A hit renews the entry for prune_objects (least recently used goes first); a
  // read-only corpus keeps the old time, which costs only the order of pruning.
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
  return object;
}

void Corpus::store_object(const std::string& key, std::string_view object) {
  std::string path = object_path(key);
  make_dirs(dirname_of(path));
  std::string bytes = std::string(kObjectHeader) + xxh3_128_hex(object) + "\n";
  bytes.append(object);
  // Racing writers write identical bytes; rename is atomic. Not synced: a torn entry
  // fails its hash in cached_object and is emitted and written again.
  write_file_atomic(path, bytes, Durability::kAtomic);
}

uint64_t Corpus::prune_objects(uint64_t max_bytes) {
  struct Entry {
    std::string path;
    uint64_t bytes;
    struct timespec mtime;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir_ + "/objects", ec)) {
    struct stat st {};
    if (e.path().extension() != ".o" || ::lstat(e.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    entries.push_back({e.path().string(), static_cast<uint64_t>(st.st_size), st.st_mtim});
    total += static_cast<uint64_t>(st.st_size);
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.mtime.tv_sec != b.mtime.tv_sec ? a.mtime.tv_sec < b.mtime.tv_sec : a.mtime.tv_nsec < b.mtime.tv_nsec;
  });
  uint64_t removed = 0;
  for (const Entry& e : entries) {
    if (total - removed <= max_bytes) break;
    if (::unlink(e.path.c_str()) == 0 || errno == ENOENT) removed += e.bytes;
  }
  return removed;
}

void Corpus::append_module(const ModuleRecord& m) { append_line_locked(dir_ + "/" + kModulesFile, m.to_json()); }
void Corpus::append_invocation(const InvocationRecord& r) { append_invocation_to(dir_, r); }
void Corpus::append_census(const std::string& json_line) { append_line_locked(dir_ + "/" + kCensusFile, json_line); }
void Corpus::append_receipt(const std::string& json_line) { append_line_locked(dir_ + "/" + kReceiptsFile, json_line); }

std::string Corpus::census_path(Shard shard) const {
  return shard.whole() ? dir_ + "/" + kCensusFile : dir_ + "/census." + shard.file_tag() + ".jsonl";
}
void Corpus::write_census(std::string_view json_lines) { write_file_atomic(census_path(), json_lines); }
std::string Corpus::replay_report_path(Shard shard) const {
  return shard.whole() ? dir_ + "/" + kReplayReportFile : dir_ + "/replay-report." + shard.file_tag() + ".json";
}
void Corpus::write_replay_report(std::string_view json) { write_file_atomic(replay_report_path(), json); }

void Corpus::for_each_line(const std::string& name, const std::function<void(const JsonLine&)>& visit) const {
  std::string path = dir_ + "/" + name;
  // Only a file that is not there is empty; one that cannot be read (a symlink loop,
  // no permission) is an error, never "no records".
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw KilnError(kExitIo, path, errno_reason(errno));
  }
  for_each_record(read_file(path), path, visit);
}

void for_each_record(std::string_view text, const std::string& path,
                     const std::function<void(const JsonLine&)>& visit) {
  simdjson::dom::parser parser;
  size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    ++line_no;
    if (end == std::string::npos) {
      // A last line without its newline is an append that was interrupted: the
      // record never completed, so it is ignored rather than half-read.
      std::fprintf(stderr, "kiln: warning: %s:%zu: ignoring an incomplete last record (interrupted write)\n",
                   path.c_str(), line_no);
      break;
    }
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    simdjson::dom::element value;
    if (auto err = parser.parse(line.data(), line.size()).get(value); err != simdjson::SUCCESS)
      throw KilnError(kExitBadInput, path + ":" + std::to_string(line_no),
                      std::string("corrupt record: ") + json_error_reason(err));
    if (!value.is_object())
      throw KilnError(kExitBadInput, path + ":" + std::to_string(line_no), "corrupt record: not a JSON object");
    visit(JsonLine{path, line_no, value});
  }
}

std::vector<ModuleRecord> Corpus::modules() const {
  std::vector<ModuleRecord> out;
  std::unordered_map<std::string, size_t> index;
  for_each_line(kModulesFile, [&](const JsonLine& l) {
    ModuleRecord m = module_from_json(l.value, JsonContext{l.file, l.line});
    auto it = index.find(m.id);
    if (it == index.end()) {
      index.emplace(m.id, out.size());
      m.invocations.push_back(m.invocation);
      out.push_back(std::move(m));
    } else {
      ModuleRecord& first = out[it->second];
      first.multiplicity++;
      first.invocations.push_back(m.invocation);
    }
  });
  return out;
}

std::vector<InvocationRecord> Corpus::invocations() const {
  std::vector<InvocationRecord> out;
  for_each_line(kInvocationsFileName, [&](const JsonLine& l) {
    InvocationRecord r;
    r.id = get_string_or(l.value, "id", "");
    r.tool = get_string_or(l.value, "tool", "");
    r.action = get_string_or(l.value, "action", "");
    r.reason = get_string_or(l.value, "reason", "");
    r.args = get_string_array(l.value, "args");
    r.cwd = get_string_or(l.value, "cwd", "");
    r.time = get_string_or(l.value, "time", "");
    r.modules = static_cast<int>(get_int_or(l.value, "modules", 0));
    r.seconds = get_double_or(l.value, "seconds", 0);
    r.start = static_cast<double>(get_int_or(l.value, "start_ms", 0)) / 1000.0;
    simdjson::dom::object phases;
    if (l.value["phases"].get(phases) == simdjson::SUCCESS)
      for (auto field : phases) {
        double v = 0;
        if (field.value.get(v) == simdjson::SUCCESS) r.phases.emplace_back(std::string(field.key), v);
      }
    out.push_back(std::move(r));
  });
  return out;
}

std::vector<std::string> read_id_list(const std::string& path) {
  std::string text = read_file(path);
  std::vector<std::string> ids;
  size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string id = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    while (!id.empty() && (id.back() == '\r' || id.back() == ' ' || id.back() == '\t')) id.pop_back();
    if (id.empty() || id.front() == '#') continue;
    if (!is_content_id(id))
      throw KilnError(kExitBadInput, path + ":" + std::to_string(line_no), "not a module id (32 hex digits): " + id);
    ids.push_back(id);
  }
  return ids;
}

// Claims out_dir for one merge: creates it (or takes the empty directory given) and
// holds an exclusive lock on it, so a second merge into the same place fails at once
// instead of mixing its modules into this one. The returned descriptor holds the lock.
static int claim_output_dir(const std::string& out_dir, bool& created) {
  make_dirs(dirname_of(out_dir));  // as before: parents are created
  created = ::mkdir(out_dir.c_str(), 0755) == 0;
  if (!created && errno != EEXIST) throw KilnError(kExitIo, out_dir, errno_reason(errno));
  int fd = ::open(out_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw KilnError(kExitIo, out_dir, "exists and is not a directory");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    throw KilnError(kExitIo, out_dir, "another kiln is writing a corpus there");
  }
  // What merges into this directory that were killed left beside it (their temporary
  // siblings, blobs and all): under the lock no live merge into it owns one.
  const std::string dir = dirname_of(out_dir), prefix = basename_of(out_dir) + ".kiln-partial-";
  if (DIR* d = ::opendir(dir.c_str())) {
    std::vector<std::string> left;
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() == prefix.size() + 6 && name.compare(0, prefix.size(), prefix) == 0) left.push_back(name);
    }
    ::closedir(d);
    for (const std::string& name : left) remove_tree(dir + "/" + name);
  }
  // Checked under the lock and by path: a merge that finished meanwhile has put a
  // corpus there.
  if (Corpus::looks_like_corpus(out_dir) || !std::filesystem::is_empty(out_dir)) {
    ::close(fd);
    throw KilnError(kExitIo, out_dir,
                    Corpus::looks_like_corpus(out_dir) ? "already holds a corpus; choose a new directory"
                                                       : "exists and is not empty; choose a new directory");
  }
  return fd;
}

void merge_corpora(const std::vector<std::string>& sources, const std::string& out_arg, const CorpusFilter& filter,
                   const std::string& origin) {
  // "out/" names the same place as "out"; the temporary sibling must not land inside it.
  std::string out_dir = out_arg;
  while (out_dir.size() > 1 && out_dir.back() == '/') out_dir.pop_back();
  if (sources.empty()) throw KilnError(kExitUsage, out_dir, "no source corpus given");
  if (!filter.backend.empty() && filter.backend != "llvm" && filter.backend != "stamp")
    throw KilnError(kExitUsage, "",
                    "--reason-backend: " + filter.backend + " is not a back end the census judges (llvm, stamp)");
  if (!filter.backend.empty() && filter.reason.empty())
    throw KilnError(kExitUsage, "", "--reason-backend needs --reason TEXT");
  for (const auto& id : filter.ids)
    if (!is_content_id(id))
      throw KilnError(kExitBadInput, "", "--ids: '" + id + "' is not a module id (32 hex digits)");
  std::vector<Corpus> inputs;
  for (const auto& s : sources) inputs.push_back(Corpus::open(s));
  CorpusManifest m = inputs.front().manifest();
  m.origin = origin;
  m.created = iso8601_now();
  bool created_out = false;
  int lock_fd = claim_output_dir(out_dir, created_out);
  // Write into a temporary sibling of its own and rename it over the claimed (empty)
  // directory at the end: an interrupted merge leaves no half corpus behind (a killed
  // one leaves the sibling, which the next merge into out_dir removes).
  std::string tmp = make_sibling_dir(out_dir, ".kiln-partial");
  struct Cleanup {
    std::string tmp, out;
    bool created_out;
    int lock_fd;
    bool done = false;
    ~Cleanup() {
      if (!done) {
        remove_tree(tmp);
        if (created_out) ::rmdir(out.c_str());
      }
      ::close(lock_fd);
    }
  } partial{tmp, out_dir, created_out, lock_fd};
  Corpus out = Corpus::create_or_open(tmp, m);

  std::set<std::string> want_ids(filter.ids.begin(), filter.ids.end());
  std::set<std::string> want_crates(filter.crates.begin(), filter.crates.end());
  std::set<std::string> census_ids;  // modules whose census record is copied already
  for (auto& in : inputs) {
    std::set<std::string> reason_ids;
    if (!filter.reason.empty()) {
      in.for_each_line(kCensusFile, [&](const JsonLine& l) {
        simdjson::dom::object verdicts;
        if (l.value["verdicts"].get(verdicts) != simdjson::SUCCESS) return;
        for (auto [backend, verdict] : verdicts) {
          if (!filter.backend.empty() && backend != filter.backend) continue;
          for (const auto& r : get_string_array(verdict, "reasons"))
            if (r.find(filter.reason) != std::string::npos) reason_ids.insert(get_string_or(l.value, "id", ""));
        }
      });
    }
    std::set<std::string> kept, kept_invocations;
    in.for_each_line(kModulesFile, [&](const JsonLine& l) {
      ModuleRecord rec = module_from_json(l.value, JsonContext{l.file, l.line});
      if (!want_ids.empty() && !want_ids.count(rec.id)) return;
      if (!want_crates.empty() && !want_crates.count(rec.crate)) return;
      if (!filter.reason.empty() && !reason_ids.count(rec.id)) return;
      if (!kept.count(rec.id)) out.store_blob(in.load_blob(rec.id));
      kept.insert(rec.id);
      kept_invocations.insert(rec.invocation);
      out.append_module(rec);
    });
    auto copy_selected = [&](const char* file, auto append) {
      in.for_each_line(file, [&](const JsonLine& l) {
        if (kept.count(get_string_or(l.value, "id", ""))) append(std::string(simdjson::minify(l.value)));
      });
    };
    // A census record is a function of the module's bytes: one per module, as a census
    // of the merged corpus writes, even when the sources share modules (copies of one
    // corpus whose shards ran on different machines, say).
    in.for_each_line(kCensusFile, [&](const JsonLine& l) {
      std::string id = get_string_or(l.value, "id", "");
      if (kept.count(id) && census_ids.insert(id).second) out.append_census(std::string(simdjson::minify(l.value)));
    });
    copy_selected(kReceiptsFile, [&](const std::string& s) { out.append_receipt(s); });
    // A merge keeps every invocation; a filter only those that produced kept modules.
    bool filtering = !want_ids.empty() || !want_crates.empty() || !filter.reason.empty();
    in.for_each_line(kInvocationsFileName, [&](const JsonLine& l) {
      if (!filtering || kept_invocations.count(get_string_or(l.value, "id", "")))
        append_line_locked(out.dir() + "/" + kInvocationsFileName, simdjson::minify(l.value));
    });
  }
  // Read the result back before it takes the target's place: a record that the
  // readers would refuse must not land.
  Corpus::open(tmp).modules();
  out.invocations();
  if (::rename(tmp.c_str(), out_dir.c_str()) != 0)
    throw KilnError(kExitIo, out_dir, "cannot move the merged corpus into place: " + errno_reason(errno));
  partial.done = true;
}

}  // namespace kiln
