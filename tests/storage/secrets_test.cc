// The cluster's secrets (Store::AdoptSecret) on both stores: the first candidate stored under a
// name is everyone's, across stores open at once and across a reopen, byte for byte.
#include <catch2/catch.hpp>
#include <string>

#include "tests/storage/test_store.h"

namespace trainctl::storage {
namespace {

TEST_CASE("the first secret adopted under a name is the one every store gets", "[backend]") {
  TestStore db;
  const std::string first("k\0e\xffy-1", 7);
  {
    auto a = db.Open();
    auto b = db.Open();
    absl::StatusOr<std::string> got = a->AdoptSecret("replica-token-key", first);
    INFO(got.status().ToString());
    REQUIRE(got.ok());
    CHECK(*got == first);
    // A second trainctld offers its own and gets the first one's.
    got = b->AdoptSecret("replica-token-key", "other");
    REQUIRE(got.ok());
    CHECK(*got == first);
    // Names are separate.
    got = b->AdoptSecret("another", "other");
    REQUIRE(got.ok());
    CHECK(*got == "other");
  }
  auto reopened = db.Open();
  absl::StatusOr<std::string> again = reopened->AdoptSecret("replica-token-key", "later");
  REQUIRE(again.ok());
  CHECK(*again == first);
}

}  // namespace
}  // namespace trainctl::storage
