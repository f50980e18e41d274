// A small JSON writer: kiln writes JSON Lines records and reports. No third-party
// library, so the LLVM-free core (kiln-replay-flat) writes its reports with it too.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// Builds one JSON value as text. Keys and values are added in order; the writer
// inserts commas itself, so callers only say what nests where.
class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);
  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(int64_t v);
  JsonWriter& value(uint64_t v);
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(unsigned v) { return value(static_cast<uint64_t>(v)); }
  JsonWriter& value(long long v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(unsigned long long v) { return value(static_cast<uint64_t>(v)); }
  JsonWriter& value(double v);
  JsonWriter& value(bool v);
  JsonWriter& null();
  JsonWriter& raw(std::string_view json);  // an already-serialised value
  template <class T>
  JsonWriter& field(std::string_view k, const T& v) {
    return key(k).value(v);
  }
  JsonWriter& string_array(std::string_view k, const std::vector<std::string>& items);
  const std::string& str() const { return out_; }

 private:
  void comma();
  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written yet
  bool after_key_ = false;
};

// A JSON string literal for any bytes: bytes that are not well-formed UTF-8 become
// U+10FF00 + byte, so json_string_bytes gives back exactly the bytes written.
std::string json_escape(std::string_view s);
std::string json_string_bytes(std::string_view json_string_value);

}  // namespace kiln
