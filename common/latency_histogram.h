// LatencyHistogram: durations counted in logarithmic buckets (5% wide, from 1 us to about an
// hour), so that any number of samples takes a fixed few kilobytes and a percentile is read to
// within 5%.
//
//   LatencyHistogram h;
//   h.Record(0.42);                      // milliseconds
//   double p99 = h.Percentile(99);       // the upper edge of the bucket holding the 99th
//
// Thread-safety: none.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

namespace trainctl {

class LatencyHistogram {
 public:
  void Record(double ms) {
    const double us = std::max(ms * 1000.0, 1.0);
    const size_t bucket =
        std::min(kBuckets - 1, static_cast<size_t>(std::log(us) / std::log(kGrowth)));
    ++counts_[bucket];
    ++count_;
    max_ms_ = std::max(max_ms_, ms);
  }

  int64_t count() const { return count_; }
  double max_ms() const { return max_ms_; }

  // The duration `p` percent of the samples are at most (0 < p <= 100), in milliseconds; 0
  // without samples.
  double Percentile(double p) const {
    if (count_ == 0) return 0;
    const double rank = std::ceil(p / 100.0 * static_cast<double>(count_));
    int64_t seen = 0;
    for (size_t b = 0; b < kBuckets; ++b) {
      seen += counts_[b];
      if (static_cast<double>(seen) >= rank) {
        if (b == kBuckets - 1) return max_ms_;  // the last bucket has no upper edge
        return std::min(max_ms_, std::pow(kGrowth, static_cast<double>(b + 1)) / 1000.0);
      }
    }
    return max_ms_;
  }

 private:
  static constexpr double kGrowth = 1.05;
  // 1.05^460 us is about 93 minutes; longer durations share the last bucket.
  static constexpr size_t kBuckets = 460;
  std::array<int64_t, kBuckets> counts_{};
  int64_t count_ = 0;
  double max_ms_ = 0;
};

}  // namespace trainctl
