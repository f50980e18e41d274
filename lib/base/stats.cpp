#include "stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

namespace kiln {

namespace {

void require_values(const std::vector<double>& values, const char* what) {
  if (values.empty()) throw std::invalid_argument(std::string(what) + " of no values");
}

// Median of scratch[0, n), reordering it; nth_element keeps a resample linear in n.
double median_in_place(std::vector<double>& scratch) {
  size_t n = scratch.size();
  auto mid = scratch.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(scratch.begin(), mid, scratch.end());
  double upper = *mid;
  if (n % 2 == 1) return upper;
  double lower = *std::max_element(scratch.begin(), mid);
  return (lower + upper) / 2;
}

}  // namespace

double median(const std::vector<double>& values) {
  require_values(values, "median");
  std::vector<double> scratch = values;
  return median_in_place(scratch);
}

double minimum(const std::vector<double>& values) {
  require_values(values, "minimum");
  return *std::min_element(values.begin(), values.end());
}

double maximum(const std::vector<double>& values) {
  require_values(values, "maximum");
  return *std::max_element(values.begin(), values.end());
}

double mean(const std::vector<double>& values) {
  require_values(values, "mean");
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

Summary summarize(const std::vector<double>& values) {
  return {median(values), minimum(values), maximum(values), mean(values)};
}

double quantile(std::vector<double> values, double q) {
  require_values(values, "quantile");
  std::sort(values.begin(), values.end());
  double position = std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size() - 1);
  size_t below = static_cast<size_t>(std::floor(position));
  size_t above = std::min(below + 1, values.size() - 1);
  double fraction = position - static_cast<double>(below);
  return values[below] + fraction * (values[above] - values[below]);
}

namespace {

// The bootstrap of both: paired draws one index for both samples, else each its own.
RatioInterval bootstrap(const std::vector<double>& baseline, const std::vector<double>& candidate, int resamples,
                        uint64_t seed, bool paired) {
  require_values(baseline, "ratio of medians");
  require_values(candidate, "ratio of medians");
  if (resamples < 1) throw std::invalid_argument("bootstrap needs at least one resample");
  if (paired && baseline.size() != candidate.size())
    throw std::invalid_argument("paired bootstrap of samples of different sizes");

  RatioInterval result;
  result.ratio = median(candidate) / median(baseline);

  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick_baseline(0, baseline.size() - 1);
  std::uniform_int_distribution<size_t> pick_candidate(0, candidate.size() - 1);
  std::vector<double> base_scratch(baseline.size()), cand_scratch(candidate.size());
  std::vector<double> ratios;
  ratios.reserve(static_cast<size_t>(resamples));
  for (int r = 0; r < resamples; ++r) {
    if (paired) {
      for (size_t k = 0; k < base_scratch.size(); ++k) {
        const size_t j = pick_baseline(rng);
        base_scratch[k] = baseline[j];
        cand_scratch[k] = candidate[j];
      }
    } else {
      for (auto& v : base_scratch) v = baseline[pick_baseline(rng)];
      for (auto& v : cand_scratch) v = candidate[pick_candidate(rng)];
    }
    ratios.push_back(median_in_place(cand_scratch) / median_in_place(base_scratch));
  }
  result.low = quantile(ratios, 0.025);
  result.high = quantile(std::move(ratios), 0.975);
  // With few runs the percentile interval can miss the point estimate (the sample
  // median's own ratio may be rarer than 2.5% among resamples). An interval printed
  // next to a ratio it excludes contradicts it, so it is widened to contain it.
  result.low = std::min(result.low, result.ratio);
  result.high = std::max(result.high, result.ratio);
  return result;
}

}  // namespace

RatioInterval ratio_of_medians_bootstrap(const std::vector<double>& baseline, const std::vector<double>& candidate,
                                         int resamples, uint64_t seed) {
  return bootstrap(baseline, candidate, resamples, seed, false);
}

RatioInterval ratio_of_medians_paired_bootstrap(const std::vector<double>& baseline,
                                                const std::vector<double>& candidate, int resamples, uint64_t seed) {
  return bootstrap(baseline, candidate, resamples, seed, true);
}

}  // namespace kiln
