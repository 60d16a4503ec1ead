// The stacks captured before stops (replica_stacks, storage/stacks_rows.h) on both stores: one
// row per run (a later capture replaces it), read back off the loop by attempt (the latest with
// any by default) and replica, without their text when asked, and deleted with their job.
#include <catch2/catch.hpp>
#include <string>

#include "storage/stacks_rows.h"
#include "tests/storage/test_store.h"

namespace trainctl::storage {
namespace stacks_store_test {

v1::ReplicaStacks Captured(const std::string& job, int attempt, const std::string& replica,
                           const std::string& summary) {
  v1::ReplicaStacks s;
  s.set_job_id(job);
  s.set_attempt(attempt);
  s.set_replica(replica);
  s.set_run_id(job + "/" + std::to_string(attempt) + "/" + replica + "/0");
  s.set_summary(summary);
  s.set_reason("hung");
  s.mutable_capture_time()->set_seconds(1'000 + attempt);
  v1::ProcessStacks* p = s.add_processes();
  p->set_pid(42);
  p->set_text(std::string(100'000, 'x'));  // a real dump's size
  p->set_summary(summary);
  return s;
}

TEST_CASE("stacks rows are kept per run, read by attempt and replica, and go with their job",
          "[backend]") {
  TestStore db;
  std::unique_ptr<Store> store = db.Open();
  Batch first;
  first.stacks = {Captured("j-1", 1, "chief-0", "old"), Captured("j-1", 2, "chief-0", "main"),
                  Captured("j-1", 2, "worker-0", "load_batch"), Captured("j-2", 1, "chief-0", "x")};
  REQUIRE(store->Commit(first).ok());
  Batch again;  // the same run captured again: replaced
  again.stacks = {Captured("j-1", 1, "chief-0", "wait_for_peer")};
  REQUIRE(store->Commit(again).ok());

  std::unique_ptr<JobArchive> archive = db.OpenArchive();
  absl::StatusOr<StacksOfAttempt> latest = archive->ListStacks({"j-1", 0, "", false});
  REQUIRE(latest.ok());
  CHECK(latest->attempt == 2);
  REQUIRE(latest->stacks.size() == 2);
  CHECK(latest->stacks[0].replica() == "chief-0");
  CHECK(latest->stacks[1].summary() == "load_batch");
  CHECK(latest->stacks[1].processes(0).text().size() == 100'000);

  absl::StatusOr<StacksOfAttempt> first_attempt =
      archive->ListStacks({"j-1", 1, "chief-0", /*summary_only=*/true});
  REQUIRE(first_attempt.ok());
  REQUIRE(first_attempt->stacks.size() == 1);
  CHECK(first_attempt->stacks[0].summary() == "wait_for_peer");
  CHECK(first_attempt->stacks[0].processes(0).text().empty());
  CHECK(first_attempt->stacks[0].processes(0).summary() == "wait_for_peer");

  absl::StatusOr<StacksOfAttempt> other = archive->ListStacks({"j-1", 2, "worker-9", false});
  REQUIRE(other.ok());
  CHECK(other->stacks.empty());
  absl::StatusOr<StacksOfAttempt> none = archive->ListStacks({"j-9", 0, "", false});
  REQUIRE(none.ok());
  CHECK(none->attempt == 0);
  CHECK(none->stacks.empty());

  Batch deleted;
  deleted.deleted_jobs = {"j-1"};
  REQUIRE(store->Commit(deleted).ok());
  absl::StatusOr<StacksOfAttempt> gone = archive->ListStacks({"j-1", 0, "", false});
  REQUIRE(gone.ok());
  CHECK(gone->stacks.empty());
  absl::StatusOr<StacksOfAttempt> kept = archive->ListStacks({"j-2", 0, "", false});
  REQUIRE(kept.ok());
  CHECK(kept->stacks.size() == 1);
}

}  // namespace stacks_store_test
}  // namespace trainctl::storage
