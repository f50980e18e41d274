// lib/base: what every part of kiln stands on, tested without LLVM (these tests run in
// the -Dllvm=disabled build too).
#include <catch2/catch.hpp>

#include <atomic>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "error.h"
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
