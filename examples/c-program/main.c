#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "example.h"

static int64_t collatz_steps(int64_t n) {
  int64_t steps = 0;
  while (n != 1) {
    n = (n % 2) ? 3 * n + 1 : n / 2;
    ++steps;
  }
  return steps;
}

int main(int argc, char** argv) {
  int64_t values[64];
  size_t n = 0;
  for (int64_t i = 1; i <= 27; i += 2) values[n++] = collatz_steps(i);
  struct summary s = summarize(values, n);
  printf("collatz steps of odd 1..27: min %" PRId64 " max %" PRId64 " mean %.4f median %.1f deviation %.4f\n", s.min, s.max,
         s.mean, s.median, s.deviation);
  const char* text = argc > 1 ? argv[1] : "kiln captures real builds and measures back ends";
  char reversed[256];
  reverse_words(text, reversed, sizeof reversed);
  printf("words %zu checksum %016" PRIx64 "\n", count_words(text), checksum(text));
  printf("reversed: %s\n", reversed);
  double x = 0;
  for (int i = 1; i <= 1000; ++i) x += 1.0 / ((double)i * i);
  printf("basel partial sum %.9f\n", x);
  return 0;
}
