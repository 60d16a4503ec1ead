// `trainctl usage`: the request from its flags and the report from UsageService's answer, as a
// table (hours), CSV (seconds, for spreadsheets) or JSON (the proto's JSON mapping).
//
//   TC_ASSIGN_OR_RETURN(v1::GetUsageRequest req, UsageRequestFromFlags("project", "30d", "", now));
//   TC_ASSIGN_OR_RETURN(std::string text, FormatUsageReport(resp, UsageFormat::kCsv));
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {

enum class UsageFormat { kTable, kCsv, kJson };

// "table", "csv" or "json"; INVALID_ARGUMENT naming -o otherwise.
absl::StatusOr<UsageFormat> ParseUsageFormat(const std::string& text);

// The request for --by, --since and --until (each "" when not given; --since and --until take a
// duration back from `now_ms` or an RFC3339 time). INVALID_ARGUMENT for a bad --by, a bad time,
// or an --until not after --since.
absl::StatusOr<v1::GetUsageRequest> UsageRequestFromFlags(const std::string& by,
                                                          const std::string& since,
                                                          const std::string& until, int64_t now_ms);

// The report: a table of KEY GPU-HOURS CPU-HOURS MEM-GIB-HOURS RUNS WALL QUEUE-WAIT; CSV with a
// header and the seconds as they are; or the response's JSON.
absl::StatusOr<std::string> FormatUsageReport(const v1::GetUsageResponse& response,
                                              UsageFormat format);

}  // namespace trainctl::cli
