#ifndef KILN_EXAMPLE_H
#define KILN_EXAMPLE_H
#include <stddef.h>
#include <stdint.h>

struct summary {
  double mean, deviation, median;
  int64_t min, max;
};

struct summary summarize(const int64_t* values, size_t n);
uint64_t checksum(const char* text);
size_t count_words(const char* text);
void reverse_words(const char* in, char* out, size_t size);
#endif
