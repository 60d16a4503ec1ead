// The leader lease of trainctld sharing a PostgreSQL store (storage/pg_lease.h) and the fence of
// a leader's commits (PgStore::SetFence), on the test PostgreSQL server: one leader per epoch, a
// lapsed lease passes on, a deposed leader can neither renew nor commit, and a leader whose
// session was lost keeps its lease when it is back in time. [postgres]: ctest's PostgreSQL pass.
#include "storage/pg_lease.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "storage/pg_store.h"
#include "tests/storage/test_store.h"

namespace trainctl::storage {
namespace {

LeaseOptions Candidate(const std::string& name, absl::Duration lease = absl::Seconds(1)) {
  return {name, name + ":7070", name + ":7080", lease};
}

std::unique_ptr<PgLeaderLease> OpenLease(const std::string& uri, LeaseOptions options) {
  absl::StatusOr<std::unique_ptr<PgLeaderLease>> lease = PgLeaderLease::Open(uri, options);
  INFO(lease.status().ToString());
  REQUIRE(lease.ok());
  return *std::move(lease);
}

std::optional<int64_t> Acquire(PgLeaderLease& lease, v1::LeaderInfo* leader = nullptr) {
  absl::StatusOr<std::optional<int64_t>> epoch = lease.TryAcquire(leader);
  INFO(epoch.status().ToString());
  REQUIRE(epoch.ok());
  return *epoch;
}

// Tries every 50 ms for up to 10 s; the epoch taken, or nullopt.
std::optional<int64_t> AcquireWithin(PgLeaderLease& lease) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    absl::StatusOr<std::optional<int64_t>> epoch = lease.TryAcquire(nullptr);
    if (epoch.ok() && epoch->has_value()) return *epoch;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return std::nullopt;
}

std::unique_ptr<PgStore> OpenStoreAs(const std::string& uri, const std::string& instance) {
  absl::StatusOr<std::unique_ptr<PgStore>> store =
      PgStore::Open(uri, LeaseApplicationName(instance));
  INFO(store.status().ToString());
  REQUIRE(store.ok());
  return *std::move(store);
}

Batch NodeBatch(const std::string& name) {
  Batch b;
  sched::Node n;
  n.name = name;
  b.nodes.push_back(n);
  return b;
}

TEST_CASE("the first trainctld takes the lease at epoch 1 and another stands by naming it",
          "[postgres]") {
  const std::string uri = NewPgDatabase();
  OpenStoreAs(uri, "setup");
  auto a = OpenLease(uri, Candidate("a"));
  auto b = OpenLease(uri, Candidate("b"));
  CHECK(Acquire(*a) == 1);
  v1::LeaderInfo seen;
  CHECK_FALSE(Acquire(*b, &seen).has_value());
  CHECK(seen.address() == "a:7070");
  CHECK(seen.http_address() == "a:7080");
  CHECK(seen.epoch() == 1);
  CHECK(a->Renew().ok());
  CHECK_FALSE(Acquire(*b).has_value());
}

TEST_CASE("a lease that is not renewed passes on, and the old leader can neither renew nor commit",
          "[postgres]") {
  const std::string uri = NewPgDatabase();
  auto a_store = OpenStoreAs(uri, "a");
  auto a = OpenLease(uri, Candidate("a"));
  auto b = OpenLease(uri, Candidate("b"));
  REQUIRE(Acquire(*a) == 1);
  int fenced_calls = 0;
  a_store->SetFence(1, [&](const absl::Status&) { ++fenced_calls; });
  REQUIRE(a_store->Commit(NodeBatch("before")).ok());

  // a stops renewing, as a SIGSTOPped leader does; it still holds the lock, so b first ends its
  // sessions, then takes the lease once it lapsed.
  CHECK(AcquireWithin(*b) == 2);
  // a's sessions were ended: its first call of each connection finds that out (UNAVAILABLE).
  absl::Status renewed = a->Renew();
  if (renewed.code() == absl::StatusCode::kUnavailable) renewed = a->Renew();
  INFO(renewed.ToString());
  CHECK(renewed.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(renewed.message().find("has passed to another trainctld (epoch 2, at b:7070)") !=
        std::string::npos);

  absl::Status committed = a_store->Commit(NodeBatch("after"));
  if (committed.code() == absl::StatusCode::kUnavailable)
    committed = a_store->Commit(NodeBatch("after"));
  INFO(committed.ToString());
  CHECK(IsFenced(committed));
  CHECK(committed.message().find("the leader lease of epoch 1 has passed to another trainctld") !=
        std::string::npos);
  CHECK(fenced_calls == 1);
  CHECK(PgQueryInt(uri, "SELECT count(*) FROM nodes WHERE name = 'after'") == 0);
  CHECK(PgQueryInt(uri, "SELECT count(*) FROM nodes WHERE name = 'before'") == 1);

  v1::LeaderInfo now;
  CHECK_FALSE(Acquire(*a, &now).has_value());
  CHECK(now.address() == "b:7070");
  CHECK(now.epoch() == 2);

  // The new leader commits under its own epoch.
  auto b_store = OpenStoreAs(uri, "b");
  b_store->SetFence(2, [](const absl::Status&) { FAIL("b was fenced"); });
  CHECK(b_store->Commit(NodeBatch("by-b")).ok());
}

TEST_CASE("a leader whose database session was lost keeps its lease when it is back in time",
          "[postgres]") {
  const std::string uri = NewPgDatabase();
  OpenStoreAs(uri, "setup");
  auto a = OpenLease(uri, Candidate("a", absl::Seconds(30)));
  auto b = OpenLease(uri, Candidate("b", absl::Seconds(30)));
  REQUIRE(Acquire(*a) == 1);
  // What a restart of PostgreSQL does to a's session: the lock is free, the row still a's.
  CHECK(PgQueryInt(uri,
                   "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
                   "application_name = 'trainctld a' AND datname = current_database()") == 1);
  CHECK_FALSE(Acquire(*b).has_value());
  // The session that died makes this call fail; the next one reconnects and renews.
  if (!a->Renew().ok()) CHECK(a->Renew().ok());
  CHECK(a->epoch() == 1);
  CHECK_FALSE(Acquire(*b).has_value());
}

}  // namespace
}  // namespace trainctl::storage
