// CentralLogs (server/central_logs.h) over a real FileLogStore in a temporary directory: what a
// ShipLogs request is answered (pieces taken where the copy ends, resynchronised elsewhere,
// malformed ones refused), the cap (the oldest ended job evicted first, pieces answered `retry`
// when nothing is left to evict), and deletion of the logs of deleted jobs.
#include "server/central_logs.h"

#include <catch2/catch.hpp>
#include <memory>
#include <set>
#include <string>

#include "storage/file_log_store.h"
#include "tests/storage/log_testing.h"
#include "tests/storage/temp_dir.h"

namespace trainctl::server {
namespace {

using storage::log_testing::Piece;

// Piece, the last of its run.
v1::LogPiece Last(const std::string& run_id, int64_t offset, const std::string& data,
                  int64_t time_ms) {
  v1::LogPiece p = Piece(run_id, offset, data, time_ms);
  p.set_final(true);
  return p;
}

v1::ShipLogsRequest Request(std::initializer_list<v1::LogPiece> pieces) {
  v1::ShipLogsRequest r;
  r.set_node("node-a");
  for (const v1::LogPiece& p : pieces) *r.add_pieces() = p;
  return r;
}

struct Fixture {
  storage::TempDir dir;
  std::unique_ptr<storage::FileLogStore> store;
  Fixture() {
    auto opened = storage::FileLogStore::Open(dir.path + "/logs");
    REQUIRE(opened.ok());
    store = *std::move(opened);
  }
};

TEST_CASE("central logs take pieces where the copy ends and resynchronise the others", "[logs]") {
  Fixture f;
  // No archive, snapshots or loop: every run is taken, every job counts as ended.
  CentralLogs logs(f.store.get(), {}, nullptr, nullptr, nullptr, nullptr);
  std::set<std::string> checked;
  const std::string run = "j-1/1/main-0/0";
  v1::ShipLogsResponse r = logs.Take(
      "node-a", Request({Piece(run, 0, "one\n", 1), Piece(run, 4, "two\n", 2)}), &checked);
  REQUIRE(r.runs_size() == 2);
  CHECK(r.runs(0).offset() == 4);
  CHECK(r.runs(1).offset() == 8);
  CHECK(r.runs(1).refused().empty());
  CHECK(r.runs(1).retry().empty());

  // Again (an agent that restarted and did not probe): nothing written twice, the end answered.
  r = logs.Take("node-a", Request({Piece(run, 0, "one\n", 3)}), &checked);
  CHECK(r.runs(0).offset() == 8);
  absl::StatusOr<storage::LogSlice> read = f.store->Read(run, 0, 100);
  REQUIRE(read.ok());
  CHECK(read->data == "one\ntwo\n");

  // The final piece completes the copy.
  r = logs.Take("node-a", Request({Last(run, 8, "three\n", 4)}), &checked);
  CHECK(r.runs(0).final());
  CHECK(r.runs(0).offset() == 14);

  // Not a run id; another node's run.
  r = logs.Take("node-a", Request({Piece("nonsense", 0, "x", 5)}), &checked);
  CHECK(!r.runs(0).refused().empty());
  v1::ShipLogsRequest other = Request({Piece(run, 14, "more\n", 6)});
  other.set_node("node-b");
  r = logs.Take("node-b", other, &checked);
  CHECK(!r.runs(0).refused().empty());
}

TEST_CASE("the cap evicts the job whose logs ended first, and answers retry when none is left",
          "[logs]") {
  Fixture f;
  CentralLogs::Options options;
  options.max_bytes = 5000;
  CentralLogs logs(f.store.get(), options, nullptr, nullptr, nullptr, nullptr);
  std::set<std::string> checked;
  const std::string line(999, 'x');
  const std::string live = "j-live/1/main-0/0";
  auto take = [&](const v1::LogPiece& piece) {
    return logs.Take("node-a", Request({piece}), &checked);
  };
  // Two ended jobs of about 1.1 KB each on disk, the older first, and a live one.
  take(Last("j-old/1/main-0/0", 0, line + "\n", 100));
  take(Last("j-new/1/main-0/0", 0, line + "\n", 200));
  for (int i = 0; i < 3; ++i) take(Piece(live, 1000 * i, line + "\n", 300 + i));
  // Past the cap: the job that ended first goes, down to 90% of it; the newer one stays.
  logs.Sweep();
  CHECK(absl::IsNotFound(f.store->Read("j-old/1/main-0/0", 0, 10).status()));
  CHECK(f.store->Read("j-new/1/main-0/0", 0, 10).ok());
  // The live job grows on: j-new goes too, then nothing ended is left, and pieces wait.
  take(Piece(live, 3000, line + "\n", 303));
  take(Piece(live, 4000, line + "\n", 304));
  v1::ShipLogsResponse r = take(Piece(live, 5000, line + "\n", 305));
  CHECK(absl::IsNotFound(f.store->Read("j-new/1/main-0/0", 0, 10).status()));
  REQUIRE(r.runs_size() == 1);
  CHECK(r.runs(0).offset() == 5000);
  CHECK(r.runs(0).retry().find("--log-store-max-gb") != std::string::npos);
  absl::StatusOr<std::optional<storage::LogRunState>> state = f.store->State(live);
  REQUIRE(state.ok());
  CHECK((*state)->stored == 5000);
}

TEST_CASE("central logs delete a deleted job's logs", "[logs]") {
  Fixture f;
  CentralLogs logs(f.store.get(), {}, nullptr, nullptr, nullptr, nullptr);
  std::set<std::string> checked;
  logs.Take("node-a", Request({Piece("j-1/1/main-0/0", 0, "a\n", 1)}), &checked);
  logs.Take("node-a", Request({Piece("j-2/1/main-0/0", 0, "b\n", 1)}), &checked);
  logs.Forget({"j-1"});
  logs.Sweep();
  CHECK(absl::IsNotFound(f.store->Read("j-1/1/main-0/0", 0, 10).status()));
  CHECK(f.store->Read("j-2/1/main-0/0", 0, 10).ok());
}

}  // namespace
}  // namespace trainctl::server
