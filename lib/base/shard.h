// Sharding a corpus across processes or machines (--shard K/N in kiln-census,
// kiln-emit and kiln-replay): a module belongs to shard K of N when the first 16 hex
// digits of its id (xxh3-128, so already uniformly spread) read as a uint64, modulo N,
// are K-1. The split depends only on the id, so every machine agrees on it without
// talking to the others, and the N shards together hold every module exactly once.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

struct Shard {
  uint32_t k = 1, n = 1;  // shard k of n, 1 <= k <= n
  // Given (--shard, even 1/1): a shard's outputs go to its own files, for the merge a
  // script of N shards runs whatever N is; not given: the whole corpus's files.
  bool given = false;
  bool whole() const { return n == 1 && !given; }
  std::string text() const { return std::to_string(k) + "/" + std::to_string(n); }
  // "shard-K-of-N": what per-shard output files are named with.
  std::string file_tag() const { return "shard-" + std::to_string(k) + "-of-" + std::to_string(n); }
};

// Parses "K/N". Anything else (0/4, 5/4, 1/0, x, 2/4/1) is a KilnError (kExitUsage)
// naming `option` and the value.
Shard parse_shard(const std::string& value, const std::string& option = "--shard");
// A tool's --shard: the whole corpus (1/1) when the option was not `given`, else
// parse_shard(value) (an empty value is an error too).
Shard shard_option(const std::string& value, bool given, const std::string& option = "--shard");
// The shard (1..n) of a module id; a KilnError (kExitBadInput) when the id does not
// start with 16 hex digits.
uint32_t shard_of(const std::string& id, uint32_t n);
bool in_shard(const std::string& id, Shard shard);

}  // namespace kiln

namespace kiln {

// The per-shard files DIR/STEM.shard-K-of-N.EXT that are there, ordered by N then K:
// what a merge takes when it is given none.
std::vector<std::string> find_shard_files(const std::string& dir, const std::string& stem, const std::string& ext);

}  // namespace kiln
