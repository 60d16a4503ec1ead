// The values of cgroup control files: CPU quotas, CPU lists, device rules, OOM kill counters.
#include "agents/cgroup_text.h"

#include <catch2/catch.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace trainctl::agent {
namespace {

TEST_CASE("a CPU request becomes a CFS quota per 100ms period", "[cgroup_text]") {
  struct Row {
    double cpu;
    int64_t quota;
    const char* cpu_max;
  };
  const Row rows[] = {
      {1, 100000, "100000 100000"},
      {1.5, 150000, "150000 100000"},
      {8, 800000, "800000 100000"},
      {0.25, 25000, "25000 100000"},
      // Rounded to the microsecond.
      {0.333333, 33333, "33333 100000"},
      // Below the kernel's minimum of 1ms per period: raised to it.
      {0.001, 1000, "1000 100000"},
      {0.0001, 1000, "1000 100000"},
  };
  for (const Row& row : rows) {
    INFO("cpu " << row.cpu);
    CHECK(CpuQuotaMicros(row.cpu) == row.quota);
    CHECK(CpuMaxValue(row.cpu) == row.cpu_max);
  }
}

TEST_CASE("CPU lists as cpuset.cpus writes and reads them", "[cgroup_text]") {
  struct Row {
    const char* text;
    std::set<int> cpus;
    const char* formatted;
  };
  const Row rows[] = {
      {"", {}, ""},
      {"0", {0}, "0"},
      {"0-3", {0, 1, 2, 3}, "0-3"},
      {"0-3,8", {0, 1, 2, 3, 8}, "0-3,8"},
      {"0-1\n", {0, 1}, "0-1"},  // As read from the file.
      {"8,0-1,3", {0, 1, 3, 8}, "0-1,3,8"},
      {"2,4,6", {2, 4, 6}, "2,4,6"},
      {"5-5", {5}, "5"},
  };
  for (const Row& row : rows) {
    INFO("\"" << row.text << "\"");
    absl::StatusOr<std::set<int>> parsed = ParseCpuList(row.text);
    REQUIRE(parsed.ok());
    CHECK(*parsed == row.cpus);
    CHECK(FormatCpuList(row.cpus) == row.formatted);
  }
  for (const char* bad : {"3-1", "a", "1,,2", "-1", "0-"}) {
    INFO("\"" << bad << "\"");
    absl::StatusOr<std::set<int>> parsed = ParseCpuList(bad);
    REQUIRE_FALSE(parsed.ok());
    CHECK(absl::IsInvalidArgument(parsed.status()));
  }
}

TEST_CASE("a v1 device rule covers every access to one character device", "[cgroup_text]") {
  CHECK(CharDeviceRule(195, 3) == "c 195:3 rwm");
  CHECK(CharDeviceRule(195, 0) == "c 195:0 rwm");
}

TEST_CASE("ParseOomKillCount reads memory.events and memory.oom_control", "[cgroup_text]") {
  struct Case {
    std::string text;
    std::optional<int64_t> count;
  };
  const std::vector<Case> cases = {
      // cgroup v2 memory.events.
      {"low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n", 1},
      {"low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n", 0},
      // cgroup v1 memory.oom_control (oom_kill since Linux 4.13).
      {"oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", 3},
      {"oom_kill_disable 0\nunder_oom 0\n", std::nullopt},
      // Malformed or missing counts.
      {"", std::nullopt},
      {"oom_kill\n", std::nullopt},
      {"oom_kill x\n", std::nullopt},
      {"oom_kill -1\n", std::nullopt},
      {"oom_kill_disable 1\n", std::nullopt},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    CHECK(ParseOomKillCount(c.text) == c.count);
  }
}

}  // namespace
}  // namespace trainctl::agent
