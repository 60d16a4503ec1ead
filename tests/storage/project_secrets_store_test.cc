// Projects' sealed secrets on both stores: upserted by (project, name), deleted, and loaded after a
// reopen with every field, the sealed bytes exactly as written.
#include <catch2/catch.hpp>
#include <string>

#include "tests/storage/test_store.h"

namespace trainctl::storage {
namespace {

TEST_CASE("projects' sealed secrets are upserted, deleted and survive a reopen", "[backend]") {
  TestStore db;
  // Bytes a text column would mangle: NUL, high bytes.
  const std::string sealed_a("\x01\x00\xff\x80sealed", 10);
  {
    auto store = db.TryOpen();
    REQUIRE(store.ok());
    Batch first;
    first.secrets = {{"team-a", "WANDB", "old", 3, 1'000},
                     {"team-a", "HF", "hf", 2, 1'000},
                     {"team-b", "WANDB", "b", 1, 1'000}};
    REQUIRE((*store)->Commit(first).ok());
    Batch later;  // WANDB set again; HF deleted
    later.secrets = {{"team-a", "WANDB", sealed_a, 4, 2'000}};
    later.deleted_secrets = {{"team-a", "HF"}};
    REQUIRE((*store)->Commit(later).ok());
  }
  auto store = db.TryOpen();
  REQUIRE(store.ok());
  auto snap = (*store)->Load();
  REQUIRE(snap.ok());
  REQUIRE(snap->secrets.size() == 2);
  const SecretRow& a = snap->secrets[0];
  CHECK(a.project == "team-a");
  CHECK(a.name == "WANDB");
  CHECK(a.sealed == sealed_a);
  CHECK(a.size == 4);
  CHECK(a.update_ms == 2'000);
  CHECK(snap->secrets[1].project == "team-b");
  CHECK(snap->secrets[1].sealed == "b");
}

}  // namespace
}  // namespace trainctl::storage
