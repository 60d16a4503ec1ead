// Metrics written in the Prometheus text exposition format (version 0.0.4): counters, gauges and
// histograms, each a family of series told apart by label values, kept in one Registry that
// writes them all for a scrape (`GET /metrics`).
//
//   metrics::Registry registry;
//   metrics::CounterFamily& ended = registry.AddCounter(
//       "trainctl_jobs_ended_total", "Jobs that reached a terminal state.", {"project", "state"});
//   ended.With({"vision", "FAILED"}).Increment();
//   metrics::Histogram& turns = registry.AddHistogram(
//       "trainctl_reconcile_turn_seconds", "...", {}, metrics::ExponentialBuckets(1e-4, 2, 18))
//       .With({});
//   turns.Observe(0.0021);
//   registry.AddGaugeFunction("trainctl_jobs", "...", {"project", "state"}, [&] { return ...; });
//   std::string text = registry.Expose();
//
// Names follow Prometheus: [a-zA-Z_:][a-zA-Z0-9_:]* for metrics, [a-zA-Z_][a-zA-Z0-9_]* for
// labels (not starting "__", and "le" is the histograms' own); a bad name, a name registered
// twice or a label value list of the wrong length is a programmer error and aborts.
//
// The output is stable: families by name, series by label values (as strings), a histogram's
// buckets by bound, cumulative, ending with le="+Inf", then _sum and _count. Label values and
// help texts are escaped as the format says (\\, \" and \n; help: \\ and \n).
//
// Thread-safety: every method may be called from any thread. Updating a series (Increment, Set,
// Observe) is a few relaxed atomic operations, no lock. With() takes its family's lock for a map
// lookup; hold the returned reference (series are never removed) where the labels are fixed.
// Expose() holds a family's lock only while it copies the list of its series, and calls the
// gauge functions with no lock of the registry's held.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace trainctl::metrics {

// A monotonically increasing count of events.
class Counter {
 public:
  void Increment(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// A value that goes up and down.
class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double d);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Observations counted in buckets by upper bound (`le`), with their sum.
class Histogram {
 public:
  // REQUIRES: `bounds` strictly increasing, finite.
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);

  const std::vector<double>& bounds() const { return bounds_; }
  // Observations per bucket, not cumulative: bounds().size() + 1 of them, the last past every
  // bound.
  std::vector<uint64_t> BucketCounts() const;
  double sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  const std::vector<double> bounds_;
  const std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<double> sum_{0};
};

// `count` bounds: start, start*factor, start*factor^2, ...
std::vector<double> ExponentialBuckets(double start, double factor, int count);

// Label values, in the order of the family's label names.
using LabelValues = std::vector<std::string>;

// One series of a gauge function: its label values and value.
struct Sample {
  LabelValues labels;
  double value = 0;
};

// Escapes a label value for the text format: \ as \\, " as \", a newline as \n.
std::string EscapeLabelValue(const std::string& value);
// Escapes a help text: \ as \\, a newline as \n.
std::string EscapeHelp(const std::string& help);
// A sample value as the text format writes it: the shortest text that reads back as `v`
// ("0.25", "3", "0.0001", "1e-05"; fixed from 1e-4 to 1e15), "+Inf", "-Inf" or "NaN".
std::string FormatValue(double v);

// What every family shares: its name, help, type and label names, and how it writes itself.
class Family {
 public:
  Family(std::string name, std::string help, std::string type, std::vector<std::string> labels);
  virtual ~Family() = default;
  Family(const Family&) = delete;
  Family& operator=(const Family&) = delete;

  const std::string& name() const { return name_; }
  // Appends the HELP and TYPE lines and every series.
  void Write(std::string* out) const;

 protected:
  // Appends the series' lines.
  virtual void WriteSeries(std::string* out) const = 0;
  // `{a="x",b="y"}` for `values` (with `extra` appended, e.g. le="0.5"); "" when both are empty.
  std::string LabelText(const LabelValues& values, const std::string& extra = "") const;
  // Aborts unless `values` has one value per label name.
  void CheckArity(const LabelValues& values) const;

 private:
  const std::string name_;
  const std::string help_;
  const std::string type_;
  const std::vector<std::string> labels_;
};

// A family of series of type T (Counter, Gauge or Histogram), created on first use.
template <class T>
class SeriesFamily : public Family {
 public:
  using Make = std::function<std::unique_ptr<T>()>;
  SeriesFamily(std::string name, std::string help, std::string type,
               std::vector<std::string> labels, Make make)
      : Family(std::move(name), std::move(help), std::move(type), std::move(labels)),
        make_(std::move(make)) {}

  // The series with these label values (one per label name), created at 0 when new. The
  // reference stays valid as long as the family.
  T& With(const LabelValues& values) ABSL_LOCKS_EXCLUDED(mu_) {
    CheckArity(values);
    absl::MutexLock lock(&mu_);
    std::unique_ptr<T>& series = series_[values];
    if (series == nullptr) series = make_();
    return *series;
  }

 protected:
  // The series now, by label values.
  std::vector<std::pair<LabelValues, const T*>> Snapshot() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    std::vector<std::pair<LabelValues, const T*>> out;
    out.reserve(series_.size());
    for (const auto& [labels, series] : series_) out.emplace_back(labels, series.get());
    return out;
  }

 private:
  const Make make_;
  mutable absl::Mutex mu_;
  std::map<LabelValues, std::unique_ptr<T>> series_ ABSL_GUARDED_BY(mu_);
};

class CounterFamily : public SeriesFamily<Counter> {
 public:
  CounterFamily(std::string name, std::string help, std::vector<std::string> labels);

 private:
  void WriteSeries(std::string* out) const override;
};

class GaugeFamily : public SeriesFamily<Gauge> {
 public:
  GaugeFamily(std::string name, std::string help, std::vector<std::string> labels);

 private:
  void WriteSeries(std::string* out) const override;
};

class HistogramFamily : public SeriesFamily<Histogram> {
 public:
  HistogramFamily(std::string name, std::string help, std::vector<std::string> labels,
                  std::vector<double> bounds);

 private:
  void WriteSeries(std::string* out) const override;
};

class Registry {
 public:
  using GaugeFunction = std::function<std::vector<Sample>()>;

  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // The families below live as long as the registry. Counter names should end in "_total".
  CounterFamily& AddCounter(const std::string& name, const std::string& help,
                            std::vector<std::string> labels) ABSL_LOCKS_EXCLUDED(mu_);
  GaugeFamily& AddGauge(const std::string& name, const std::string& help,
                        std::vector<std::string> labels) ABSL_LOCKS_EXCLUDED(mu_);
  HistogramFamily& AddHistogram(const std::string& name, const std::string& help,
                                std::vector<std::string> labels, std::vector<double> bounds)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A gauge whose series `fn` computes at each scrape (e.g. jobs by state, counted from a
  // snapshot). `fn` runs on the scraping thread; two samples with the same labels are a
  // programmer error.
  void AddGaugeFunction(const std::string& name, const std::string& help,
                        std::vector<std::string> labels, GaugeFunction fn) ABSL_LOCKS_EXCLUDED(mu_);

  // Every family, in the text exposition format.
  std::string Expose() const ABSL_LOCKS_EXCLUDED(mu_);

  // The Content-Type of Expose()'s text.
  static constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";

 private:
  // Takes ownership of `family`; aborts when its name is taken.
  Family& Add(std::unique_ptr<Family> family) ABSL_LOCKS_EXCLUDED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<Family>> families_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainctl::metrics
