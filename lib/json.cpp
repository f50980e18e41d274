#include "json.h"

#include <cmath>
#include <cstdio>

#include "error.h"

namespace kiln {

std::string json_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
  return out;
}

void JsonWriter::comma() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_.push_back(',');
    first_.back() = false;
  }
}

JsonWriter& JsonWriter::begin_object() { comma(); out_.push_back('{'); first_.push_back(true); return *this; }
JsonWriter& JsonWriter::end_object() { out_.push_back('}'); first_.pop_back(); return *this; }
JsonWriter& JsonWriter::begin_array() { comma(); out_.push_back('['); first_.push_back(true); return *this; }
JsonWriter& JsonWriter::end_array() { out_.push_back(']'); first_.pop_back(); return *this; }
JsonWriter& JsonWriter::key(std::string_view k) {
  comma();
  out_ += json_escape(k);
  out_.push_back(':');
  after_key_ = true;
  return *this;
}
JsonWriter& JsonWriter::value(std::string_view s) { comma(); out_ += json_escape(s); return *this; }
JsonWriter& JsonWriter::value(int64_t v) { comma(); out_ += std::to_string(v); return *this; }
JsonWriter& JsonWriter::value(uint64_t v) { comma(); out_ += std::to_string(v); return *this; }
JsonWriter& JsonWriter::value(double v) {
  comma();
  if (!std::isfinite(v)) { out_ += "null"; return *this; }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  out_ += buf;
  return *this;
}
JsonWriter& JsonWriter::value(bool v) { comma(); out_ += v ? "true" : "false"; return *this; }
JsonWriter& JsonWriter::null() { comma(); out_ += "null"; return *this; }
JsonWriter& JsonWriter::raw(std::string_view json) { comma(); out_ += json; return *this; }
JsonWriter& JsonWriter::string_array(std::string_view k, const std::vector<std::string>& items) {
  key(k).begin_array();
  for (const auto& s : items) value(s);
  return end_array();
}

std::string get_string(simdjson::dom::element e, const char* key, const JsonContext& ctx) {
  std::string_view v;
  if (e[key].get(v) != simdjson::SUCCESS)
    throw KilnError(kExitBadInput, ctx.where(), std::string("missing or non-string field '") + key + "'");
  return std::string(v);
}

std::string get_string_or(simdjson::dom::element e, const char* key, std::string fallback) {
  std::string_view v;
  if (e[key].get(v) != simdjson::SUCCESS) return fallback;
  return std::string(v);
}

int64_t get_int(simdjson::dom::element e, const char* key, const JsonContext& ctx) {
  int64_t v;
  if (e[key].get(v) != simdjson::SUCCESS)
    throw KilnError(kExitBadInput, ctx.where(), std::string("missing or non-integer field '") + key + "'");
  return v;
}

int64_t get_int_or(simdjson::dom::element e, const char* key, int64_t fallback) {
  int64_t v;
  if (e[key].get(v) != simdjson::SUCCESS) return fallback;
  return v;
}

double get_double_or(simdjson::dom::element e, const char* key, double fallback) {
  double v;
  if (e[key].get(v) == simdjson::SUCCESS) return v;
  int64_t i;
  if (e[key].get(i) == simdjson::SUCCESS) return static_cast<double>(i);
  return fallback;
}

std::vector<std::string> get_string_array(simdjson::dom::element e, const char* key) {
  std::vector<std::string> out;
  simdjson::dom::array arr;
  if (e[key].get(arr) != simdjson::SUCCESS) return out;
  for (auto item : arr) {
    std::string_view s;
    if (item.get(s) == simdjson::SUCCESS) out.emplace_back(s);
  }
  return out;
}

}  // namespace kiln
