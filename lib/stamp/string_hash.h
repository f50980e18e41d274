// One hash for the writers' string tables (.debug_str, the ELF writer's symbol names):
// eight bytes a step, where std::hash mixes byte by byte. Rust's mangled names run to
// hundreds of bytes, and std::hash on them was a tenth of the ELF writer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace kiln {

inline uint64_t string_hash(std::string_view s) {
  const char* p = s.data();
  size_t n = s.size();
  uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p, n);
  h = (h ^ tail) * 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 29);
}

// For std::unordered_map<std::string_view, T, StringHash>.
struct StringHash {
  size_t operator()(std::string_view s) const { return static_cast<size_t>(string_hash(s)); }
};

}  // namespace kiln
