// `trainctl usage`'s request and report (cli/usage_view.h).
#include "cli/usage_view.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/cluster_view.h"
#include "cli/output.h"
#include "common/flag_values.h"
#include "common/status_macros.h"
#include "common/time_util.h"

namespace trainctl::cli {
namespace usage_view_internal {

// "1.25" hours of `seconds`.
std::string Hours(double seconds) { return absl::StrFormat("%.2f", seconds / 3600); }

// Seconds to the millisecond, without trailing zeros: "3686400", "9.998".
std::string Seconds(double seconds) {
  std::string out = absl::StrFormat("%.3f", seconds);
  while (out.back() == '0') out.pop_back();
  if (out.back() == '.') out.pop_back();
  return out;
}

// A CSV cell: quoted when it holds a comma, a quote or a line break.
std::string CsvCell(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

// "--until" or "--since" as ParseSince reads it, with the flag's own name in its error.
absl::StatusOr<int64_t> ParseWhen(const std::string& flag, const std::string& text,
                                  int64_t now_ms) {
  absl::StatusOr<int64_t> ms = ParseSince(text, now_ms);
  if (ms.ok() || flag == "--since") return ms;
  return BadFlagValue(flag,
                      "a duration back from now (30s, 10m, 1h30m) or an RFC3339 time "
                      "(2026-01-01T00:00:00Z)",
                      text);
}

}  // namespace usage_view_internal

absl::StatusOr<UsageFormat> ParseUsageFormat(const std::string& text) {
  const std::string lower = absl::AsciiStrToLower(text);
  if (lower.empty() || lower == "table") return UsageFormat::kTable;
  if (lower == "csv") return UsageFormat::kCsv;
  if (lower == "json") return UsageFormat::kJson;
  return BadFlagValue("-o", "table, csv or json", text);
}

absl::StatusOr<v1::GetUsageRequest> UsageRequestFromFlags(const std::string& by,
                                                          const std::string& since,
                                                          const std::string& until,
                                                          int64_t now_ms) {
  using usage_view_internal::ParseWhen;
  v1::GetUsageRequest req;
  const std::string dimension = by.empty() ? "project" : by;
  if (dimension != "project" && dimension != "user" && dimension != "node" &&
      !(dimension.rfind("label:", 0) == 0 && dimension.size() > 6)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--by must be project, user, label:KEY or node, got \"", by, "\""));
  }
  req.set_by(dimension);
  int64_t since_ms = 0;
  int64_t until_ms = now_ms;
  if (!since.empty()) {
    TC_ASSIGN_OR_RETURN(since_ms, ParseWhen("--since", since, now_ms));
    *req.mutable_since() = MsToTimestamp(since_ms);
  }
  if (!until.empty()) {
    TC_ASSIGN_OR_RETURN(until_ms, ParseWhen("--until", until, now_ms));
    *req.mutable_until() = MsToTimestamp(until_ms);
  }
  if (until_ms <= since_ms) {
    return absl::InvalidArgumentError(absl::StrCat("--until must be after --since, got since ",
                                                   FormatRfc3339(since_ms), " and until ",
                                                   FormatRfc3339(until_ms)));
  }
  return req;
}

absl::StatusOr<std::string> FormatUsageReport(const v1::GetUsageResponse& response,
                                              UsageFormat format) {
  using usage_view_internal::CsvCell;
  using usage_view_internal::Hours;
  using usage_view_internal::Seconds;
  switch (format) {
    case UsageFormat::kJson:
      return MessageToJson(response);
    case UsageFormat::kCsv: {
      std::string out =
          "key,gpu_seconds,cpu_seconds,memory_mb_seconds,runs,wall_seconds,queue_wait_seconds\n";
      for (const v1::UsageRow& r : response.rows()) {
        absl::StrAppend(&out, CsvCell(r.key()), ",", Seconds(r.gpu_seconds()), ",",
                        Seconds(r.cpu_seconds()), ",", Seconds(r.memory_mb_seconds()), ",",
                        r.runs(), ",", Seconds(r.wall_seconds()), ",",
                        Seconds(r.queue_wait_seconds()), "\n");
      }
      return out;
    }
    case UsageFormat::kTable:
      break;
  }
  Table table({"KEY", "GPU-HOURS", "CPU-HOURS", "MEM-GIB-HOURS", "RUNS", "WALL", "QUEUE-WAIT"});
  for (const v1::UsageRow& r : response.rows()) {
    table.AddRow({r.key().empty() ? "-" : r.key(), Hours(r.gpu_seconds()), Hours(r.cpu_seconds()),
                  Hours(r.memory_mb_seconds() / 1024), absl::StrCat(r.runs()),
                  FormatDuration(static_cast<int64_t>(r.wall_seconds() * 1000)),
                  FormatDuration(static_cast<int64_t>(r.queue_wait_seconds() * 1000))});
  }
  return table.Render();
}

}  // namespace trainctl::cli
