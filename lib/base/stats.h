// Summary statistics for repeated measurements, and a bootstrap confidence interval
// for "how much faster is the candidate": robust to the odd slow run, no normality
// assumed, and deterministic so that a report can be recomputed exactly.
#pragma once
#include <cstdint>
#include <vector>

namespace kiln {

// Each throws std::invalid_argument on an empty input.
double median(const std::vector<double>& values);
double minimum(const std::vector<double>& values);
double maximum(const std::vector<double>& values);
double mean(const std::vector<double>& values);

struct Summary {
  double median = 0, min = 0, max = 0, mean = 0;
};
Summary summarize(const std::vector<double>& values);

// Linear interpolation between order statistics; q in [0, 1]; values need not be sorted.
double quantile(std::vector<double> values, double q);

struct RatioInterval {
  double ratio = 0;  // point estimate
  double low = 0;    // lower end of the 95% confidence interval
  double high = 0;   // upper end
};

inline constexpr uint64_t kDefaultBootstrapSeed = 0x6b696c6e6d656173ULL;  // "kilnmeas"

// median(candidate) / median(baseline), with a percentile-bootstrap 95% interval:
// each resample draws both samples again with replacement (std::mt19937_64 seeded
// with seed), widened where needed so that it always contains the ratio. Identical
// inputs give ratio 1 and a zero-width interval.
RatioInterval ratio_of_medians_bootstrap(const std::vector<double>& baseline, const std::vector<double>& candidate,
                                         int resamples = 10000, uint64_t seed = kDefaultBootstrapSeed);

// The same for paired samples (baseline[k] and candidate[k] measured together, as
// kiln-measure's interleaved pairs are; equal sizes, else std::invalid_argument): each
// resample draws pairs, so that what moved both runs of a pair (the machine's drift)
// stays out of the interval, where drawing the two samples apart put all of it in.
RatioInterval ratio_of_medians_paired_bootstrap(const std::vector<double>& baseline,
                                                const std::vector<double>& candidate, int resamples = 10000,
                                                uint64_t seed = kDefaultBootstrapSeed);

}  // namespace kiln
