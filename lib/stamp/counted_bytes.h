// The little-endian, length-counted byte layout shared by kiln's own binary formats:
// flat IR files (kiln-flat(5)) and the stamp service's wire (stamp_service.h). Arrays
// of trivially copyable records and strings go as a u64 count and then their bytes;
// the reader checks every count against the bytes that remain before it allocates.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "error.h"

namespace kiln {

template <class T>
void put_value(std::string& out, const T& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <class T>
void put_array(std::string& out, const std::vector<T>& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  put_value(out, uint64_t(v.size()));
  if (!v.empty()) out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

inline void put_string(std::string& out, std::string_view s) {
  put_value(out, uint64_t(s.size()));
  out.append(s);
}

// Reads what the put_ functions wrote; a count beyond the bytes that remain is
// KilnError(kExitBadInput, what, truncated), before anything is allocated for it.
class CountedReader {
 public:
  CountedReader(std::string_view bytes, std::string what, std::string truncated)
      : rest_(bytes), what_(std::move(what)), truncated_(std::move(truncated)) {}
  size_t left() const { return rest_.size(); }
  [[noreturn]] void fail(const std::string& why) const { throw KilnError(kExitBadInput, what_, why); }
  void need(uint64_t n) const {
    if (n > rest_.size()) fail(truncated_);
  }
  template <class T>
  T value() {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T));
    T v;
    std::memcpy(&v, rest_.data(), sizeof v);
    rest_.remove_prefix(sizeof v);
    return v;
  }
  uint64_t u64() { return value<uint64_t>(); }
  // A count of entries that take at least `min_bytes` each: more than the bytes left
  // can hold is a truncated input, found before anything is allocated for them.
  uint64_t count(size_t min_bytes) {
    const uint64_t n = u64();
    if (n > rest_.size() / min_bytes) fail(truncated_);
    return n;
  }
  template <class T>
  std::vector<T> array() {
    static_assert(std::is_trivially_copyable_v<T>);
    const uint64_t n = u64();
    if (n > rest_.size() / sizeof(T)) fail(truncated_);
    std::vector<T> v(n);
    if (n) std::memcpy(v.data(), rest_.data(), n * sizeof(T));
    rest_.remove_prefix(n * sizeof(T));
    return v;
  }
  std::string string() {
    const uint64_t n = u64();
    need(n);
    std::string s(rest_.substr(0, n));
    rest_.remove_prefix(n);
    return s;
  }

 private:
  std::string_view rest_;
  std::string what_, truncated_;
};

}  // namespace kiln
