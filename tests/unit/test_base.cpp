// lib/base: what every part of kiln stands on, tested without LLVM (these tests run in
// the -Dllvm=disabled build too).
#include <catch2/catch.hpp>

#include <atomic>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "error.h"
#include "fs.h"
#include "json_writer.h"
#include "parallel.h"
#include "pointer_index.h"
#include "timeutil.h"

using namespace kiln;

TEST_CASE("parallel_for calls the body once for every index", "[parallel]") {
  for (unsigned threads : {1u, 2u, 7u}) {
    for (size_t n : {size_t(0), size_t(1), size_t(5), size_t(1000)}) {
      std::vector<std::atomic<int>> seen(n);
      parallel_for(n, threads, [&](size_t i) { ++seen[i]; });
      for (size_t i = 0; i < n; ++i) REQUIRE(seen[i] == 1);
    }
  }
}

TEST_CASE("parallel_for_workers hands each worker contiguous ranges of the grain", "[parallel]") {
  const size_t n = 1000, grain = 100;
  std::vector<unsigned> owner(n, ~0u);
  parallel_for_workers(n, 3, grain, [&](size_t i, unsigned worker) { owner[i] = worker; });
  for (size_t c = 0; c < n; c += grain)
    for (size_t i = c; i < c + grain; ++i) REQUIRE(owner[i] == owner[c]);
  std::set<unsigned> workers(owner.begin(), owner.end());
  for (unsigned w : workers) REQUIRE(w < 3);
}

TEST_CASE("parallel_for rethrows the first error after every thread has stopped", "[parallel]") {
  for (unsigned threads : {1u, 4u}) {
    std::atomic<size_t> ran{0};
    std::atomic<int> running{0};
    bool stopped_in_time = true;
    try {
      parallel_for(10000, threads, [&](size_t i) {
        ++running;
        ++ran;
        if (i == 3) throw KilnError(kExitUsage, "item", "3 failed");
        --running;
      });
      FAIL("no exception");
    } catch (const KilnError& e) {
      REQUIRE(std::string(e.what()) == "item: 3 failed");
      REQUIRE(e.code() == kExitUsage);
      // Every other thread had finished its body when the error came back.
      stopped_in_time = running.load() == 1;
    }
    REQUIRE(stopped_in_time);
    // After the error no thread takes more than the item it already had.
    REQUIRE(ran.load() < 10000);
  }
}

TEST_CASE("the JSON writer nests, separates and escapes", "[json]") {
  JsonWriter w;
  w.begin_object().field("name", "a\"b\n").key("list").begin_array().value(1).value(-2).value(true).null().end_array();
  w.string_array("strings", {"x", "y"}).field("half", 0.5).end_object();
  REQUIRE(w.str() == R"({"name":"a\"b\n","list":[1,-2,true,null],"strings":["x","y"],"half":0.5})");
}

TEST_CASE("JSON strings carry any bytes and give them back", "[json]") {
  // Bytes that JSON writes as they are (no backslash escapes), so the literal's inside
  // is what a JSON reader hands to json_string_bytes.
  std::string bytes = "plain ";
  for (int b = 0x80; b < 256; ++b) bytes.push_back(static_cast<char>(b));
  bytes += "\xF4\x8F\xBC\x80";  // U+10FF00 itself, the start of the stand-in range
  std::string literal = json_escape(bytes);
  REQUIRE(literal.front() == '"');
  REQUIRE(literal.back() == '"');
  REQUIRE(json_string_bytes(literal.substr(1, literal.size() - 2)) == bytes);
}

// The rustc wrapper's startup phase: the CPU time the process has used, which grows
// with work done and is far below the wall-clock age a process of this test's length has.
TEST_CASE("process_cpu_seconds counts this process's CPU time", "[time]") {
  const double before = process_cpu_seconds();
  CHECK(before > 0);
  volatile uint64_t x = 1;
  Stopwatch clock;
  while (clock.seconds() < 0.05) x = x * 6364136223846793005ull + 1442695040888963407ull;
  const double after = process_cpu_seconds();
  CHECK(after - before >= 0.005);  // 50 ms of busy loop: some of it on a CPU, even on a loaded machine
  CHECK(after - before <= 1.0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(process_cpu_seconds() - after < 0.04);  // sleeping costs no CPU
}

TEST_CASE("PointerIndex maps pointers to indices, forgets them on clear and keeps them as it grows", "[base]") {
  std::vector<int> values(5000);
  PointerIndex<int> index;
  CHECK(index.find(&values[0]) == nullptr);
  for (size_t k = 0; k < values.size(); ++k) index.set(&values[k], static_cast<uint32_t>(k * 3));
  CHECK(index.size() == values.size());
  bool all = true;
  for (size_t k = 0; k < values.size(); ++k) all &= index.at(&values[k]) == k * 3;
  CHECK(all);
  index.set(&values[7], 1);  // a new value, not a second entry
  CHECK(index.size() == values.size());
  CHECK(index.at(&values[7]) == 1);
  int outside = 0;
  CHECK(index.count(&outside) == 0);
  CHECK_THROWS_AS(index.at(&outside), std::out_of_range);
  index.clear();
  CHECK(index.size() == 0);
  CHECK(index.find(&values[7]) == nullptr);
  index.set(&values[9], 42);  // the room kept, the old entries gone
  CHECK(index.size() == 1);
  CHECK(index.at(&values[9]) == 42);
  CHECK(index.count(&values[10]) == 0);
}

// An archive-like rewrite: an index at the front that may grow, then members that each
// lose a head and a tail (a carrier object around the object it carries) and get a new
// header; the file written over in place must be, byte for byte, the pieces joined.
TEST_CASE("rewrite_file_in_place writes the pieces over the file, as if joined", "[fs]") {
  const std::string dir = make_temp_dir("kiln-test-inplace");
  std::mt19937 random(20261206);
  int in_place = 0, refused = 0;
  for (int round = 0; round < 300; ++round) {
    INFO("round " << round);
    std::string original;
    auto bytes = [&](size_t n) {
      std::string b(n, '\0');
      for (char& c : b) c = static_cast<char>(random());
      return b;
    };
    const size_t members = random() % 12, old_index = random() % 200;
    original += bytes(8 + old_index);
    std::vector<std::pair<size_t, size_t>> payloads;  // offset, size in the original
    for (size_t m = 0; m < members; ++m) {
      const size_t head = random() % 2 ? 0 : random() % 700, size = random() % 4 ? random() % 300000 : 0,
                   tail = random() % 2 ? 0 : random() % 900;
      original += bytes(60 + head);
      payloads.push_back({original.size(), size});
      original += bytes(size + tail);
    }
    std::vector<std::string> texts = {bytes(8 + random() % 5000)};  // the new index may be larger
    std::vector<std::string_view> pieces;
    const std::string path = dir + "/file";
    write_file_atomic(path, original, Durability::kAtomic);
    const MappedFile mapped(path);
    const std::string_view view = mapped.bytes();
    for (size_t m = 0; m < members; ++m) texts.push_back(bytes(60 + random() % 2));
    pieces.push_back(texts[0]);
    for (size_t m = 0; m < members; ++m) {
      pieces.push_back(texts[m + 1]);
      pieces.push_back(view.substr(payloads[m].first, payloads[m].second));
    }
    std::string expected;
    for (std::string_view p : pieces) expected += p;
    if (rewrite_file_in_place(path, view, pieces)) {
      ++in_place;
      CHECK(read_file(path) == expected);
    } else {
      ++refused;
      CHECK(read_file(path) == original);  // nothing written
    }
  }
  CHECK(in_place > 200);  // both ways taken: a one-byte longer header can move a piece right
  CHECK(refused > 0);
  // Pieces out of the file's order, or moving further right than the one before: false,
  // and the file as it was.
  const std::string path = dir + "/swap";
  write_file_atomic(path, std::string("0123456789abcdef"), Durability::kAtomic);
  {
    const MappedFile mapped(path);
    const std::string_view v = mapped.bytes();
    CHECK_FALSE(rewrite_file_in_place(path, v, {v.substr(8, 4), v.substr(0, 4)}));
    CHECK_FALSE(rewrite_file_in_place(path, v, {v.substr(0, 2), "xx", v.substr(2, 4)}));
    CHECK(read_file(path) == "0123456789abcdef");
    CHECK(rewrite_file_in_place(path, v, {"AB", v.substr(4, 4), v.substr(12, 4)}));
  }
  CHECK(read_file(path) == "AB4567cdef");
  // Anything but a regular file, or a file changed since it was read, is refused.
  CHECK_THROWS_AS(rewrite_file_in_place(dir, "", {"x"}), KilnError);
  CHECK_THROWS_AS(rewrite_file_in_place(path, "not what it holds", {"x"}), KilnError);
  remove_tree(dir);
}

TEST_CASE("patch_file_in_place writes each patch where it says, and nothing over another file", "[fs]") {
  const std::string dir = make_temp_dir("kiln-test-patch");
  const std::string path = dir + "/file", link = dir + "/link";
  write_file_atomic(path, "0123456789abcdef");
  patch_file_in_place(path, 16, {{2, "XY"}, {15, "Z"}, {0, ""}});
  CHECK(read_file(path) == "01XY456789abcdeZ");
  // The same inode: a hard link sees the writes.
  REQUIRE(::link(path.c_str(), (dir + "/hard").c_str()) == 0);
  patch_file_in_place(path, 16, {{4, "--"}});
  CHECK(read_file(dir + "/hard") == "01XY--6789abcdeZ");
  // A size other than the one read, a write past the end, a symbolic link, a
  // directory: refused, the file as it was.
  CHECK_THROWS_WITH(patch_file_in_place(path, 17, {{0, "!"}}), Catch::Contains("changed since it was read"));
  CHECK_THROWS_AS(patch_file_in_place(path, 16, {{15, "!!"}}), KilnError);
  REQUIRE(::symlink(path.c_str(), link.c_str()) == 0);
  CHECK_THROWS_AS(patch_file_in_place(link, 16, {{0, "!"}}), KilnError);
  CHECK_THROWS_AS(patch_file_in_place(dir, 16, {{0, "!"}}), KilnError);
  CHECK(read_file(path) == "01XY--6789abcdeZ");
  remove_tree(dir);
  // A mapping only where writing over bytes allocates nothing: ext4, XFS, tmpfs; not
  // btrfs, NFS or ZFS, where a full disk would be a SIGBUS.
  for (int64_t magic : {int64_t(0xEF53), int64_t(0x58465342), int64_t(0x01021994)})
    CHECK(file_system_overwrites_in_place(magic));
  for (int64_t magic : {int64_t(0x9123683E), int64_t(0x6969), int64_t(0x2FC12FC1)})
    CHECK_FALSE(file_system_overwrites_in_place(magic));
}
