// lib/base/shard.h: the split of a corpus by module id that --shard K/N uses in
// kiln-census, kiln-emit and kiln-replay.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "error.h"
#include "shard.h"

using namespace kiln;

namespace {

// Ids shaped like the corpus's (32 hex digits), spread like xxh3's: splitmix64.
std::vector<std::string> sample_ids(size_t count) {
  std::vector<std::string> ids;
  uint64_t x = 42;
  auto next = [&] {
    uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  for (size_t i = 0; i < count; ++i) {
    char buf[33];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", (unsigned long long)next(), (unsigned long long)next());
    ids.push_back(buf);
  }
  return ids;
}

int usage_code(const std::string& value) {
  try {
    parse_shard(value);
  } catch (const KilnError& e) {
    REQUIRE(std::string(e.what()).find("--shard " + value + ":") != std::string::npos);
    return e.code();
  }
  return 0;
}

}  // namespace

TEST_CASE("parse_shard reads K/N and refuses anything else with a usage error", "[shard]") {
  Shard s = parse_shard("2/4");
  REQUIRE(s.k == 2);
  REQUIRE(s.n == 4);
  REQUIRE(s.text() == "2/4");
  REQUIRE(s.file_tag() == "shard-2-of-4");
  // 1/1 given is a shard (its own files, for the merge of a script's N shards when N
  // is 1), which holds every module.
  REQUIRE(!parse_shard("1/1").whole());
  REQUIRE(parse_shard("1/1").file_tag() == "shard-1-of-1");
  REQUIRE(in_shard("0123456789abcdef0123456789abcdef", parse_shard("1/1")));
  // A tool's option: not given is the whole corpus; given empty is an error.
  REQUIRE(shard_option("", false).whole());
  REQUIRE(shard_option("3/8", true).text() == "3/8");
  REQUIRE_THROWS_AS(shard_option("", true), KilnError);
  for (const char* bad : {"0/4", "5/4", "1/0", "0/0", "x", "2/4/1", "", "/", "2/", "/4", "-1/4", "+1/4", " 1/4", "1/4 ",
                          "1.0/4", "1/99999999999", "a/b"})
    REQUIRE(usage_code(bad) == kExitUsage);
}

TEST_CASE("shard_of reads the id's first 16 hex digits modulo N", "[shard]") {
  REQUIRE(shard_of("00000000000000000000000000000000", 4) == 1);
  REQUIRE(shard_of("0000000000000005ffffffffffffffff", 4) == 2);  // 5 % 4 == 1
  REQUIRE(shard_of("ffffffffffffffff0000000000000000", 4) == 4);  // 2^64-1 % 4 == 3
  REQUIRE(shard_of("FFFFFFFFFFFFFFFF0000000000000000", 4) == 4);
  REQUIRE(shard_of("0000000000000007", 1) == 1);
  for (const char* bad : {"", "123", "x000000000000000000000000000000", "+000000000000000", "0x00000000000000ff"}) {
    REQUIRE_THROWS_AS(shard_of(bad, 4), KilnError);
  }
}

TEST_CASE("every id is in exactly one shard of N, always the same one", "[shard]") {
  std::vector<std::string> ids = sample_ids(4000);
  for (uint32_t n : {1u, 2u, 3u, 4u, 7u, 16u}) {
    std::vector<size_t> sizes(n);
    for (const auto& id : ids) {
      int holders = 0;
      for (uint32_t k = 1; k <= n; ++k)
        if (in_shard(id, {k, n})) holders++, sizes[k - 1]++;
      REQUIRE(holders == 1);
      REQUIRE(in_shard(id, {shard_of(id, n), n}));
      REQUIRE(shard_of(id, n) == shard_of(std::string(id), n));  // deterministic
    }
    // Roughly balanced: each shard within 20% of an even share (4000/16 = 250 each,
    // a binomial spread of about 15).
    for (size_t size : sizes) {
      REQUIRE(size > ids.size() / n * 8 / 10);
      REQUIRE(size < ids.size() / n * 12 / 10);
    }
  }
}
