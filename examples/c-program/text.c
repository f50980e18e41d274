#include <ctype.h>
#include <string.h>

#include "example.h"

uint64_t checksum(const char* text) {
  /* FNV-1a, 64-bit. */
  uint64_t h = 1469598103934665603ull;
  for (; *text; ++text) {
    h ^= (unsigned char)*text;
    h *= 1099511628211ull;
  }
  return h;
}

size_t count_words(const char* text) {
  size_t n = 0;
  int in_word = 0;
  for (; *text; ++text) {
    if (isspace((unsigned char)*text)) in_word = 0;
    else if (!in_word) { in_word = 1; ++n; }
  }
  return n;
}

void reverse_words(const char* in, char* out, size_t size) {
  size_t len = strlen(in), pos = 0;
  size_t end = len;
  while (end > 0 && pos + 1 < size) {
    size_t start = end;
    while (start > 0 && in[start - 1] != ' ') --start;
    for (size_t i = start; i < end && pos + 1 < size; ++i) out[pos++] = in[i];
    if (start > 0 && pos + 1 < size) out[pos++] = ' ';
    end = start > 0 ? start - 1 : 0;
  }
  out[pos] = '\0';
}
