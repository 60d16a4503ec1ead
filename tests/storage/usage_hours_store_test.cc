// The hourly usage rollup (usage_hours, scheduler/usage_rollup.h) on both stores: rows upserted
// whole by their key, the latest hour loaded after a reopen, read back off the loop (JobArchive::
// ListUsage) and grouped, kept when their jobs are deleted, expired by their hour.
#include <catch2/catch.hpp>
#include <string>

#include "storage/usage_rows.h"
#include "tests/storage/test_store.h"

namespace trainctl::storage {
namespace usage_hours_store_test {

constexpr int64_t kHourMs = 3'600'000;

sched::UsageHour Row(int64_t hour, const std::string& project, const std::string& creator,
                     const std::string& node, const std::string& labels, double cpu_seconds) {
  sched::UsageHour u;
  u.hour = absl::FromUnixMillis(hour * kHourMs);
  u.key = sched::UsageKey{project, creator, node, labels};
  u.cpu_seconds = cpu_seconds;
  u.gpu_seconds = cpu_seconds / 4;
  u.memory_mb_seconds = cpu_seconds * 64;
  u.runs = 1;
  u.wall_seconds = cpu_seconds;
  u.queue_wait_seconds = 0.5;
  return u;
}

TEST_CASE("usage rows are upserted whole, the latest hour loads, and a range reads back grouped",
          "[backend]") {
  TestStore db;
  {
    std::unique_ptr<Store> store = db.Open();
    Batch first;
    first.usage_hours = {Row(10, "team-a", "alice", "node-a", "team=vision", 100),
                         Row(10, "team-b", "bob", "node-b", "", 40),
                         Row(11, "team-a", "alice", "node-a", "team=vision", 5)};
    REQUIRE(store->Commit(first).ok());
    Batch again;  // the same row of hour 11 a minute later: replaced, not added
    again.usage_hours = {Row(11, "team-a", "alice", "node-a", "team=vision", 10)};
    REQUIRE(store->Commit(again).ok());
    // Deleting jobs leaves usage alone.
    Batch deleted;
    deleted.deleted_jobs = {"j-1"};
    REQUIRE(store->Commit(deleted).ok());
  }
  std::unique_ptr<Store> store = db.Open();
  absl::StatusOr<Snapshot> snap = store->Load();
  REQUIRE(snap.ok());
  REQUIRE(snap->usage_hours.size() == 1);  // the latest hour only
  CHECK(snap->usage_hours[0].hour == absl::FromUnixMillis(11 * kHourMs));
  CHECK(snap->usage_hours[0].cpu_seconds == 10);
  CHECK(snap->usage_hours[0].key.labels == "team=vision");

  std::unique_ptr<JobArchive> archive = db.OpenArchive();
  absl::StatusOr<std::vector<sched::UsageHour>> all = archive->ListUsage({});
  REQUIRE(all.ok());
  std::vector<UsageTotal> by_project = GroupUsage(*all, *ParseUsageBy("project"));
  REQUIRE(by_project.size() == 2);
  CHECK(by_project[0].key == "team-a");
  CHECK(by_project[0].cpu_seconds == 110);
  CHECK(by_project[0].gpu_seconds == 27.5);
  CHECK(by_project[0].memory_mb_seconds == 110 * 64);
  CHECK(by_project[0].runs == 2);
  CHECK(by_project[0].wall_seconds == 110);
  CHECK(by_project[0].queue_wait_seconds == 1);
  CHECK(by_project[1].key == "team-b");
  // An hour counts when it overlaps the range: [10:30, 11:00) reads hour 10 alone.
  absl::StatusOr<std::vector<sched::UsageHour>> ten =
      archive->ListUsage({10 * kHourMs + kHourMs / 2, 11 * kHourMs});
  REQUIRE(ten.ok());
  std::vector<UsageTotal> by_label = GroupUsage(*ten, *ParseUsageBy("label:team"));
  REQUIRE(by_label.size() == 2);
  CHECK(by_label[0].key == "");  // team-b's job has no such label
  CHECK(by_label[1].key == "vision");
  CHECK(by_label[1].cpu_seconds == 100);
  const std::set<std::string> only_b{"team-b"};
  std::vector<UsageTotal> by_user = GroupUsage(*all, *ParseUsageBy("user"), &only_b);
  REQUIRE(by_user.size() == 1);
  CHECK(by_user[0].key == "bob");
  CHECK(GroupUsage(*all, *ParseUsageBy("node")).size() == 2);

  // Retention deletes by hour, whatever the jobs.
  Batch expire;
  expire.expire_usage_before_ms = 11 * kHourMs;
  REQUIRE(store->Commit(expire).ok());
  CHECK(db.QueryInt("SELECT count(*) FROM usage_hours") == 1);
}

TEST_CASE("usage --by takes project, user, node or label:KEY") {
  CHECK(ParseUsageBy("user")->dimension == UsageBy::Dimension::kUser);
  CHECK(ParseUsageBy("label:team")->label == "team");
  absl::StatusOr<UsageBy> bad = ParseUsageBy("label:");
  CHECK(bad.status().message() == "--by must be project, user, label:KEY or node, got \"label:\"");
  CHECK(ParseUsageBy("x").status().code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace usage_hours_store_test
}  // namespace trainctl::storage
