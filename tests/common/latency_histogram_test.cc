// LatencyHistogram: percentiles within a bucket's 5% of the true value, the max exact.
#include "common/latency_histogram.h"

#include <catch2/catch.hpp>

namespace trainctl {
namespace {

TEST_CASE("percentiles of a histogram are within 5% of the samples'") {
  LatencyHistogram h;
  CHECK(h.Percentile(50) == 0);
  for (int i = 1; i <= 1000; ++i) h.Record(i / 100.0);  // 0.01 .. 10 ms
  CHECK(h.count() == 1000);
  CHECK(h.max_ms() == 10.0);
  CHECK(h.Percentile(50) >= 5.0);
  CHECK(h.Percentile(50) <= 5.0 * 1.05);
  CHECK(h.Percentile(99) >= 9.9);
  CHECK(h.Percentile(99) <= 9.9 * 1.05);
  // Never above the largest sample.
  CHECK(h.Percentile(100) == 10.0);
}

TEST_CASE("a histogram holds durations below a microsecond and above an hour") {
  LatencyHistogram h;
  h.Record(0.0);
  h.Record(5'000'000'000.0);
  CHECK(h.count() == 2);
  CHECK(h.Percentile(50) < 0.0011);
  CHECK(h.Percentile(100) == 5'000'000'000.0);
}

}  // namespace
}  // namespace trainctl
