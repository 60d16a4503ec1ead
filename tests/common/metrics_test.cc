// common/metrics.h: the exact text of each metric type, escaping, histogram buckets, stable
// order, concurrent updates; and the strict parser (prometheus_text.h) that the integration
// tests read /metrics with, on good and bad text.
#include "common/metrics.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <thread>
#include <vector>

#include "tests/common/prometheus_text.h"

namespace trainctl::metrics {
namespace {

TEST_CASE("a registry writes counters, gauges and histograms in the text format, by name") {
  Registry r;
  CounterFamily& ended = r.AddCounter("t_ended_total", "Jobs ended.", {"project", "state"});
  ended.With({"vision", "SUCCEEDED"}).Increment(2);
  ended.With({"audio", "FAILED"}).Increment();
  r.AddGauge("t_up", "Whether it is up.", {}).With({}).Set(1);
  Histogram& h = r.AddHistogram("t_wait_seconds", "Wait.", {}, {0.5, 1}).With({});
  h.Observe(0.25);
  h.Observe(1);  // le is inclusive: in the bucket of 1
  h.Observe(7);
  r.AddGaugeFunction("t_jobs", "Jobs now.", {"state"}, [] {
    return std::vector<Sample>{{{"RUNNING"}, 3}, {{"QUEUED"}, 0.5}};
  });
  CHECK(r.Expose() ==
        "# HELP t_ended_total Jobs ended.\n"
        "# TYPE t_ended_total counter\n"
        "t_ended_total{project=\"audio\",state=\"FAILED\"} 1\n"
        "t_ended_total{project=\"vision\",state=\"SUCCEEDED\"} 2\n"
        "# HELP t_jobs Jobs now.\n"
        "# TYPE t_jobs gauge\n"
        "t_jobs{state=\"QUEUED\"} 0.5\n"
        "t_jobs{state=\"RUNNING\"} 3\n"
        "# HELP t_up Whether it is up.\n"
        "# TYPE t_up gauge\n"
        "t_up 1\n"
        "# HELP t_wait_seconds Wait.\n"
        "# TYPE t_wait_seconds histogram\n"
        "t_wait_seconds_bucket{le=\"0.5\"} 1\n"
        "t_wait_seconds_bucket{le=\"1\"} 2\n"
        "t_wait_seconds_bucket{le=\"+Inf\"} 3\n"
        "t_wait_seconds_sum 8.25\n"
        "t_wait_seconds_count 3\n");
}

TEST_CASE("label values and help texts are escaped, and read back by the parser") {
  Registry r;
  r.AddCounter("t_total", "A \\ and a\nnewline.", {"v"})
      .With({"back\\slash \"quoted\"\nnext line"})
      .Increment();
  const std::string text = r.Expose();
  CHECK(text ==
        "# HELP t_total A \\\\ and a\\nnewline.\n"
        "# TYPE t_total counter\n"
        "t_total{v=\"back\\\\slash \\\"quoted\\\"\\nnext line\"} 1\n");
  absl::StatusOr<testing::Exposition> parsed = testing::ParseExposition(text);
  REQUIRE(parsed.ok());
  CHECK(parsed->families.at("t_total").help == "A \\ and a\nnewline.");
  CHECK(parsed->Value("t_total", {{"v", "back\\slash \"quoted\"\nnext line"}}) == 1);
}

TEST_CASE("a histogram with labels puts le last and counts every observation once") {
  Registry r;
  HistogramFamily& f = r.AddHistogram("t_seconds", "S.", {"project"}, ExponentialBuckets(1, 10, 3));
  CHECK(ExponentialBuckets(1, 10, 3) == std::vector<double>{1, 10, 100});
  f.With({"a"}).Observe(0.5);
  f.With({"a"}).Observe(50);
  f.With({"b"}).Observe(1000);
  absl::StatusOr<testing::Exposition> parsed = testing::ParseExposition(r.Expose());
  REQUIRE(parsed.ok());
  CHECK(parsed->Value("t_seconds_bucket", {{"project", "a"}, {"le", "1"}}) == 1);
  CHECK(parsed->Value("t_seconds_bucket", {{"project", "a"}, {"le", "100"}}) == 2);
  CHECK(parsed->Value("t_seconds_bucket", {{"project", "b"}, {"le", "100"}}) == 0);
  CHECK(parsed->Value("t_seconds_bucket", {{"project", "b"}, {"le", "+Inf"}}) == 1);
  CHECK(parsed->Value("t_seconds_count") == 3);
  CHECK(parsed->Value("t_seconds_sum", {{"project", "a"}}) == 50.5);
  CHECK(r.Expose().find("t_seconds_bucket{project=\"a\",le=\"10\"} 1\n") != std::string::npos);
}

TEST_CASE("values are written in their shortest exact form") {
  struct Row {
    double v;
    const char* text;
  };
  const Row rows[] = {{0, "0"},           {3, "3"},
                      {0.25, "0.25"},     {1e-05, "1e-05"},
                      {0.0001, "0.0001"}, {1795728795.888, "1795728795.888"},
                      {0.1, "0.1"},       {-2.5, "-2.5"},
                      {HUGE_VAL, "+Inf"}, {-HUGE_VAL, "-Inf"},
                      {NAN, "NaN"}};
  for (const Row& row : rows) {
    INFO(row.text);
    CHECK(FormatValue(row.v) == row.text);
  }
}

TEST_CASE("counters, gauges and histograms add up exactly under concurrent updates") {
  Registry r;
  Counter& c = r.AddCounter("t_total", "C.", {}).With({});
  Gauge& g = r.AddGauge("t_gauge", "G.", {}).With({});
  Histogram& h = r.AddHistogram("t_seconds", "H.", {}, {1}).With({});
  constexpr int kThreads = 4;
  constexpr int kEach = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        c.Increment();
        g.Add(1);
        h.Observe(0.5);
      }
    });
  }
  // Scrapes meanwhile always parse.
  for (int i = 0; i < 20; ++i) REQUIRE(testing::ParseExposition(r.Expose()).ok());
  for (std::thread& t : threads) t.join();
  CHECK(c.value() == kThreads * kEach);
  CHECK(g.value() == kThreads * kEach);
  CHECK(h.BucketCounts() == std::vector<uint64_t>{kThreads * kEach, 0});
  CHECK(h.sum() == kThreads * kEach * 0.5);
}

TEST_CASE("the parser refuses text Prometheus would refuse or our conventions forbid") {
  const std::string head = "# HELP x_total X.\n# TYPE x_total counter\n";
  const std::string hist = "# HELP h H.\n# TYPE h histogram\n";
  struct Row {
    const char* why;
    std::string text;
  };
  const Row rows[] = {
      {"no newline at the end", head + "x_total 1"},
      {"a sample without its TYPE", "x_total 1\n"},
      {"TYPE without HELP", "# TYPE x_total counter\nx_total 1\n"},
      {"a counter not named _total", "# HELP x X.\n# TYPE x counter\nx 1\n"},
      {"a bad escape", head + "x_total{a=\"\\t\"} 1\n"},
      {"an unterminated label value", head + "x_total{a=\"b} 1\n"},
      {"a bad value", head + "x_total one\n"},
      {"a hex value", head + "x_total 0x10\n"},
      {"the same series twice", head + "x_total{a=\"b\"} 1\nx_total{a=\"b\"} 2\n"},
      {"a sample of another family", head + "y_total 1\n"},
      {"buckets not cumulative", hist + "h_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\n"
                                        "h_sum 1\nh_count 1\n"},
      {"+Inf bucket not the count", hist + "h_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n"},
      {"no _sum", hist + "h_bucket{le=\"+Inf\"} 1\nh_count 1\n"},
  };
  for (const Row& row : rows) {
    INFO(row.why);
    CHECK_FALSE(testing::ParseExposition(row.text).ok());
  }
  CHECK(testing::ParseExposition(head + "x_total{a=\"b\",} 1 1700000000000\n").ok());
}

}  // namespace
}  // namespace trainctl::metrics
