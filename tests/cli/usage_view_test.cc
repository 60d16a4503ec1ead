// `trainctl usage`: its flags checked (by, since, until, -o) and its report in each format.
#include "cli/usage_view.h"

#include <catch2/catch.hpp>

#include "common/time_util.h"

namespace trainctl::cli {
namespace usage_view_test {

constexpr int64_t kNow = 1'800'000'000'000;

TEST_CASE(
    "usage flags: --by, --since and --until become the request, bad ones say what they take") {
  absl::StatusOr<v1::GetUsageRequest> req = UsageRequestFromFlags("", "30d", "", kNow);
  REQUIRE(req.ok());
  CHECK(req->by() == "project");
  CHECK(TimestampToMs(req->since()) == kNow - 30 * 86'400'000LL);
  CHECK_FALSE(req->has_until());
  req = UsageRequestFromFlags("label:team", "2027-01-01T00:00:00Z", "1h", kNow);
  REQUIRE(req.ok());
  CHECK(req->by() == "label:team");
  CHECK(TimestampToMs(req->until()) == kNow - 3'600'000);

  CHECK(UsageRequestFromFlags("x", "", "", kNow).status().message() ==
        "--by must be project, user, label:KEY or node, got \"x\"");
  CHECK(UsageRequestFromFlags("project", "", "yesterday", kNow).status().message() ==
        "--until must be a duration back from now (30s, 10m, 1h30m) or an RFC3339 time "
        "(2026-01-01T00:00:00Z), got \"yesterday\"");
  CHECK(UsageRequestFromFlags("project", "1h", "2h", kNow).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(ParseUsageFormat("CSV").value() == UsageFormat::kCsv);
  CHECK(ParseUsageFormat("yaml").status().message() ==
        "-o must be table, csv or json, got \"yaml\"");
}

TEST_CASE("usage report: a table in hours, csv in seconds with a header, json as the API's") {
  v1::GetUsageResponse resp;
  v1::UsageRow* row = resp.add_rows();
  row->set_key("team-a");
  row->set_gpu_seconds(7200);
  row->set_cpu_seconds(10);
  row->set_memory_mb_seconds(1024 * 3600);
  row->set_runs(2);
  row->set_wall_seconds(10);
  row->set_queue_wait_seconds(4);
  resp.add_rows()->set_key("a,b");
  CHECK(*FormatUsageReport(resp, UsageFormat::kTable) ==
        "KEY      GPU-HOURS   CPU-HOURS   MEM-GIB-HOURS   RUNS   WALL   QUEUE-WAIT\n"
        "team-a   2.00        0.00        1.00            2      10s    4s\n"
        "a,b      0.00        0.00        0.00            0      0ms    0ms\n");
  CHECK(*FormatUsageReport(resp, UsageFormat::kCsv) ==
        "key,gpu_seconds,cpu_seconds,memory_mb_seconds,runs,wall_seconds,queue_wait_seconds\n"
        "team-a,7200,10,3686400,2,10,4\n"
        "\"a,b\",0,0,0,0,0,0\n");
  const std::string json = *FormatUsageReport(resp, UsageFormat::kJson);
  CHECK(json.find("\"cpuSeconds\": 10") != std::string::npos);
}

}  // namespace usage_view_test
}  // namespace trainctl::cli
