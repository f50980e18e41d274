#include "json.h"

#include "error.h"

namespace kiln {

const char* json_error_reason(simdjson::error_code err) {
  switch (err) {
    case simdjson::NUMBER_OUT_OF_RANGE:
      return "a number too large for this kiln to read";
    case simdjson::NUMBER_ERROR:
      return "a number that is malformed or too large";
    case simdjson::UTF8_ERROR:
      return "not valid UTF-8";
    case simdjson::CAPACITY:
    case simdjson::DEPTH_ERROR:
      return "nested or sized beyond what kiln reads";
    default:
      return "not valid JSON";
  }
}

std::string get_string(simdjson::dom::element e, const char* key, const JsonContext& ctx) {
  std::string_view v;
  if (e[key].get(v) != simdjson::SUCCESS)
    throw KilnError(kExitBadInput, ctx.where(), std::string("missing or non-string field '") + key + "'");
  return json_string_bytes(v);
}

std::string get_string_or(simdjson::dom::element e, const char* key, std::string fallback) {
  std::string_view v;
  if (e[key].get(v) != simdjson::SUCCESS) return fallback;
  return json_string_bytes(v);
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
    if (item.get(s) == simdjson::SUCCESS) out.push_back(json_string_bytes(s));
  }
  return out;
}

}  // namespace kiln
