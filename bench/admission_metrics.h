// What trainctld's admission passes did so far, read from its GET /metrics, for benchmarks that
// measure the passes of one phase: the difference of two readings.
//
//   AdmissionReading before = ReadAdmission(http_address);
//   ...                                        // the phase
//   AdmissionReading after = ReadAdmission(http_address);
//   double per_second = (after.admitted - before.admitted) / (after.seconds - before.seconds);
#pragma once

#include <httplib.h>

#include <catch2/catch.hpp>
#include <string>

#include "absl/strings/numbers.h"
#include "tests/common/prometheus_text.h"

namespace trainctl::bench {

struct AdmissionReading {
  // Jobs admitted (trainctl_job_admission_wait_seconds_count, over every project).
  double admitted = 0;
  // The time of every admission pass (trainctl_admission_pass_seconds_sum).
  double seconds = 0;
};

// `http_address` is trainctld's "host:port" (its data dir's trainctld.http-addr).
inline AdmissionReading ReadAdmission(const std::string& http_address) {
  INFO("reading GET /metrics of trainctld at " << http_address);
  int port = 0;
  REQUIRE(absl::SimpleAtoi(http_address.substr(http_address.rfind(':') + 1), &port));
  httplib::Client client(http_address.substr(0, http_address.rfind(':')), port);
  client.set_read_timeout(60);
  httplib::Result got = client.Get("/metrics");
  REQUIRE(got);
  REQUIRE(got->status == 200);
  absl::StatusOr<testing::Exposition> parsed = testing::ParseExposition(got->body);
  REQUIRE(parsed.ok());
  return {parsed->Value("trainctl_job_admission_wait_seconds_count").value_or(0),
          parsed->Value("trainctl_admission_pass_seconds_sum").value_or(0)};
}

}  // namespace trainctl::bench
