// A strict parser of the Prometheus text exposition format (version 0.0.4), for tests that
// check what `GET /metrics` serves:
//
//   absl::StatusOr<Exposition> parsed = ParseExposition(body);
//   REQUIRE(parsed.ok());
//   CHECK(parsed->Value("trainctl_jobs_ended_total", {{"state", "FAILED"}}) == 1);
//
// Beyond the grammar (names, label escapes, numbers) it checks what Prometheus would reject or
// what our conventions promise: every sample follows the HELP and TYPE of its family, given once
// each; no series twice; a counter's name ends in "_total"; a histogram's series has buckets with
// increasing `le` and non-decreasing counts, ending with le="+Inf" equal to its _count, and a
// _sum; the text ends with a newline.
//
// Thread-safety: the functions keep no state.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace trainctl::testing {

struct PromSample {
  // The sample's own name: "x_bucket", "x_sum", "x_count" for a histogram x.
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct PromFamily {
  std::string name;
  std::string type;
  std::string help;
  std::vector<PromSample> samples;
};

struct Exposition {
  // By family name.
  std::map<std::string, PromFamily> families;

  // The value of the one sample named `name` whose labels include `labels`; nullopt when there
  // is none. When several match, their sum (e.g. a counter over every value of a label left
  // out).
  std::optional<double> Value(const std::string& name,
                              const std::map<std::string, std::string>& labels = {}) const;
};

// INVALID_ARGUMENT naming the line and what is wrong with it.
absl::StatusOr<Exposition> ParseExposition(const std::string& text);

}  // namespace trainctl::testing
