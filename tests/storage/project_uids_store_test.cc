// Projects' replica uids (scheduler/project_uids.h) on both stores: written once with a commit,
// loaded after a reopen, and never shared by two projects nor given twice to one (the table's
// keys refuse it, and the whole commit with it).
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <utility>

#include "tests/storage/test_store.h"

namespace trainctl::storage {
namespace {

TEST_CASE("projects' replica uids survive a reopen, none is shared or given twice", "[backend]") {
  TestStore db;
  {
    auto store = db.TryOpen();
    REQUIRE(store.ok());
    Batch first;
    first.project_uids = {{"team-b", 65537}, {"team-a", 65536}};
    REQUIRE((*store)->Commit(first).ok());
    // Another project with team-a's uid, or team-a with another uid: the commit fails whole.
    for (const auto& row : {std::pair<std::string, uint32_t>{"team-c", 65536},
                            std::pair<std::string, uint32_t>{"team-a", 65599}}) {
      Batch clash;
      clash.quotas.emplace_back().set_project("team-c");
      clash.project_uids = {{"team-d", 65538}, row};
      CHECK_FALSE((*store)->Commit(clash).ok());
    }
  }
  auto store = db.TryOpen();
  REQUIRE(store.ok());
  auto snap = (*store)->Load();
  REQUIRE(snap.ok());
  CHECK(snap->project_uids ==
        std::map<std::string, uint32_t>{{"team-a", 65536}, {"team-b", 65537}});
  CHECK(snap->quotas.empty());  // nothing of the failed batches
}

}  // namespace
}  // namespace trainctl::storage
