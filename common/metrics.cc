// The Prometheus text exposition of common/metrics.h: series, escaping, number formatting and
// the registry's order.
#include "common/metrics.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace trainctl::metrics {
namespace {

[[noreturn]] void ProgrammerError(const std::string& what) {
  spdlog::critical("metrics: {}", what);
  std::abort();
}

bool ValidMetricName(const std::string& name, bool colons) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                    (colons && c == ':') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

void AtomicAddDouble(std::atomic<double>* target, double d) {
  double old = target->load(std::memory_order_relaxed);
  while (!target->compare_exchange_weak(old, old + d, std::memory_order_relaxed)) {
  }
}

// `text` with \ as \\, a newline as \n and, when `quote`, " as \".
std::string EscapeText(const std::string& text, bool quote) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

// A gauge whose series a function computes at each scrape, written sorted by labels.
class GaugeFunctionFamily : public Family {
 public:
  GaugeFunctionFamily(std::string name, std::string help, std::vector<std::string> labels,
                      Registry::GaugeFunction fn)
      : Family(std::move(name), std::move(help), "gauge", std::move(labels)), fn_(std::move(fn)) {}

 private:
  void WriteSeries(std::string* out) const override {
    std::vector<Sample> samples = fn_();
    std::sort(samples.begin(), samples.end(),
              [](const Sample& a, const Sample& b) { return a.labels < b.labels; });
    for (size_t i = 0; i < samples.size(); ++i) {
      CheckArity(samples[i].labels);
      if (i > 0 && samples[i].labels == samples[i - 1].labels) {
        ProgrammerError(absl::StrCat(name(), ": two samples with the labels ",
                                     absl::StrJoin(samples[i].labels, ",")));
      }
      absl::StrAppend(out, name(), LabelText(samples[i].labels), " ", FormatValue(samples[i].value),
                      "\n");
    }
  }

  const Registry::GaugeFunction fn_;
};

}  // namespace

// --- Series ------------------------------------------------------------------------------------

void Gauge::Add(double d) { AtomicAddDouble(&value_, d); }

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double v) {
  // The first bucket whose bound is >= v (le: less than or equal).
  const size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  AtomicAddDouble(&sum_, v);
}

std::vector<uint64_t> Histogram::BucketCounts() const {
  std::vector<uint64_t> out(bounds_.size() + 1);
  for (size_t i = 0; i < out.size(); ++i) out[i] = counts_[i].load(std::memory_order_relaxed);
  return out;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  double bound = start;
  for (int i = 0; i < count; ++i, bound *= factor) out.push_back(bound);
  return out;
}

// --- Text --------------------------------------------------------------------------------------

std::string EscapeLabelValue(const std::string& value) { return EscapeText(value, /*quote=*/true); }

std::string EscapeHelp(const std::string& help) { return EscapeText(help, /*quote=*/false); }

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // The shortest form that reads back exactly; fixed rather than scientific for magnitudes from
  // 1e-4 to 1e15 (0.0001, 1795728795.888), as people read bucket bounds and timestamps.
  char buf[64];
  std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), v);
  const double magnitude = std::fabs(v);
  if (std::find(buf, r.ptr, 'e') != r.ptr && magnitude >= 1e-4 && magnitude < 1e15) {
    r = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed);
  }
  return std::string(buf, r.ptr);
}

// --- Families ----------------------------------------------------------------------------------

Family::Family(std::string name, std::string help, std::string type,
               std::vector<std::string> labels)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(std::move(type)),
      labels_(std::move(labels)) {
  if (!ValidMetricName(name_, /*colons=*/true))
    ProgrammerError(absl::StrCat("bad name \"", name_, "\""));
  for (const std::string& label : labels_) {
    if (!ValidMetricName(label, false) || label.rfind("__", 0) == 0 || label == "le") {
      ProgrammerError(absl::StrCat(name_, ": bad label name \"", label, "\""));
    }
  }
}

void Family::Write(std::string* out) const {
  absl::StrAppend(out, "# HELP ", name_, " ", EscapeHelp(help_), "\n# TYPE ", name_, " ", type_,
                  "\n");
  WriteSeries(out);
}

std::string Family::LabelText(const LabelValues& values, const std::string& extra) const {
  if (values.empty() && extra.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    absl::StrAppend(&out, i > 0 ? "," : "", labels_[i], "=\"", EscapeLabelValue(values[i]), "\"");
  }
  if (!extra.empty()) absl::StrAppend(&out, values.empty() ? "" : ",", extra);
  return out + "}";
}

void Family::CheckArity(const LabelValues& values) const {
  if (values.size() != labels_.size()) {
    ProgrammerError(absl::StrCat(name_, ": ", values.size(), " label values for ", labels_.size(),
                                 " labels (", absl::StrJoin(labels_, ","), ")"));
  }
}

CounterFamily::CounterFamily(std::string name, std::string help, std::vector<std::string> labels)
    : SeriesFamily(std::move(name), std::move(help), "counter", std::move(labels),
                   [] { return std::make_unique<Counter>(); }) {}

void CounterFamily::WriteSeries(std::string* out) const {
  for (const auto& [labels, counter] : Snapshot()) {
    absl::StrAppend(out, name(), LabelText(labels), " ", counter->value(), "\n");
  }
}

GaugeFamily::GaugeFamily(std::string name, std::string help, std::vector<std::string> labels)
    : SeriesFamily(std::move(name), std::move(help), "gauge", std::move(labels),
                   [] { return std::make_unique<Gauge>(); }) {}

void GaugeFamily::WriteSeries(std::string* out) const {
  for (const auto& [labels, gauge] : Snapshot()) {
    absl::StrAppend(out, name(), LabelText(labels), " ", FormatValue(gauge->value()), "\n");
  }
}

HistogramFamily::HistogramFamily(std::string name, std::string help,
                                 std::vector<std::string> labels, std::vector<double> bounds)
    : SeriesFamily(std::move(name), std::move(help), "histogram", std::move(labels),
                   [bounds] { return std::make_unique<Histogram>(bounds); }) {
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]) || (i > 0 && bounds[i] <= bounds[i - 1])) {
      ProgrammerError(absl::StrCat(this->name(), ": bucket bounds must increase and be finite"));
    }
  }
}

void HistogramFamily::WriteSeries(std::string* out) const {
  for (const auto& [labels, histogram] : Snapshot()) {
    // The count is the buckets' sum, so that le="+Inf" and _count always agree.
    const std::vector<uint64_t> counts = histogram->BucketCounts();
    const std::vector<double>& bounds = histogram->bounds();
    uint64_t cumulative = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      cumulative += counts[i];
      const std::string le = i < bounds.size() ? FormatValue(bounds[i]) : "+Inf";
      absl::StrAppend(out, name(), "_bucket", LabelText(labels, absl::StrCat("le=\"", le, "\"")),
                      " ", cumulative, "\n");
    }
    absl::StrAppend(out, name(), "_sum", LabelText(labels), " ", FormatValue(histogram->sum()),
                    "\n", name(), "_count", LabelText(labels), " ", cumulative, "\n");
  }
}

// --- Registry ----------------------------------------------------------------------------------

Family& Registry::Add(std::unique_ptr<Family> family) {
  absl::MutexLock lock(&mu_);
  std::unique_ptr<Family>& slot = families_[family->name()];
  if (slot != nullptr) ProgrammerError(absl::StrCat(family->name(), " is registered twice"));
  slot = std::move(family);
  return *slot;
}

CounterFamily& Registry::AddCounter(const std::string& name, const std::string& help,
                                    std::vector<std::string> labels) {
  return static_cast<CounterFamily&>(
      Add(std::make_unique<CounterFamily>(name, help, std::move(labels))));
}

GaugeFamily& Registry::AddGauge(const std::string& name, const std::string& help,
                                std::vector<std::string> labels) {
  return static_cast<GaugeFamily&>(
      Add(std::make_unique<GaugeFamily>(name, help, std::move(labels))));
}

HistogramFamily& Registry::AddHistogram(const std::string& name, const std::string& help,
                                        std::vector<std::string> labels,
                                        std::vector<double> bounds) {
  return static_cast<HistogramFamily&>(
      Add(std::make_unique<HistogramFamily>(name, help, std::move(labels), std::move(bounds))));
}

void Registry::AddGaugeFunction(const std::string& name, const std::string& help,
                                std::vector<std::string> labels, GaugeFunction fn) {
  Add(std::make_unique<GaugeFunctionFamily>(name, help, std::move(labels), std::move(fn)));
}

std::string Registry::Expose() const {
  std::vector<const Family*> families;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, family] : families_) families.push_back(family.get());
  }
  std::string out;
  for (const Family* family : families) family->Write(&out);
  return out;
}

}  // namespace trainctl::metrics
