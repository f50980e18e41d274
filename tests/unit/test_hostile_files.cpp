// Files as a hostile user hands them over: devices and symlinks as outputs, endless
// inputs, torn JSON Lines, names that are not UTF-8, unreadable manifests, concurrent
// merges. Each case is a defect that was found on an earlier kiln (issue 8).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>

#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "hash.h"
#include "ir_helpers.h"
#include "json.h"

using namespace kiln;
using kiln_test::ScratchDir;

static ModuleRecord record_for(const std::string& id, const std::string& cwd) {
  ModuleRecord m;
  m.id = id;
  m.bytes = 4;
  m.tool = "import";
  m.crate = cwd;
  m.cwd = cwd;
  m.args = {"-o", cwd + "/out.o"};
  return m;
}

static ExitCode code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const KilnError& e) {
    return e.code();
  }
  return kExitOk;
}

TEST_CASE("an output that is a character device is written in place, not replaced", "[files]") {
  // A private null device, so that a regression cannot replace the machine's /dev/null.
  ScratchDir dir;
  std::string dev = dir.path + "/null";
  INFO("the tests run as root (scripts/test.sh), which may make device nodes");
  REQUIRE(::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0);
  write_file_atomic(dev, "object bytes");
  struct stat after {};
  REQUIRE(::stat(dev.c_str(), &after) == 0);
  CHECK(S_ISCHR(after.st_mode));
  CHECK(after.st_rdev == makedev(1, 3));
  std::string link = dir.path + "/link-to-null";
  REQUIRE(::symlink(dev.c_str(), link.c_str()) == 0);
  write_file_atomic(link, "more bytes");
  REQUIRE(::stat(dev.c_str(), &after) == 0);
  CHECK(S_ISCHR(after.st_mode));
}

TEST_CASE("an output naming one of the process's descriptors is written through it", "[files]") {
  // /proc/self/fd/N of a regular file opened for appending, as `>> file` gives a tool's
  // stdout: what the file held stays, the bytes go after it, and the file is the same
  // one (not replaced by a rename, not rewritten from its start).
  ScratchDir dir;
  const std::string path = dir.path + "/appended";
  write_file_atomic(path, "first\n");
  struct stat before {};
  REQUIRE(::stat(path.c_str(), &before) == 0);
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND);
  REQUIRE(fd >= 0);
  const std::string self = "/proc/self/fd/" + std::to_string(fd);
  write_file_atomic(self, "second\n");
  const std::string link = dir.path + "/link-to-fd";  // through a link, and /dev/fd/N
  REQUIRE(::symlink(self.c_str(), link.c_str()) == 0);
  write_file_atomic(link, "third\n");
  write_file_atomic("/dev/fd/" + std::to_string(fd), "fourth\n");
  ::close(fd);
  CHECK(read_file(path) == "first\nsecond\nthird\nfourth\n");
  struct stat after {};
  REQUIRE(::stat(path.c_str(), &after) == 0);
  CHECK(after.st_ino == before.st_ino);
}

TEST_CASE("an output file keeps its permissions; a new one follows the umask", "[files]") {
  ScratchDir dir;
  const std::string path = dir.path + "/private";
  write_file_atomic(path, "old");
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  write_file_atomic(path, "new");
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  const mode_t old_mask = ::umask(027);
  write_file_atomic(dir.path + "/fresh", "bytes");
  ::umask(old_mask);
  REQUIRE(::stat((dir.path + "/fresh").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0640);
}

TEST_CASE("a log line goes after the build's own output, even an unfinished last line", "[files]") {
  ScratchDir dir;
  const std::string log = dir.path + "/build.log";
  append_log_line(log, "=== one");
  write_file_atomic(log, read_file(log) + "progress 100%");  // a build's last words, no newline
  append_log_line(log, "=== two");
  CHECK(read_file(log) == "=== one\nprogress 100%\n=== two\n");
  CHECK(!path_exists(log + ".torn"));
}

TEST_CASE("a directory of the user's own is not made a corpus", "[files][corpus]") {
  ScratchDir dir;
  const std::string project = dir.path + "/project";
  make_dirs(project + "/objects");
  write_file_atomic(project + "/objects/keep.o", "mine");
  CorpusManifest fresh;
  CHECK(code_of([&] { Corpus::create_or_open(project, fresh); }) == kExitBadInput);
  CHECK(!path_exists(project + "/" + kCorpusManifestName));
  CHECK(!path_exists(project + "/blobs"));
  CHECK(read_file(project + "/objects/keep.o") == "mine");
  make_dirs(dir.path + "/empty");
  Corpus::create_or_open(dir.path + "/empty", fresh);  // an empty directory becomes one
  CHECK(Corpus::looks_like_corpus(dir.path + "/empty"));
}

TEST_CASE("a file written from pieces holds them in order, past the kernel's limit on one write", "[files]") {
  ScratchDir dir;
  // More pieces than one writev takes (IOV_MAX is 1024), empty ones, and one large
  // enough that a single call may write only part of it.
  std::vector<std::string> parts;
  for (int i = 0; i < 3000; ++i) parts.push_back(i % 7 == 0 ? std::string() : std::to_string(i) + ",");
  parts.push_back(std::string(5 << 20, 'z'));
  std::vector<std::string_view> pieces(parts.begin(), parts.end());
  std::string whole;
  for (const std::string& p : parts) whole += p;
  const std::string path = dir.path + "/joined";
  write_file_atomic(path, "an older, longer file that the pieces replace whole");
  write_file_atomic(path, pieces, Durability::kAtomic);
  CHECK(read_file(path) == whole);
}

TEST_CASE("an output that is a symlink is written through to its target", "[files]") {
  ScratchDir dir;
  std::string target = dir.path + "/real.o", link = dir.path + "/link.o", chain = dir.path + "/chain.o";
  write_file_atomic(target, "old");
  REQUIRE(::symlink("real.o", link.c_str()) == 0);       // relative target
  REQUIRE(::symlink(link.c_str(), chain.c_str()) == 0);  // a link to a link
  write_file_atomic(chain, "new");
  struct stat st {};
  REQUIRE(::lstat(link.c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  REQUIRE(::lstat(chain.c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  CHECK(read_file(target) == "new");

  std::string dangling = dir.path + "/dangling.o";
  REQUIRE(::symlink("made.o", dangling.c_str()) == 0);
  write_file_atomic(dangling, "made");
  CHECK(read_file(dir.path + "/made.o") == "made");

  std::string loop = dir.path + "/loop.o";
  REQUIRE(::symlink("loop.o", loop.c_str()) == 0);
  CHECK(code_of([&] { write_file_atomic(loop, "x"); }) == kExitIo);
}

TEST_CASE("a device as input is refused instead of read without end", "[files]") {
  try {
    read_file("/dev/zero");
    FAIL("expected an error");
  } catch (const KilnError& e) {
    CHECK(e.code() == kExitBadInput);
    CHECK(std::string(e.what()) == "/dev/zero: is a character device, not a regular file");
  }
  ScratchDir dir;
  CHECK(code_of([&] { read_file(dir.path); }) == kExitBadInput);
}

TEST_CASE("a mapped input keeps its bytes when the file is replaced, and refuses what read_file refuses", "[files]") {
  ScratchDir dir;
  const std::string path = dir.path + "/lib.rlib";
  write_file_atomic(path, "!<arch>\nfirst", Durability::kAtomic);
  {
    MappedFile mapped(path);
    CHECK(mapped.bytes() == "!<arch>\nfirst");
    // The rustc wrapper writes the archive it has mapped over itself: the mapping keeps
    // the old file's bytes while the new one is written from them.
    write_file_atomic(path, std::vector<std::string_view>{mapped.bytes().substr(0, 8), "second"}, Durability::kAtomic);
    CHECK(mapped.bytes() == "!<arch>\nfirst");
  }
  CHECK(MappedFile(path).bytes() == "!<arch>\nsecond");
  write_file_atomic(dir.path + "/empty", "", Durability::kAtomic);
  CHECK(MappedFile(dir.path + "/empty").bytes().empty());
  CHECK(code_of([&] { MappedFile m("/dev/zero"); }) == kExitBadInput);
  CHECK(code_of([&] { MappedFile m(dir.path); }) == kExitBadInput);
  CHECK(code_of([&] { MappedFile m(dir.path + "/missing"); }) != kExitOk);
  const std::string fifo = dir.path + "/in.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(code_of([&] { MappedFile m(fifo); }) == kExitBadInput);  // refused, not waited on
}

TEST_CASE("a pipe is read whole as an input", "[files]") {
  ScratchDir dir;
  std::string fifo = dir.path + "/in.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  pid_t child = ::fork();
  if (child == 0) {
    int fd = ::open(fifo.c_str(), O_WRONLY);
    ssize_t n = ::write(fd, "BC\xC0\xDE", 4);
    ::_exit(n == 4 ? 0 : 1);
  }
  CHECK(read_file(fifo) == "BC\xC0\xDE");
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("an append after a torn last line starts on a fresh line and keeps the fragment aside", "[files][corpus]") {
  ScratchDir dir;
  Corpus c = Corpus::create_or_open(dir.path + "/c", {});
  std::string a = c.store_blob("aaaa"), b = c.store_blob("bbbb");
  c.append_module(record_for(a, "/one"));
  {  // a writer that died mid-record (a full disk, kill -9)
    int fd = ::open((dir.path + "/c/modules.jsonl").c_str(), O_WRONLY | O_APPEND);
    REQUIRE(::write(fd, "{\"id\":\"0123", 11) == 11);
    ::close(fd);
  }
  c.append_module(record_for(b, "/two"));
  auto mods = Corpus::open(dir.path + "/c").modules();
  REQUIRE(mods.size() == 2);
  CHECK(mods[0].id == a);
  CHECK(mods[1].id == b);
  std::string torn = read_file(dir.path + "/c/modules.jsonl.torn");
  CHECK(torn.find("{\"id\":\"0123") != std::string::npos);
  std::string text = read_file(dir.path + "/c/modules.jsonl");
  CHECK(text.back() == '\n');
  CHECK(text.find("0123") == std::string::npos);
}

TEST_CASE("names that are not UTF-8 survive a round trip through the corpus", "[files][corpus][json]") {
  ScratchDir dir;
  Corpus c = Corpus::create_or_open(dir.path + "/c", {});
  std::string id = c.store_blob("cccc");
  // Invalid bytes, a lone continuation byte, an overlong form, a surrogate, and the
  // private-use code points kiln uses as stand-ins, which must not be taken for bytes.
  std::string weird = std::string(
                          "cp\xff"
                          "dir/\x80/\xC0\xAF/\xED\xA0\x80/") +
      "\xF4\x8F\xBE\x80" + "/\xF4\x8F\xBF" + "/ok-\xC3\xA9-\xF0\x9F\x98\x80";
  c.append_module(record_for(id, weird));
  auto mods = Corpus::open(dir.path + "/c").modules();
  REQUIRE(mods.size() == 1);
  CHECK(mods[0].cwd == weird);
  CHECK(mods[0].args[1] == weird + "/out.o");
  // Every byte value alone.
  for (int v = 0; v < 256; ++v) {
    std::string s(1, static_cast<char>(v));
    simdjson::dom::parser p;
    simdjson::dom::element e;
    std::string doc = "{\"s\":" + json_escape(s) + "}";
    REQUIRE(p.parse(doc).get(e) == simdjson::SUCCESS);
    CHECK(get_string_or(e, "s", "?") == s);
  }
  // Valid UTF-8 is written as it is, so other readers see the same text.
  CHECK(json_escape("ok-\xC3\xA9") == "\"ok-\xC3\xA9\"");
}

TEST_CASE("a manifest file that cannot be read is an error, never an empty corpus", "[files][corpus]") {
  ScratchDir dir;
  Corpus c = Corpus::create_or_open(dir.path + "/c", {});
  c.append_module(record_for(c.store_blob("dddd"), "/d"));
  std::string path = dir.path + "/c/modules.jsonl";
  REQUIRE(::unlink(path.c_str()) == 0);
  REQUIRE(::symlink("modules.jsonl", path.c_str()) == 0);  // a symlink loop
  CHECK(code_of([&] { Corpus::open(dir.path + "/c").modules(); }) == kExitIo);
}

TEST_CASE("numbers out of range in records and manifests are refused with what is wrong", "[files][corpus]") {
  ScratchDir dir;
  Corpus c = Corpus::create_or_open(dir.path + "/c", {});
  std::string id = c.store_blob("eeee");
  std::string line = record_for(id, "/e").to_json();
  std::string negative = line;
  negative.replace(negative.find("\"bytes\":4"), 9, "\"bytes\":-5");
  append_line_locked(dir.path + "/c/modules.jsonl", negative);
  try {
    Corpus::open(dir.path + "/c").modules();
    FAIL("expected an error");
  } catch (const KilnError& e) {
    CHECK(e.code() == kExitBadInput);
    CHECK(std::string(e.what()).find("modules.jsonl:1: module size 'bytes' is negative") != std::string::npos);
  }

  std::string manifest = dir.path + "/c/kiln-corpus.json";
  std::string text = read_file(manifest);
  auto with_version = [&](const std::string& v) {
    std::string t = text;
    t.replace(t.find("\"version\":1"), 11, "\"version\":" + v);
    return t;
  };
  CHECK(code_of([&] { manifest_from_json(with_version("1180591620717411303424"), manifest); }) != kExitOk);
  try {
    manifest_from_json(with_version("1180591620717411303424"), manifest);
  } catch (const KilnError& e) {
    CHECK(std::string(e.what()).find("not valid JSON") == std::string::npos);
  }
  CHECK(code_of([&] { manifest_from_json(with_version("4294967297"), manifest); }) == kExitNewerSchema);
  CHECK(code_of([&] { manifest_from_json(with_version("18446744073709551615"), manifest); }) == kExitNewerSchema);
  CHECK(code_of([&] { manifest_from_json(with_version("\"1\""), manifest); }) == kExitBadInput);
}

TEST_CASE("two merges into the same directory never mix their modules", "[files][corpus]") {
  ScratchDir dir;
  std::vector<std::string> sources;
  for (int s = 0; s < 2; ++s) {
    std::string p = dir.path + "/src" + std::to_string(s);
    Corpus c = Corpus::create_or_open(p, {});
    for (int i = 0; i < 30; ++i) c.append_module(record_for(c.store_blob("m" + std::to_string(s * 100 + i)), p));
    sources.push_back(p);
  }
  std::string out = dir.path + "/out";
  std::vector<pid_t> kids;
  for (int k = 0; k < 4; ++k) {
    pid_t pid = ::fork();
    if (pid == 0) {
      try {
        merge_corpora(k % 2 ? std::vector<std::string>{sources[1]} : sources, out, {}, "merge");
        ::_exit(0);
      } catch (const KilnError& e) {
        ::_exit(e.code());
      }
    }
    kids.push_back(pid);
  }
  int winners = 0;
  for (pid_t pid : kids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    REQUIRE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 0) ++winners;
    else CHECK(WEXITSTATUS(status) == kExitIo);
  }
  CHECK(winners >= 1);
  size_t n = Corpus::open(out).modules().size();
  CHECK((n == 60 || n == 30));
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) {
    CHECK(e.path().filename().string().find("kiln-partial") == std::string::npos);
  }
}
