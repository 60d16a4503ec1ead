// The agent's --maintenance-file: what the JSON says, what is refused and why, and that a
// heartbeat carries the window only after the file changed.
#include "agents/maintenance_file.h"

#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "common/time_util.h"

namespace trainctl::agent {
namespace {

void WriteWindowFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  REQUIRE(out.good());
}

}  // namespace

TEST_CASE("ParseMaintenanceFile reads start, duration and reason", "[maintenance_file]") {
  absl::StatusOr<v1::MaintenanceReport> r = ParseMaintenanceFile(
      R"({"start": "2026-12-01T03:00:00+01:00", "duration": "2h", "reason": "BIOS update"})");
  REQUIRE(r.ok());
  REQUIRE(r->has_window());
  CHECK(FormatRfc3339(TimestampToMs(r->window().start_time())) == "2026-12-01T02:00:00Z");
  CHECK(DurationToMs(r->window().duration()) == 7'200'000);
  CHECK(r->window().reason() == "BIOS update");
  CHECK(r->window().source() == "agent");

  absl::StatusOr<v1::MaintenanceReport> seconds =
      ParseMaintenanceFile(R"({"start": "2026-12-01T02:00:00Z", "duration": 5400, "reason": "x"})");
  REQUIRE(seconds.ok());
  CHECK(DurationToMs(seconds->window().duration()) == 5'400'000);

  absl::StatusOr<v1::MaintenanceReport> empty = ParseMaintenanceFile(" \n");
  REQUIRE(empty.ok());
  CHECK_FALSE(empty->has_window());
}

TEST_CASE("ParseMaintenanceFile names the key that is wrong", "[maintenance_file]") {
  struct Row {
    const char* text;
    const char* want;
  };
  for (const Row& row : {
           Row{"[1, 2]", "not a JSON object"},
           Row{R"({"duration": "2h", "reason": "x"})", "\"start\" must be an RFC3339 time"},
           Row{R"({"start": "2026-12-01T02:00:00Z", "duration": "soon", "reason": "x"})",
               "\"duration\" must be a duration"},
           Row{R"({"start": "2026-12-01T02:00:00Z", "duration": "10s", "reason": "x"})",
               "\"duration\" must be a duration"},
           Row{R"({"start": "2026-12-01T02:00:00Z", "duration": "2h"})", "\"reason\" must say"},
       }) {
    INFO(row.text);
    absl::StatusOr<v1::MaintenanceReport> r = ParseMaintenanceFile(row.text);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(std::string(r.status().message()), Catch::StartsWith(row.want));
  }
}

TEST_CASE("MaintenanceFile reports a window once per change", "[maintenance_file]") {
  char dir[] = "/tmp/trainctl-maintfile.XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/window.json";
  MaintenanceFile file(path);
  // Absent: no window, reported once.
  CHECK_FALSE(file.Current().has_window());
  v1::Heartbeat hb;
  file.PollInto(&hb);
  CHECK_FALSE(hb.has_maintenance());

  WriteWindowFile(path, R"({"start": "2026-12-01T02:00:00Z", "duration": "2h", "reason": "a"})");
  std::optional<v1::MaintenanceReport> changed = file.Poll();
  REQUIRE(changed.has_value());
  CHECK(changed->window().reason() == "a");
  CHECK_FALSE(file.Poll().has_value());

  // Not valid: the last window stands, nothing is sent.
  WriteWindowFile(path, "{");
  CHECK_FALSE(file.Poll().has_value());
  CHECK(file.Current().window().reason() == "a");

  // Emptied: no window, sent with the next heartbeat.
  WriteWindowFile(path, "");
  v1::Heartbeat hb2;
  file.PollInto(&hb2);
  REQUIRE(hb2.has_maintenance());
  CHECK_FALSE(hb2.maintenance().has_window());
  std::remove(path.c_str());
  rmdir(dir);
}

}  // namespace trainctl::agent
