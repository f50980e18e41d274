// Reading kiln's JSON back: helpers over simdjson's DOM. The writer is in
// base/json_writer.h.
#pragma once
#include <simdjson.h>

#include <cstdint>
#include <string>
#include <vector>

#include "json_writer.h"

namespace kiln {

// Reading: thin accessors that turn a missing or mistyped field into a KilnError
// naming the file and line. Strings come back as the bytes that were written.
struct JsonContext {
  std::string path;
  size_t line = 0;
  std::string where() const { return line ? path + ":" + std::to_string(line) : path; }
};
// Why simdjson refused a document, in words for an error line.
const char* json_error_reason(simdjson::error_code err);
std::string get_string(simdjson::dom::element e, const char* key, const JsonContext& ctx);
std::string get_string_or(simdjson::dom::element e, const char* key, std::string fallback);
int64_t get_int(simdjson::dom::element e, const char* key, const JsonContext& ctx);
int64_t get_int_or(simdjson::dom::element e, const char* key, int64_t fallback);
double get_double_or(simdjson::dom::element e, const char* key, double fallback);
std::vector<std::string> get_string_array(simdjson::dom::element e, const char* key);

}  // namespace kiln
