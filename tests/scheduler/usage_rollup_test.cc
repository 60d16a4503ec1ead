// Usage accounting: the rollup's hourly rows (charged by the accrual fair share runs), when they
// are written, how a restart goes on from them, and a core's job charged by the same accrual.
#include "scheduler/usage_rollup.h"

#include <catch2/catch.hpp>

#include "scheduler/core.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace usage_rollup_test {

using namespace testing;

// 2027-01-15 08:00:00 UTC: a whole hour.
const absl::Time kHour = absl::FromUnixSeconds(1'800'000'000 / 3600 * 3600);
const UsageKey kKey{"team-a", "alice", "node-a", "team=vision"};

TEST_CASE("usage rollup: held resources are charged per hour, split where an hour ends") {
  UsageRollup rollup;
  rollup.Accrue(kHour + absl::Minutes(50), kHour + absl::Minutes(50));
  rollup.Hold(kKey, Res{2, 1024, 1}, /*run=*/true, absl::Seconds(30));
  rollup.Hold(kKey, Res{2, 1024, 1}, /*run=*/true, absl::Seconds(30));
  // 20 minutes: 10 in this hour, 10 in the next.
  rollup.Accrue(kHour + absl::Minutes(50), kHour + absl::Minutes(70));
  const UsageHour* first = rollup.Find(kHour, kKey);
  const UsageHour* second = rollup.Find(kHour + absl::Hours(1), kKey);
  REQUIRE(first != nullptr);
  REQUIRE(second != nullptr);
  CHECK(first->cpu_seconds == Approx(2 * 2 * 600));
  CHECK(first->gpu_seconds == Approx(2 * 600));
  CHECK(first->memory_mb_seconds == Approx(2 * 1024 * 600));
  CHECK(first->wall_seconds == Approx(2 * 600));
  CHECK(first->runs == 2);  // runs count in the hour they begin
  CHECK(first->queue_wait_seconds == Approx(60));
  CHECK(second->cpu_seconds == Approx(2 * 2 * 600));
  CHECK(second->runs == 0);
  // The /metrics counters get the same seconds, undecayed, once.
  std::map<std::string, UsageAdded> added = rollup.TakeAdded();
  CHECK(added["team-a"].cpu_seconds == Approx(2 * 2 * 1200));
  CHECK(rollup.TakeAdded().empty());
}

TEST_CASE(
    "usage rollup: rows are written when new, once a minute, when a run ends and as their "
    "hour closes") {
  UsageRollup rollup;
  absl::Time now = kHour + absl::Minutes(58);
  rollup.Accrue(now, now);
  rollup.Hold(kKey, Res{1, 0, 0}, /*run=*/true, absl::ZeroDuration());
  CHECK(rollup.DueRows(now).size() == 1);  // new
  rollup.Accrue(now, now + absl::Seconds(30));
  now += absl::Seconds(30);
  CHECK(rollup.DueRows(now).empty());  // changed, but written 30 s ago
  rollup.Accrue(now, now + absl::Seconds(30));
  now += absl::Seconds(30);
  REQUIRE(rollup.DueRows(now).size() == 1);  // a minute since the last write
  rollup.Accrue(now, now + absl::Seconds(10));
  now += absl::Seconds(10);
  CHECK(rollup.DueRows(now).empty());
  // The hour closes: its row is written with all it got and dropped; the next hour's is new.
  rollup.Accrue(now, kHour + absl::Hours(1) + absl::Seconds(5));
  now = kHour + absl::Hours(1) + absl::Seconds(5);
  std::vector<UsageHour> due = rollup.DueRows(now);
  REQUIRE(due.size() == 2);
  CHECK(due[0].hour == kHour);
  CHECK(due[0].cpu_seconds == Approx(120));
  CHECK(due[1].hour == kHour + absl::Hours(1));
  CHECK(due[1].cpu_seconds == Approx(5));
  CHECK(rollup.Find(kHour, kKey) == nullptr);
  CHECK(rollup.rows_in_memory() == 1);
  // The run ends: its row is written by the turn that ends it, whatever its last write.
  rollup.Accrue(now, now + absl::Seconds(2));
  now += absl::Seconds(2);
  rollup.Release(kKey, Res{1, 0, 0});
  due = rollup.DueRows(now);
  REQUIRE(due.size() == 1);
  CHECK(due[0].cpu_seconds == Approx(7));
  CHECK(rollup.held_keys() == 0);
  // Nothing held: nothing changes, nothing is due.
  rollup.Accrue(now, now + absl::Minutes(5));
  CHECK(rollup.DueRows(now + absl::Minutes(5)).empty());
}

TEST_CASE(
    "usage rollup: restored rows go on from what they held, and are not due until they "
    "change") {
  UsageHour stored;
  stored.hour = kHour;
  stored.key = kKey;
  stored.cpu_seconds = 100;
  stored.runs = 1;
  UsageRollup rollup;
  rollup.Restore({stored});
  rollup.Hold(kKey, Res{1, 0, 0}, /*run=*/false, absl::ZeroDuration());  // a restored replica
  const absl::Time now = kHour + absl::Minutes(10);
  rollup.Accrue(now, now);
  CHECK(rollup.DueRows(now).empty());
  rollup.Accrue(now, now + absl::Seconds(4));
  std::vector<UsageHour> due = rollup.DueRows(now + absl::Seconds(4));
  REQUIRE(due.size() == 1);
  CHECK(due[0].cpu_seconds == Approx(104));
  CHECK(due[0].runs == 1);
}

TEST_CASE(
    "usage rollup: a 2-replica 1-cpu job that runs 5 s is charged 10 cpu-seconds, by the "
    "accrual fair share runs") {
  Core core(TestOptions(3));
  absl::Time now = kHour + absl::Minutes(5);
  Effects fx;
  core.AgentRegistered(Reg("node-a", 4), now, &fx);
  v1::JobSpec spec = Spec(1, 1, 64);
  spec.set_project("team-a");
  (*spec.mutable_labels())["team"] = "vision";
  absl::StatusOr<const Job*> submitted = core.SubmitJob(spec, now, &fx, "alice");
  REQUIRE(submitted.ok());
  const std::string id = (*submitted)->id;
  now += absl::Seconds(2);  // queued for 2 s
  core.AccrueUsage(now);
  Effects placed;
  core.Schedule(now, &placed);
  const std::vector<v1::LaunchReplica> launches = Launches(placed);
  REQUIRE(launches.size() == 2);
  for (const v1::LaunchReplica& l : launches) {
    Effects started;
    core.ReplicaStarted("node-a", Started(l.run_id()), now, &started);
  }
  now += absl::Seconds(5);
  core.AccrueUsage(now);  // as each turn of trainctld's loop begins
  Effects ended;
  for (const v1::LaunchReplica& l : launches) {
    core.ReplicaExited("node-a", ExitedCode(l.run_id(), 0), now, &ended);
  }
  core.Schedule(now, &ended);
  REQUIRE(core.FindJob(id)->state == v1::JOB_STATE_SUCCEEDED);
  // The turn that ends the runs writes their row.
  const UsageKey key{"team-a", "alice", "node-a", "team=vision"};
  const UsageHour* row = nullptr;
  for (const UsageHour& h : ended.usage_hours) {
    if (h.key == key) row = &h;
  }
  REQUIRE(row != nullptr);
  CHECK(row->hour == kHour);
  CHECK(row->cpu_seconds == Approx(10));
  CHECK(row->memory_mb_seconds == Approx(2 * 64 * 5));
  CHECK(row->wall_seconds == Approx(10));
  CHECK(row->runs == 2);
  CHECK(row->queue_wait_seconds == Approx(4));  // 2 s for each of its 2 runs
  CHECK(ended.tally.usage_added["team-a"].cpu_seconds == Approx(10));
}

TEST_CASE("usage labels: the canonical string decodes back exactly") {
  const std::map<std::string, std::string> labels{{"a,b", "x=y"}, {"team", "50%"}, {"z", ""}};
  const std::string encoded = EncodeUsageLabels(labels);
  CHECK(encoded == "a%2Cb=x%3Dy,team=50%25,z=");
  CHECK(DecodeUsageLabels(encoded) == labels);
  CHECK(DecodeUsageLabels("").empty());
}

}  // namespace usage_rollup_test
}  // namespace trainctl::sched
