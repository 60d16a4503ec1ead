// Projects' fair-share ledgers (scheduler/fair_share.h) on both stores: upserted by project with
// each commit that carries them, and loaded after a reopen with every field.
#include <catch2/catch.hpp>
#include <string>

#include "tests/storage/test_store.h"

namespace trainctl::storage {
namespace {

sched::UsageLedger Ledger(const std::string& project, double gpu_seconds, int64_t as_of_ms) {
  sched::UsageLedger u;
  u.project = project;
  u.gpu_seconds = gpu_seconds;
  u.cpu_seconds = gpu_seconds * 8;
  u.memory_mb_seconds = gpu_seconds * 65536.5;
  u.as_of = absl::FromUnixMillis(as_of_ms);
  return u;
}

TEST_CASE("projects' fair-share ledgers are upserted and survive a reopen", "[backend]") {
  TestStore db;
  {
    auto store = db.TryOpen();
    REQUIRE(store.ok());
    Batch first;
    first.project_usage = {Ledger("team-a", 3600.25, 1'000), Ledger("team-b", 7.5, 1'000)};
    REQUIRE((*store)->Commit(first).ok());
    Batch later;  // a minute later, team-a's ledger again
    later.project_usage = {Ledger("team-a", 1800.125, 61'000)};
    REQUIRE((*store)->Commit(later).ok());
  }
  auto store = db.TryOpen();
  REQUIRE(store.ok());
  auto snap = (*store)->Load();
  REQUIRE(snap.ok());
  REQUIRE(snap->project_usage.size() == 2);
  std::map<std::string, sched::UsageLedger> by_project;
  for (const sched::UsageLedger& u : snap->project_usage) by_project[u.project] = u;
  const sched::UsageLedger& a = by_project.at("team-a");
  CHECK(a.gpu_seconds == 1800.125);
  CHECK(a.cpu_seconds == 1800.125 * 8);
  CHECK(a.memory_mb_seconds == 1800.125 * 65536.5);
  CHECK(a.as_of == absl::FromUnixMillis(61'000));
  CHECK(by_project.at("team-b").gpu_seconds == 7.5);
}

}  // namespace
}  // namespace trainctl::storage
