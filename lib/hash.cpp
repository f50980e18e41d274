#include "hash.h"

#include <xxhash.h>

#include <cstdio>

namespace kiln {

std::string xxh3_128_hex(const void* data, size_t size) {
  XXH128_hash_t h = XXH3_128bits(data, size);
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return std::string(text, 32);
}

uint64_t xxh3_64(std::string_view bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

bool is_content_id(std::string_view text) {
  if (text.size() != 32) return false;
  for (char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace kiln
