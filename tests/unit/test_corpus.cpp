#include <sys/wait.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <set>

#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "hash.h"
#include "ir_helpers.h"

using namespace kiln;
using kiln_test::ScratchDir;

static ModuleRecord sample_module(const std::string& id, const std::string& crate) {
  ModuleRecord m;
  m.id = id;
  m.bytes = 42;
  m.triple = "x86_64-unknown-linux-gnu";
  m.tool = "rustc";
  m.crate = crate;
  m.cgu = "cgu.0";
  m.args = {"--crate-name", crate, "src/lib.rs", "--cfg", "feature=\"std\""};
  m.args_hash = "h";
  m.opt_level = "0";
  m.debuginfo = 2;
  m.invocation = "inv-" + crate;
  return m;
}

TEST_CASE("xxh3-128 ids are 32 hex digits and content-addressed", "[hash]") {
  std::string a = xxh3_128_hex(std::string("kiln")), b = xxh3_128_hex(std::string("kilm"));
  CHECK(a.size() == 32);
  CHECK(is_content_id(a));
  CHECK(a != b);
  CHECK(a == xxh3_128_hex(std::string("kiln")));
  CHECK_FALSE(is_content_id("xyz"));
  CHECK_FALSE(is_content_id(std::string(32, 'G')));
}

TEST_CASE("a corpus round-trips its manifest, blobs and module records", "[corpus]") {
  ScratchDir dir;
  std::string path = dir.path + "/c";
  CorpusManifest m;
  m.kiln_version = "0.1.0";
  m.build_command = {"cargo", "build", "--release"};
  m.profile = "fast";
  Corpus c = Corpus::create_or_open(path, m);
  std::string id = c.store_blob("bitcode bytes");
  CHECK(id == xxh3_128_hex(std::string("bitcode bytes")));
  CHECK(c.load_blob(id) == "bitcode bytes");
  CHECK(c.store_blob("bitcode bytes") == id);  // storing again is harmless

  c.append_module(sample_module(id, "regex"));
  c.append_module(sample_module(id, "regex"));  // same bytes from another invocation
  c.append_module(sample_module(xxh3_128_hex(std::string("other")), "memchr"));

  Corpus again = Corpus::open(path);
  CHECK(again.manifest().build_command == m.build_command);
  CHECK(again.manifest().profile == "fast");
  auto mods = again.modules();
  REQUIRE(mods.size() == 2);
  CHECK(mods[0].id == id);
  CHECK(mods[0].multiplicity == 2);
  CHECK(mods[0].args == sample_module(id, "regex").args);
  CHECK(mods[0].debuginfo == 2);
  CHECK(mods[1].crate == "memchr");
  CHECK(mods[1].multiplicity == 1);
}

TEST_CASE("the census and the replay report are the corpus's files, rewritten whole", "[corpus]") {
  ScratchDir dir;
  Corpus c = Corpus::create_or_open(dir.path + "/c", {});
  CHECK(c.census_path() == dir.path + "/c/census.jsonl");
  CHECK(c.replay_report_path() == dir.path + "/c/replay-report.json");
  c.write_census("{\"id\":\"a\"}\n{\"id\":\"b\"}\n");
  c.write_census("{\"id\":\"c\"}\n");  // a new census replaces the old one
  CHECK(read_file(c.census_path()) == "{\"id\":\"c\"}\n");
  c.write_replay_report("{}\n");
  CHECK(read_file(c.replay_report_path()) == "{}\n");
  // A shard's (--shard K/N) are files of their own beside them.
  CHECK(c.census_path(Shard{2, 4}) == dir.path + "/c/census.shard-2-of-4.jsonl");
  CHECK(c.replay_report_path(Shard{3, 4}) == dir.path + "/c/replay-report.shard-3-of-4.json");
  CHECK(c.census_path(Shard{1, 1}) == c.census_path());
  write_file_atomic(c.census_path(Shard{2, 4}), "");
  write_file_atomic(c.census_path(Shard{1, 4}), "");
  write_file_atomic(c.census_path(Shard{1, 2}), "");
  write_file_atomic(dir.path + "/c/census.shard-x-of-4.jsonl", "");
  CHECK(find_shard_files(c.dir(), "census", "jsonl") ==
        std::vector<std::string>{c.census_path(Shard{1, 2}), c.census_path(Shard{1, 4}), c.census_path(Shard{2, 4})});
}

TEST_CASE("a blob whose bytes do not match its id is reported as corrupt", "[corpus]") {
  ScratchDir dir;
  Corpus c = Corpus::create_or_open(dir.path + "/c", {});
  std::string id = c.store_blob("good");
  write_file_atomic(c.blob_path(id), "evil");
  try {
    c.load_blob(id);
    FAIL("expected an error");
  } catch (const KilnError& e) {
    CHECK(e.code() == kExitBadInput);
    CHECK(std::string(e.what()).find("does not match") != std::string::npos);
  }
}

TEST_CASE("many processes append to one corpus at once without losing or tearing a line", "[corpus]") {
  ScratchDir dir;
  std::string path = dir.path + "/c";
  Corpus::create_or_open(path, {});
  const int kProcesses = 8, kRecords = 200;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = fork();
    if (pid == 0) {
      Corpus c = Corpus::open(path);
      for (int r = 0; r < kRecords; ++r) {
        // Long argument lists make each line several kilobytes, larger than a pipe buffer.
        ModuleRecord m = sample_module(xxh3_128_hex(std::to_string(p * 100000 + r)), "crate" + std::to_string(p));
        m.args.assign(40, std::string(100, static_cast<char>('a' + p)));
        c.append_module(m);
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
  }
  auto mods = Corpus::open(path).modules();
  CHECK(mods.size() == static_cast<size_t>(kProcesses * kRecords));
  std::set<std::string> ids;
  for (const auto& m : mods) {
    ids.insert(m.id);
    // Every line is whole: all of its arguments come from the same writer.
    REQUIRE(m.args.size() == 40);
    CHECK(m.args.front()[0] == 'a' + (m.crate.back() - '0'));
  }
  CHECK(ids.size() == mods.size());
}

TEST_CASE("a manifest from a newer kiln is refused with its own exit code", "[corpus]") {
  ScratchDir dir;
  std::string path = dir.path + "/c";
  Corpus::create_or_open(path, {});
  std::string manifest = read_file(path + "/kiln-corpus.json");
  auto pos = manifest.find("\"version\":1");
  REQUIRE(pos != std::string::npos);
  manifest.replace(pos, 11, "\"version\":99");
  write_file_atomic(path + "/kiln-corpus.json", manifest);
  try {
    Corpus::open(path);
    FAIL("expected an error");
  } catch (const KilnError& e) {
    CHECK(e.code() == kExitNewerSchema);
    CHECK(std::string(e.what()).find("kiln-corpus.json") != std::string::npos);
    CHECK(std::string(e.what()).find("newer") != std::string::npos);
  }
}

TEST_CASE("a corrupt manifest or record names the file and line", "[corpus]") {
  ScratchDir dir;
  std::string path = dir.path + "/c";
  Corpus c = Corpus::create_or_open(path, {});
  c.append_module(sample_module(xxh3_128_hex(std::string("x")), "a"));
  append_line_locked(path + "/modules.jsonl", "{\"id\": \"not-json");
  c.append_module(sample_module(xxh3_128_hex(std::string("y")), "b"));
  try {
    Corpus::open(path).modules();
    FAIL("expected an error");
  } catch (const KilnError& e) {
    CHECK(e.code() == kExitBadInput);
    CHECK(std::string(e.what()).find("modules.jsonl:2") != std::string::npos);
  }
  write_file_atomic(path + "/kiln-corpus.json", "{ truncated");
  CHECK_THROWS_AS(Corpus::open(path), KilnError);
}

TEST_CASE("an interrupted last line is ignored and the records before it survive", "[corpus]") {
  ScratchDir dir;
  std::string path = dir.path + "/c";
  Corpus c = Corpus::create_or_open(path, {});
  c.append_module(sample_module(xxh3_128_hex(std::string("x")), "a"));
  std::string line = sample_module(xxh3_128_hex(std::string("y")), "b").to_json();
  std::string text = read_file(path + "/modules.jsonl") + line.substr(0, line.size() / 2);
  write_file_atomic(path + "/modules.jsonl", text);
  auto mods = Corpus::open(path).modules();
  REQUIRE(mods.size() == 1);
  CHECK(mods[0].crate == "a");
}

TEST_CASE("corpora merge, and filter by id and crate into new corpora", "[corpus]") {
  ScratchDir dir;
  Corpus a = Corpus::create_or_open(dir.path + "/a", {});
  Corpus b = Corpus::create_or_open(dir.path + "/b", {});
  std::string ia = a.store_blob("alpha"), ib = b.store_blob("beta"), ic = b.store_blob("gamma");
  a.append_module(sample_module(ia, "regex"));
  b.append_module(sample_module(ib, "memchr"));
  b.append_module(sample_module(ic, "regex"));
  b.append_census("{\"v\":1,\"id\":\"" + ic +
                  "\",\"verdicts\":{\"llvm\":{\"verdict\":\"rejected\",\"reasons\":[\"target: wrong\"]}}}");

  merge_corpora({dir.path + "/a", dir.path + "/b"}, dir.path + "/all", {}, "merge");
  auto all = Corpus::open(dir.path + "/all");
  CHECK(all.modules().size() == 3);
  CHECK(all.load_blob(ib) == "beta");
  CHECK(all.manifest().origin == "merge");

  CorpusFilter by_crate;
  by_crate.crates = {"regex"};
  merge_corpora({dir.path + "/all"}, dir.path + "/regex", by_crate, "filter");
  CHECK(Corpus::open(dir.path + "/regex").modules().size() == 2);

  CorpusFilter by_reason;
  by_reason.reason = "target";
  merge_corpora({dir.path + "/all"}, dir.path + "/target", by_reason, "filter");
  auto t = Corpus::open(dir.path + "/target").modules();
  REQUIRE(t.size() == 1);
  CHECK(t[0].id == ic);

  CorpusFilter by_id;
  by_id.ids = {ia};
  merge_corpora({dir.path + "/all"}, dir.path + "/one", by_id, "filter");
  CHECK(Corpus::open(dir.path + "/one").modules().at(0).id == ia);
  // Corpora that share modules (copies of one corpus, say): one census record per
  // module, as a census of the merged corpus writes; every occurrence is kept.
  merge_corpora({dir.path + "/all", dir.path + "/b"}, dir.path + "/twice", {}, "merge");
  size_t census_lines = 0;
  Corpus::open(dir.path + "/twice").for_each_line("census.jsonl", [&](const JsonLine&) { census_lines++; });
  CHECK(census_lines == 1);
  CHECK(Corpus::open(dir.path + "/twice").modules().at(2).multiplicity == 2);
  // An existing corpus is never overwritten.
  CHECK_THROWS_AS(merge_corpora({dir.path + "/a"}, dir.path + "/one", {}, "merge"), KilnError);
  CHECK(Corpus::open(dir.path + "/one").modules().size() == 1);
}

TEST_CASE("blobs stored as a batch: the same ids as one by one, each written once, no temporary left",
          "[corpus]") {
  ScratchDir dir;
  Corpus c = Corpus::create_or_open(dir.path + "/c", CorpusManifest{});
  std::string old_id = c.store_blob("stored before");
  std::string old_path = dir.path + "/c/blobs/" + old_id.substr(0, 2) + "/" + old_id + ".bc";
  struct stat before {};
  REQUIRE(::stat(old_path.c_str(), &before) == 0);
  std::vector<std::string> ids = c.store_blobs({"alpha", "stored before", "beta", "alpha"});
  REQUIRE(ids.size() == 4);
  CHECK(ids[0] == xxh3_128_hex(std::string("alpha")));
  CHECK(ids[1] == old_id);
  CHECK(ids[3] == ids[0]);
  CHECK(c.load_blob(ids[0]) == "alpha");
  CHECK(c.load_blob(ids[2]) == "beta");
  struct stat after {};
  REQUIRE(::stat(old_path.c_str(), &after) == 0);
  CHECK(after.st_ino == before.st_ino);  // not written again
  CHECK(c.store_blobs({}).empty());

  // One path in a missing directory: the call fails naming it, and no file of the
  // batch is left behind, temporary or renamed.
  const std::string good = dir.path + "/good.bin", bad = dir.path + "/missing/dir/bad.bin";
  try {
    write_new_files_durable({{good, "g"}, {bad, "b"}});
    FAIL("no error");
  } catch (const KilnError& e) {
    CHECK(std::string(e.what()).find(bad) != std::string::npos);
  }
  CHECK_FALSE(path_exists(good));
  int leftovers = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path))
    if (entry.path().filename().string().rfind(".kiln-tmp-", 0) == 0) ++leftovers;
  CHECK(leftovers == 0);
}

TEST_CASE("the object cache is pruned least recently used first, and a hit renews an entry", "[corpus]") {
  ScratchDir dir;
  Corpus c = Corpus::create_or_open(dir.path + "/c", CorpusManifest{});
  const std::string kilobyte(1000, 'x');
  for (const char* key : {"old", "mid", "new"}) c.store_object(key, kilobyte);
  // Modification times an hour apart, oldest first; then a hit on "old" renews it.
  int hour = 0;
  for (const char* key : {"old", "mid", "new"}) {
    struct timespec times[2] = {{1700000000 + 3600 * hour, 0}, {1700000000 + 3600 * hour, 0}};
    ++hour;
    REQUIRE(::utimensat(AT_FDCWD, c.object_path(key).c_str(), times, 0) == 0);
  }
  REQUIRE(c.cached_object("old").has_value());
  struct stat st {};
  REQUIRE(::stat(c.object_path("new").c_str(), &st) == 0);
  const uint64_t entry = static_cast<uint64_t>(st.st_size);  // the object and its header line
  CHECK(c.prune_objects(3 * entry) == 0);                    // within the bound: nothing goes
  CHECK(c.prune_objects(2 * entry) == entry);                // "mid" is now the least recently used
  CHECK_FALSE(path_exists(c.object_path("mid")));
  CHECK(c.cached_object("old").has_value());
  CHECK(c.cached_object("new").has_value());
  CHECK(c.prune_objects(0) == 2 * entry);
  CHECK_FALSE(c.cached_object("old").has_value());
  CHECK(c.prune_objects(0) == 0);  // an empty cache, and one never made, prune to nothing
  Corpus fresh = Corpus::create_or_open(dir.path + "/fresh", CorpusManifest{});
  CHECK(fresh.prune_objects(0) == 0);
}

TEST_CASE("captures starting into one new corpus at once all find it", "[corpus]") {
  // Each round, processes created at the same moment make the same new corpus: each
  // must open it (the check for a user's directory saw the others' blobs/ before
  // their manifest and refused, exit 3, its build never run).
  kiln_test::ScratchDir dir;
  for (int round = 0; round < 20; ++round) {
    const std::string path = dir.path + "/c" + std::to_string(round);
    std::vector<pid_t> children;
    for (int k = 0; k < 4; ++k) {
      pid_t pid = ::fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        try {
          Corpus::create_or_open(path, {});
          _exit(0);
        } catch (...) {
          _exit(1);
        }
      }
      children.push_back(pid);
    }
    int failed = 0;
    for (pid_t pid : children) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    INFO("round " << round);
    CHECK(failed == 0);
    CHECK(Corpus::looks_like_corpus(path));
  }
}

TEST_CASE("a corpus whose creation was killed before its manifest is made again", "[corpus]") {
  kiln_test::ScratchDir dir;
  const std::string path = dir.path + "/c";
  make_dirs(path + "/blobs");
  write_file_atomic(path + "/.kiln-tmp-99999999-abcdef", "{\"half\":");
  Corpus::create_or_open(path, {});
  CHECK(Corpus::looks_like_corpus(path));
  CHECK(!path_exists(path + "/.kiln-tmp-99999999-abcdef"));
  // Anything more is somebody's directory: refused, left as it was.
  const std::string theirs = dir.path + "/theirs";
  make_dirs(theirs + "/blobs");
  write_file_atomic(theirs + "/blobs/photo.jpg", "x");
  CHECK_THROWS_WITH(Corpus::create_or_open(theirs, {}), Catch::Contains("is not empty and is not a kiln corpus"));
  CHECK(read_file(theirs + "/blobs/photo.jpg") == "x");
}
