// The strict Prometheus text-format parser of prometheus_text.h.
#include "tests/common/prometheus_text.h"

#include <cmath>
#include <cstdlib>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace trainctl::testing {
namespace {

bool IsNameChar(char c, bool first, bool colons) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colons && c == ':') ||
         (!first && c >= '0' && c <= '9');
}

bool ValidName(const std::string& s, bool colons) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (!IsNameChar(s[i], i == 0, colons)) return false;
  }
  return true;
}

// A Go-style float: decimal digits, '.', exponent, sign, or +Inf/-Inf/NaN.
std::optional<double> ParseNumber(const std::string& s) {
  if (s == "+Inf" || s == "Inf") return HUGE_VAL;
  if (s == "-Inf") return -HUGE_VAL;
  if (s == "NaN") return NAN;
  if (s.empty()) return std::nullopt;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')) {
      return std::nullopt;
    }
  }
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

// Reads `name{a="x",b="y"} value [timestamp]`.
absl::Status ParseSample(const std::string& line, PromSample* out) {
  size_t i = 0;
  while (i < line.size() && IsNameChar(line[i], i == 0, true)) ++i;
  out->name = line.substr(0, i);
  if (out->name.empty()) return absl::InvalidArgumentError("no metric name");
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (true) {
      if (i < line.size() && line[i] == '}') {
        ++i;
        break;
      }
      const size_t start = i;
      while (i < line.size() && IsNameChar(line[i], i == start, false)) ++i;
      const std::string label = line.substr(start, i - start);
      if (label.empty()) return absl::InvalidArgumentError("bad label name");
      if (i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') {
        return absl::InvalidArgumentError(absl::StrCat("label ", label, ": expected =\""));
      }
      i += 2;
      std::string value;
      while (true) {
        if (i >= line.size()) return absl::InvalidArgumentError("unterminated label value");
        const char c = line[i++];
        if (c == '"') break;
        if (c == '\n') return absl::InvalidArgumentError("raw newline in a label value");
        if (c != '\\') {
          value += c;
          continue;
        }
        if (i >= line.size()) return absl::InvalidArgumentError("dangling backslash");
        const char e = line[i++];
        if (e == '\\' || e == '"') {
          value += e;
        } else if (e == 'n') {
          value += '\n';
        } else {
          return absl::InvalidArgumentError(absl::StrCat("bad escape \\", std::string(1, e)));
        }
      }
      if (!out->labels.emplace(label, value).second) {
        return absl::InvalidArgumentError(absl::StrCat("label ", label, " twice"));
      }
      if (i < line.size() && line[i] == ',') {
        ++i;
      } else if (i >= line.size() || line[i] != '}') {
        return absl::InvalidArgumentError("expected , or } after a label");
      }
    }
  }
  if (i >= line.size() || line[i] != ' ') {
    return absl::InvalidArgumentError("expected a space before the value");
  }
  std::vector<std::string> rest = absl::StrSplit(line.substr(i + 1), ' ');
  if (rest.empty() || rest.size() > 2) {
    return absl::InvalidArgumentError("expected a value and an optional timestamp");
  }
  std::optional<double> value = ParseNumber(rest[0]);
  if (!value) return absl::InvalidArgumentError(absl::StrCat("bad value \"", rest[0], "\""));
  out->value = *value;
  if (rest.size() == 2) {
    char* end = nullptr;
    std::strtoll(rest[1].c_str(), &end, 10);
    if (rest[1].empty() || end != rest[1].c_str() + rest[1].size()) {
      return absl::InvalidArgumentError(absl::StrCat("bad timestamp \"", rest[1], "\""));
    }
  }
  return absl::OkStatus();
}

// Whether sample `name` belongs to family `f`.
bool Owns(const PromFamily& f, const std::string& name) {
  if (name == f.name) return f.type != "histogram";
  if (f.type != "histogram") return false;
  return name == f.name + "_bucket" || name == f.name + "_sum" || name == f.name + "_count";
}

absl::Status CheckHistogram(const PromFamily& f) {
  // By the labels without le: the buckets in order, the sum and the count.
  struct Series {
    std::vector<std::pair<double, double>> buckets;
    std::optional<double> sum;
    std::optional<double> count;
  };
  std::map<std::map<std::string, std::string>, Series> series;
  for (const PromSample& s : f.samples) {
    std::map<std::string, std::string> labels = s.labels;
    if (s.name == f.name + "_bucket") {
      auto le = labels.find("le");
      if (le == labels.end()) return absl::InvalidArgumentError(f.name + "_bucket without le");
      std::optional<double> bound = ParseNumber(le->second);
      if (!bound) return absl::InvalidArgumentError(f.name + ": bad le " + le->second);
      labels.erase(le);
      series[labels].buckets.emplace_back(*bound, s.value);
    } else if (s.name == f.name + "_sum") {
      series[labels].sum = s.value;
    } else {
      series[labels].count = s.value;
    }
  }
  for (const auto& [labels, h] : series) {
    if (h.buckets.empty() || !h.sum || !h.count) {
      return absl::InvalidArgumentError(f.name + ": a series lacks buckets, _sum or _count");
    }
    for (size_t i = 1; i < h.buckets.size(); ++i) {
      if (h.buckets[i].first <= h.buckets[i - 1].first ||
          h.buckets[i].second < h.buckets[i - 1].second) {
        return absl::InvalidArgumentError(f.name + ": buckets out of order or not cumulative");
      }
    }
    if (!std::isinf(h.buckets.back().first) || h.buckets.back().second != *h.count) {
      return absl::InvalidArgumentError(f.name + ": the last bucket is not le=\"+Inf\" == _count");
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::optional<double> Exposition::Value(const std::string& name,
                                        const std::map<std::string, std::string>& labels) const {
  std::optional<double> total;
  for (const auto& [family_name, family] : families) {
    for (const PromSample& s : family.samples) {
      if (s.name != name) continue;
      bool match = true;
      for (const auto& [k, v] : labels) {
        auto it = s.labels.find(k);
        match = match && it != s.labels.end() && it->second == v;
      }
      if (match) total = total.value_or(0) + s.value;
    }
  }
  return total;
}

absl::StatusOr<Exposition> ParseExposition(const std::string& text) {
  if (!text.empty() && text.back() != '\n') {
    return absl::InvalidArgumentError("the text does not end with a newline");
  }
  Exposition out;
  PromFamily* current = nullptr;
  std::set<std::pair<std::string, std::map<std::string, std::string>>> seen;
  // HELP texts by family name, unescaped.
  std::map<std::string, std::string> helped;
  int n = 0;
  for (absl::string_view view : absl::StrSplit(text, '\n')) {
    ++n;
    const std::string line(view);
    auto bad = [&](const std::string& why) {
      return absl::InvalidArgumentError(absl::StrCat("line ", n, " \"", line, "\": ", why));
    };
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::vector<std::string> parts = absl::StrSplit(line, absl::MaxSplits(' ', 3));
      if (parts.size() < 3 || (parts[1] != "HELP" && parts[1] != "TYPE")) continue;  // a comment
      const std::string& name = parts[2];
      if (!ValidName(name, true)) return bad("bad metric name");
      if (parts[1] == "HELP") {
        std::string help;
        const std::string raw = parts.size() == 4 ? parts[3] : "";
        for (size_t i = 0; i < raw.size(); ++i) {
          if (raw[i] != '\\') {
            help += raw[i];
          } else if (i + 1 < raw.size() && (raw[i + 1] == '\\' || raw[i + 1] == 'n')) {
            help += raw[++i] == 'n' ? '\n' : '\\';
          } else {
            return bad("bad escape in HELP");
          }
        }
        if (!helped.emplace(name, help).second) return bad("a second HELP");
        continue;
      }
      if (parts.size() != 4) return bad("TYPE without a type");
      const std::string& type = parts[3];
      if (type != "counter" && type != "gauge" && type != "histogram" && type != "summary" &&
          type != "untyped") {
        return bad("unknown type");
      }
      if (out.families.count(name) > 0) return bad("a second TYPE");
      if (!helped.count(name)) return bad("TYPE before HELP");
      if (type == "counter" && !absl::EndsWith(name, "_total")) {
        return bad("a counter's name must end in _total");
      }
      current = &out.families[name];
      current->name = name;
      current->type = type;
      current->help = helped[name];
      continue;
    }
    PromSample sample;
    if (absl::Status s = ParseSample(line, &sample); !s.ok()) return bad(std::string(s.message()));
    if (current == nullptr || !Owns(*current, sample.name)) {
      return bad("a sample outside its family (no TYPE just before it)");
    }
    for (const auto& [label, value] : sample.labels) {
      if (!ValidName(label, false)) return bad("bad label name");
    }
    if (!seen.insert({sample.name, sample.labels}).second) return bad("the same series twice");
    current->samples.push_back(std::move(sample));
  }
  for (auto& [name, family] : out.families) {
    if (family.type == "histogram") {
      if (absl::Status s = CheckHistogram(family); !s.ok()) return s;
    }
  }
  return out;
}

}  // namespace trainctl::testing
