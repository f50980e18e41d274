// Content addresses: xxh3-128 of the bytes, written as 32 lower-case hex digits.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln {

std::string xxh3_128_hex(const void* data, size_t size);
inline std::string xxh3_128_hex(std::string_view bytes) { return xxh3_128_hex(bytes.data(), bytes.size()); }
bool is_content_id(std::string_view text);
// xxh3-64 of the bytes: kiln-selection(5)'s `hash BITS` lines match a function name's.
uint64_t xxh3_64(std::string_view bytes);

}  // namespace kiln
