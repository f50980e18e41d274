#include "json_writer.h"

#include <cmath>
#include <cstring>
#include <cstdio>

#include "error.h"

namespace kiln {

// Paths and arguments are bytes, and JSON strings are UTF-8. So that any byte string
// survives a round trip, a byte that is not part of well-formed UTF-8 is written as
// the code point U+10FF00 + byte (U+10FF80..U+10FFFF, private use); the same range
// appearing in the input is itself written byte by byte, so decoding is exact.
static bool is_byte_stand_in(const unsigned char* p, size_t left) {
  return left >= 4 && p[0] == 0xF4 && p[1] == 0x8F && (p[2] == 0xBE || p[2] == 0xBF) && (p[3] & 0xC0) == 0x80;
}

// Length of the well-formed UTF-8 sequence at p (2-4), or 0.
static size_t utf8_sequence(const unsigned char* p, size_t left) {
  auto cont = [&](size_t i) { return i < left && (p[i] & 0xC0) == 0x80; };
  unsigned char c = p[0];
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && p[1] < 0xA0) return 0;   // overlong
    if (c == 0xED && p[1] >= 0xA0) return 0;  // surrogates
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && p[1] < 0x90) return 0;   // overlong
    if (c == 0xF4 && p[1] >= 0x90) return 0;  // above U+10FFFF
    return is_byte_stand_in(p, left) ? 0 : 4;
  }
  return 0;
}

static void append_byte_stand_in(std::string& out, unsigned char b) {
  out.push_back(static_cast<char>(0xF4));
  out.push_back(static_cast<char>(0x8F));
  out.push_back(static_cast<char>(b >= 0xC0 ? 0xBF : 0xBE));
  out.push_back(static_cast<char>(0x80 | (b & 0x3F)));
}

std::string json_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t i = 0; i < s.size();) {
    unsigned char c = p[i];
    if (c >= 0x80) {
      size_t n = utf8_sequence(p + i, s.size() - i);
      if (n == 0) {
        append_byte_stand_in(out, c);
        ++i;
      } else {
        out.append(s.data() + i, n);
        i += n;
      }
      continue;
    }
    ++i;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
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

std::string json_string_bytes(std::string_view s) {
  if (std::memchr(s.data(), 0xF4, s.size()) == nullptr) return std::string(s);
  std::string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t i = 0; i < s.size();) {
    if (is_byte_stand_in(p + i, s.size() - i)) {
      out.push_back(static_cast<char>((p[i + 2] == 0xBF ? 0xC0 : 0x80) | (p[i + 3] & 0x3F)));
      i += 4;
    } else {
      out.push_back(s[i++]);
    }
  }
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

JsonWriter& JsonWriter::begin_object() {
  comma();
  out_.push_back('{');
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_object() {
  out_.push_back('}');
  first_.pop_back();
  return *this;
}
JsonWriter& JsonWriter::begin_array() {
  comma();
  out_.push_back('[');
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_array() {
  out_.push_back(']');
  first_.pop_back();
  return *this;
}
JsonWriter& JsonWriter::key(std::string_view k) {
  comma();
  out_ += json_escape(k);
  out_.push_back(':');
  after_key_ = true;
  return *this;
}
JsonWriter& JsonWriter::value(std::string_view s) {
  comma();
  out_ += json_escape(s);
  return *this;
}
JsonWriter& JsonWriter::value(int64_t v) {
  comma();
  out_ += std::to_string(v);
  return *this;
}
JsonWriter& JsonWriter::value(uint64_t v) {
  comma();
  out_ += std::to_string(v);
  return *this;
}
JsonWriter& JsonWriter::value(double v) {
  comma();
  if (!std::isfinite(v)) {
    out_ += "null";
    return *this;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  out_ += buf;
  return *this;
}
JsonWriter& JsonWriter::value(bool v) {
  comma();
  out_ += v ? "true" : "false";
  return *this;
}
JsonWriter& JsonWriter::null() {
  comma();
  out_ += "null";
  return *this;
}
JsonWriter& JsonWriter::raw(std::string_view json) {
  comma();
  out_ += json;
  return *this;
}
JsonWriter& JsonWriter::string_array(std::string_view k, const std::vector<std::string>& items) {
  key(k).begin_array();
  for (const auto& s : items) value(s);
  return end_array();
}

}  // namespace kiln
