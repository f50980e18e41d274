// A map from pointers to 32-bit indices, for numbering one function's values at a time:
// open addressing in one array, no allocation per entry, and clear() keeps the room, so
// an exporter that numbers every instruction of every function allocates only while
// the largest function grows it. (std::unordered_map's node per entry, allocated and
// freed for every instruction, was a quarter of the LLVM-side export's instructions.)
#pragma once
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace kiln {

template <class T>
class PointerIndex {
 public:
  // Forgets every entry in O(1): entries of an older generation count as empty.
  void clear() {
    used_ = 0;
    if (++generation_ == 0) {  // after 2^32 clears: the old marks could match again
      for (Slot& s : slots_) s.generation = 0;
      generation_ = 1;
    }
  }
  size_t size() const { return used_; }

  // Inserts `key`, or gives it a new value.
  void set(const T* key, uint32_t value) {
    if ((used_ + 1) * 2 > slots_.size()) grow();
    Slot& s = slots_[probe(key)];
    if (s.generation != generation_) {
      s.key = key;
      s.generation = generation_;
      ++used_;
    }
    s.value = value;
  }
  // The value of `key`, or null.
  const uint32_t* find(const T* key) const {
    if (slots_.empty()) return nullptr;
    const Slot& s = slots_[probe(key)];
    return s.generation == generation_ ? &s.value : nullptr;
  }
  size_t count(const T* key) const { return find(key) ? 1 : 0; }
  // As std::unordered_map::at: a missing key is a caller's defect.
  uint32_t at(const T* key) const {
    const uint32_t* v = find(key);
    if (!v) throw std::out_of_range("PointerIndex::at: no such key");
    return *v;
  }

 private:
  struct Slot {
    const T* key = nullptr;
    uint32_t generation = 0;  // occupied when it is the map's current generation
    uint32_t value = 0;
  };

  // The slot that holds `key`, or the empty one where it would go (linear probing;
  // the table is at most half full).
  size_t probe(const T* key) const {
    const size_t mask = slots_.size() - 1;
    size_t at = static_cast<size_t>((reinterpret_cast<uintptr_t>(key) >> 3) * 0x9E3779B97F4A7C15ull >> shift_);
    while (slots_[at].generation == generation_ && slots_[at].key != key) at = (at + 1) & mask;
    return at;
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    const uint32_t old_generation = generation_;
    size_t capacity = old.empty() ? 64 : old.size() * 2;
    slots_.assign(capacity, Slot{});
    shift_ = 64;
    for (size_t c = capacity; c > 1; c >>= 1) --shift_;
    generation_ = 1;
    used_ = 0;
    for (const Slot& s : old)
      if (s.generation == old_generation) {
        Slot& to = slots_[probe(s.key)];
        to = {s.key, generation_, s.value};
        ++used_;
      }
  }

  std::vector<Slot> slots_;  // a power of two in size
  unsigned shift_ = 64;      // 64 - log2(slots_.size())
  uint32_t generation_ = 1;
  size_t used_ = 0;
};

}  // namespace kiln
