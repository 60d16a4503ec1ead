// The store when writes fail: a commit that meets a full disk or an I/O error (injected through
// FaultyVfs) writes nothing, says why in words a caller can act on, and leaves the connection
// usable; ProbeWrite tells when writes work again.
#include <catch2/catch.hpp>
#include <string>

#include "common/time_util.h"
#include "storage/sqlite_store.h"
#include "tests/storage/faulty_vfs.h"
#include "tests/storage/temp_dir.h"

namespace trainctl::storage {
namespace {

using testing::FaultyVfs;
using testing::ScopedFault;

Batch OneJob(const std::string& id) {
  v1::Job job;
  job.set_id(id);
  job.set_project("team-a");
  job.set_state(v1::JOB_STATE_QUEUED);
  *job.mutable_create_time() = MsToTimestamp(1000);
  job.mutable_spec()->set_display_name("train");
  Batch batch;
  batch.jobs.push_back(job);
  batch.events.push_back({1000, id, 1, "", "", "JobCreated", "created", ""});
  return batch;
}

std::vector<std::string> JobIds(Store& store) {
  absl::StatusOr<Snapshot> snap = store.Load();
  REQUIRE(snap.ok());
  std::vector<std::string> ids;
  for (const v1::Job& job : snap->jobs) ids.push_back(job.id());
  return ids;
}

TEST_CASE("a commit that finds the disk full writes nothing and names the data dir") {
  TempDir dir;
  const std::string db = dir.path + "/trainctl.db";
  absl::StatusOr<std::unique_ptr<Store>> store = SqliteStore::Open(db, FaultyVfs::Name());
  REQUIRE(store.ok());
  REQUIRE((*store)->Commit(OneJob("j-1")).ok());
  {
    ScopedFault full(FaultyVfs::Fault::kFull);
    absl::Status failed = (*store)->Commit(OneJob("j-2"));
    CHECK(failed.code() == absl::StatusCode::kResourceExhausted);
    CHECK_THAT(
        std::string(failed.message()),
        Catch::Contains("no space left on " + dir.path + " (the data dir)") && Catch::Contains(db));
    CHECK((*store)->ProbeWrite().code() == absl::StatusCode::kResourceExhausted);
  }
  CHECK(JobIds(**store) == std::vector<std::string>{"j-1"});
  // Space is back: the same connection writes again.
  CHECK((*store)->ProbeWrite().ok());
  REQUIRE((*store)->Commit(OneJob("j-3")).ok());
  CHECK(JobIds(**store) == std::vector<std::string>{"j-1", "j-3"});
  store->reset();
  absl::StatusOr<std::unique_ptr<Store>> reopened = SqliteStore::Open(db);
  REQUIRE(reopened.ok());
  CHECK(JobIds(**reopened) == std::vector<std::string>{"j-1", "j-3"});
}

TEST_CASE("a commit that meets an I/O error is UNAVAILABLE and writes nothing") {
  TempDir dir;
  const std::string db = dir.path + "/trainctl.db";
  absl::StatusOr<std::unique_ptr<Store>> store = SqliteStore::Open(db, FaultyVfs::Name());
  REQUIRE(store.ok());
  {
    ScopedFault eio(FaultyVfs::Fault::kIoError);
    absl::Status failed = (*store)->Commit(OneJob("j-1"));
    CHECK(failed.code() == absl::StatusCode::kUnavailable);
    CHECK_THAT(std::string(failed.message()), Catch::Contains("I/O error writing " + db));
    CHECK((*store)->ProbeWrite().code() == absl::StatusCode::kUnavailable);
  }
  CHECK(JobIds(**store).empty());
  CHECK((*store)->ProbeWrite().ok());
  REQUIRE((*store)->Commit(OneJob("j-2")).ok());
  CHECK(JobIds(**store) == std::vector<std::string>{"j-2"});
}

}  // namespace
}  // namespace trainctl::storage
