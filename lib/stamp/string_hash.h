// One hash for the writers' string tables (.debug_str, the ELF writer's symbol names):
// eight bytes a step, where std::hash mixes byte by byte. Rust's mangled names run to
// hundreds of bytes, and std::hash on them was a tenth of the ELF writer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace kiln {

// Two words folded into one by a 64x64->128-bit multiply, as wyhash mixes.
inline uint64_t hash_fold(uint64_t a, uint64_t b) {
  const unsigned __int128 product = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(product) ^ static_cast<uint64_t>(product >> 64);
}

inline uint64_t string_hash(std::string_view s) {
  const char* p = s.data();
  const size_t n = s.size();
  uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
  // Sixteen bytes a step, one multiply each: most names are long mangled ones (82
  // bytes on average in regex's test corpus), and eight bytes a step was a dependent
  // chain of a multiply and a shift per word. The last bytes are read as whole words
  // that may overlap what was mixed already (the length, mixed in first, tells such
  // strings apart), not copied by a memcpy of a variable size: that call was most of
  // the hash on short names. Only lookups depend on the values: the tables give ids
  // and offsets in insertion order.
  uint64_t a = 0, b = 0;
  if (n > 16) {
    const char* last = p + n - 16;
    for (; p < last; p += 16) {
      std::memcpy(&a, p, 8), std::memcpy(&b, p + 8, 8);
      h = hash_fold(a ^ h, b ^ 0xe7037ed1a0b428dbull);
    }
    std::memcpy(&a, last, 8), std::memcpy(&b, last + 8, 8);
  } else if (n >= 8) {
    std::memcpy(&a, p, 8), std::memcpy(&b, p + n - 8, 8);
  } else if (n >= 4) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4), std::memcpy(&hi, p + n - 4, 4);
    a = uint64_t(hi) << 32 | lo;
  } else if (n) {  // an empty view's data may be null: nothing is read from it
    a = uint64_t(uint8_t(p[0])) | uint64_t(uint8_t(p[n / 2])) << 8 | uint64_t(uint8_t(p[n - 1])) << 16;
  }
  return hash_fold(a ^ h ^ 0xa0761d6478bd642full, b ^ 0x8ebc6af09c88c6e3ull);
}

// Distinct strings and the id each was first given: open addressing over a
// power-of-two table, with no allocation per string (std::unordered_map allocates a
// node for each, which made up much of the ELF writer's time on modules of thousands
// of symbols). The strings are views; what they view must outlive the index.
class StringIndex {
 public:
  // Empties the index, with room for `expected` strings before it grows.
  void reset(size_t expected) {
    size_t capacity = 16;
    while (capacity < 2 * expected) capacity *= 2;
    slots_.assign(capacity, Slot{});
    count_ = 0;
  }
  // The id of a string equal to `s` given earlier, or else `id` (below 2^32 - 1, which
  // marks an empty slot), which `s` now has. `inserted` tells which.
  uint32_t insert(std::string_view s, uint32_t id, bool* inserted = nullptr) {
    if (2 * (count_ + 1) > slots_.size()) grow();
    const uint64_t h = string_hash(s);
    const uint32_t tag = static_cast<uint32_t>(h >> 32);
    const size_t mask = slots_.size() - 1;
    for (size_t at = static_cast<size_t>(h) & mask;; at = (at + 1) & mask) {
      Slot& slot = slots_[at];
      if (slot.id == kEmpty) {
        slot = Slot{s, id, tag};
        ++count_;
        if (inserted) *inserted = true;
        return id;
      }
      if (slot.tag == tag && slot.key == s) {
        if (inserted) *inserted = false;
        return slot.id;
      }
    }
  }

 private:
  static constexpr uint32_t kEmpty = ~0u;
  struct Slot {
    std::string_view key;
    uint32_t id = kEmpty;
    uint32_t tag = 0;  // the hash's high half, compared before the strings
  };
  // Out of line, so that insert, small without it, is inlined into its callers' loops.
  [[gnu::noinline, gnu::cold]] void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 16 : 2 * old.size(), Slot{});
    const size_t mask = slots_.size() - 1;
    for (const Slot& o : old) {
      if (o.id == kEmpty) continue;
      size_t at = static_cast<size_t>(string_hash(o.key)) & mask;
      while (slots_[at].id != kEmpty) at = (at + 1) & mask;
      slots_[at] = o;
    }
  }
  std::vector<Slot> slots_;
  size_t count_ = 0;
};

}  // namespace kiln
