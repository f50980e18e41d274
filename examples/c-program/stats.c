#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "example.h"

static int compare(const void* a, const void* b) {
  int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return (x > y) - (x < y);
}

struct summary summarize(const int64_t* values, size_t n) {
  struct summary s = {0, 0, 0, INT64_MAX, INT64_MIN};
  if (n == 0) return s;
  int64_t* sorted = malloc(n * sizeof *sorted);
  memcpy(sorted, values, n * sizeof *sorted);
  qsort(sorted, n, sizeof *sorted, compare);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    sum += (double)values[i];
    if (values[i] < s.min) s.min = values[i];
    if (values[i] > s.max) s.max = values[i];
  }
  s.mean = sum / (double)n;
  double var = 0;
  for (size_t i = 0; i < n; ++i) var += ((double)values[i] - s.mean) * ((double)values[i] - s.mean);
  s.deviation = sqrt(var / (double)n);
  s.median = n % 2 ? (double)sorted[n / 2] : ((double)sorted[n / 2 - 1] + (double)sorted[n / 2]) / 2.0;
  free(sorted);
  return s;
}
