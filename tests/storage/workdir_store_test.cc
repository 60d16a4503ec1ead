// WorkdirStore on both backends (the [backend] tests run again on PostgreSQL, the [postgres] ones
// only there: tests/storage/test_store.h): archives put in chunks and read back byte for byte,
// kept once per (project, digest), abandoned puts and crashed ones leaving nothing usable, uses,
// what Sweep deletes and keeps, and the schema 16 migration under the workdir store's connection.
#include "storage/workdir_store.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "storage/pg_workdir_store.h"
#include "storage/sqlite_workdir_store.h"
#include "tests/storage/store_reopen.h"
#include "tests/storage/test_store.h"

namespace trainctl::storage {
// Named, not anonymous: the test target is a unity build.
namespace workdir_store_test {

using Next = std::function<absl::StatusOr<bool>(std::string*)>;

const std::string kDigestA = "sha256:" + std::string(64, 'a');
const std::string kDigestB = "sha256:" + std::string(64, 'b');
const std::string kDigestC = "sha256:" + std::string(64, 'c');
const std::string kDigestD = "sha256:" + std::string(64, 'd');
// 2.5 MiB: two whole chunks and a half one.
constexpr size_t kBig = 5 * (size_t{1} << 20) / 2;

absl::StatusOr<std::unique_ptr<WorkdirStore>> TryOpenWorkdirs(const TestStore& db) {
  if (db.postgres()) {
    auto opened = PgWorkdirStore::Open(db.location());
    if (!opened.ok()) return opened.status();
    return std::unique_ptr<WorkdirStore>(*std::move(opened));
  }
  auto opened = SqliteWorkdirStore::Open(db.location());
  if (!opened.ok()) return opened.status();
  return std::unique_ptr<WorkdirStore>(*std::move(opened));
}

std::unique_ptr<WorkdirStore> OpenWorkdirs(const TestStore& db) {
  absl::StatusOr<std::unique_ptr<WorkdirStore>> store = TryOpenWorkdirs(db);
  INFO(store.status().ToString());
  REQUIRE(store.ok());
  return *std::move(store);
}

// `n` bytes that differ with `seed`, NUL and high bytes among them (what a text column mangles).
std::string Archive(size_t n, int seed) {
  std::string out(n, '\0');
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<char>((i * 131 + i / 4099 + seed * 7) & 0xff);
  return out;
}

WorkdirInfo Info(const std::string& digest, size_t size, int64_t upload_ms,
                 const std::string& project = "team-a") {
  return {project, digest, static_cast<int64_t>(size), upload_ms};
}

// A `next` that yields `data` (which outlives it) in chunks of `chunk` bytes, counting its calls.
Next Yield(const std::string& data, int* calls, size_t chunk = kWorkdirChunkBytes) {
  auto pos = std::make_shared<size_t>(0);
  return [&data, calls, chunk, pos](std::string* out) -> absl::StatusOr<bool> {
    ++*calls;
    const size_t n = std::min(chunk, data.size() - *pos);
    out->assign(data, *pos, n);
    *pos += n;
    return *pos < data.size();
  };
}

// The bytes Read streams, and how many chunks it visited.
absl::StatusOr<std::string> ReadAll(WorkdirStore& store, const std::string& digest,
                                    int* visits = nullptr, const std::string& project = "team-a") {
  std::string out;
  absl::Status s = store.Read(project, digest, [&](const std::string& chunk) {
    out += chunk;
    if (visits != nullptr) ++*visits;
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return out;
}

void PutOk(WorkdirStore& store, const WorkdirInfo& info, const std::string& data,
           size_t chunk = kWorkdirChunkBytes) {
  int calls = 0;
  absl::StatusOr<bool> put = store.Put(info, Yield(data, &calls, chunk));
  INFO(put.status().ToString());
  REQUIRE(put.ok());
  CHECK(*put);
}

int64_t Rows(const TestStore& db, const std::string& table) {
  return db.QueryInt("SELECT count(*) FROM " + table);
}

// A blob literal of `hex` in the backend's SQL.
std::string HexBlob(const TestStore& db, const std::string& hex) {
  return db.postgres() ? "'\\x" + hex + "'::bytea" : "x'" + hex + "'";
}

TEST_CASE("a workdir put in chunks is read back byte for byte", "[backend][workdir]") {
  TestStore db;
  std::unique_ptr<Store> main = db.Open();
  std::unique_ptr<WorkdirStore> store = OpenWorkdirs(db);
  const std::string data = Archive(kBig, 1);
  int calls = 0;
  absl::StatusOr<bool> put = store->Put(Info(kDigestA, kBig, 1'000), Yield(data, &calls));
  INFO(put.status().ToString());
  REQUIRE(put.ok());
  CHECK(*put);
  CHECK(calls == 3);
  CHECK(Rows(db, "workdir_chunks") == 3);
  CHECK(db.QueryInt("SELECT complete FROM workdirs") == 1);

  absl::StatusOr<std::optional<WorkdirInfo>> got = store->Get("team-a", kDigestA);
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK((*got)->project == "team-a");
  CHECK((*got)->digest == kDigestA);
  CHECK((*got)->size == static_cast<int64_t>(kBig));
  CHECK((*got)->upload_ms == 1'000);
  int visits = 0;
  absl::StatusOr<std::string> read = ReadAll(*store, kDigestA, &visits);
  REQUIRE(read.ok());
  CHECK(visits == 3);
  CHECK(read->size() == data.size());
  CHECK(*read == data);
  // Kept per project: another project's same digest is not there.
  REQUIRE(store->Get("team-b", kDigestA).ok());
  CHECK_FALSE(store->Get("team-b", kDigestA)->has_value());
  CHECK(ReadAll(*store, kDigestA, nullptr, "team-b").status().code() ==
        absl::StatusCode::kNotFound);
}

TEST_CASE("empty chunks from next are not stored, and a last one may be empty",
          "[backend][workdir]") {
  TestStore db;
  std::unique_ptr<Store> main = db.Open();
  std::unique_ptr<WorkdirStore> store = OpenWorkdirs(db);
  const std::string data = Archive(2 * kWorkdirChunkBytes, 2);
  // "", 1 MiB, "", 1 MiB, "" (the last).
  int call = 0;
  absl::StatusOr<bool> put =
      store->Put(Info(kDigestA, data.size(), 1'000), [&](std::string* chunk) {
        if (call == 1) chunk->assign(data, 0, kWorkdirChunkBytes);
        if (call == 3) chunk->assign(data, kWorkdirChunkBytes, kWorkdirChunkBytes);
        return ++call < 5;
      });
  INFO(put.status().ToString());
  REQUIRE(put.ok());
  CHECK(*put);
  CHECK(Rows(db, "workdir_chunks") == 2);
  CHECK(db.QueryInt("SELECT max(seq) FROM workdir_chunks") == 1);
  absl::StatusOr<std::string> read = ReadAll(*store, kDigestA);
  REQUIRE(read.ok());
  CHECK(*read == data);
}

TEST_CASE("a second put of a complete workdir reads none of its bytes and renews its time",
          "[backend][workdir]") {
  TestStore db;
  std::unique_ptr<Store> main = db.Open();
  std::unique_ptr<WorkdirStore> store = OpenWorkdirs(db);
  const std::string data = Archive(kBig, 3);
  PutOk(*store, Info(kDigestA, kBig, 1'000), data);
  int calls = 0;
  absl::StatusOr<bool> again = store->Put(Info(kDigestA, kBig, 5'000), Yield(data, &calls));
  REQUIRE(again.ok());
  CHECK_FALSE(*again);
  CHECK(calls == 0);
  CHECK(Rows(db, "workdir_chunks") == 3);
  // Its upload time is this upload's (never an earlier one's): Sweep's grace runs from it.
  CHECK((*store->Get("team-a", kDigestA))->upload_ms == 5'000);
  again = store->Put(Info(kDigestA, kBig, 3'000), Yield(data, &calls));
  REQUIRE(again.ok());
  CHECK_FALSE(*again);
  CHECK((*store->Get("team-a", kDigestA))->upload_ms == 5'000);
  absl::StatusOr<std::vector<WorkdirInfo>> swept = store->Sweep(12'000, 10'000);
  REQUIRE(swept.ok());
  CHECK(swept->empty());
  CHECK(calls == 0);
  // Another project's upload of the same bytes is its own.
  absl::StatusOr<bool> other =
      store->Put(Info(kDigestA, kBig, 5'000, "team-b"), Yield(data, &calls));
  REQUIRE(other.ok());
  CHECK(*other);
  CHECK(calls == 3);
  CHECK(Rows(db, "workdirs") == 2);
}

TEST_CASE("an error from next abandons the put and leaves no rows", "[backend][workdir]") {
  TestStore db;
  std::unique_ptr<Store> main = db.Open();
  std::unique_ptr<WorkdirStore> store = OpenWorkdirs(db);
  const std::string data = Archive(kBig, 4);
  int calls = 0;
  const Next whole = Yield(data, &calls);
  // The client goes away after two chunks were stored.
  absl::StatusOr<bool> put = store->Put(Info(kDigestA, kBig, 1'000), [&](std::string* chunk) {
    if (calls == 2) return absl::StatusOr<bool>(absl::CancelledError("the client went away"));
    return whole(chunk);
  });
  CHECK(put.status().code() == absl::StatusCode::kCancelled);
  CHECK(put.status().message() == "the client went away");
  REQUIRE(store->Get("team-a", kDigestA).ok());
  CHECK_FALSE(store->Get("team-a", kDigestA)->has_value());
  CHECK(ReadAll(*store, kDigestA).status().code() == absl::StatusCode::kNotFound);
  CHECK(Rows(db, "workdirs") == 0);
  CHECK(Rows(db, "workdir_chunks") == 0);
  // The client tries again, and this time it completes.
  PutOk(*store, Info(kDigestA, kBig, 2'000), data);
  CHECK(*ReadAll(*store, kDigestA) == data);
}

TEST_CASE("bytes that are not the size, or a chunk over the most, are refused and abandoned",
          "[backend][workdir]") {
  TestStore db;
  std::unique_ptr<Store> main = db.Open();
  std::unique_ptr<WorkdirStore> store = OpenWorkdirs(db);
  const std::string data = Archive(kBig, 5);
  int calls = 0;
  // Fewer bytes than the size.
  absl::StatusOr<bool> put = store->Put(Info(kDigestA, kBig + 1, 1'000), Yield(data, &calls));
  CHECK(put.status().code() == absl::StatusCode::kInvalidArgument);
  // More: refused at the chunk that passes the size, before the rest is read.
  calls = 0;
  put = store->Put(Info(kDigestA, kWorkdirChunkBytes + 10, 1'000), Yield(data, &calls));
  CHECK(put.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(calls == 2);
  // A chunk over kWorkdirChunkBytes.
  put = store->Put(Info(kDigestA, kBig, 1'000), Yield(data, &calls, kWorkdirChunkBytes + 1));
  CHECK(put.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(Rows(db, "workdirs") == 0);
  CHECK(Rows(db, "workdir_chunks") == 0);
}

TEST_CASE("a partial put left by a crash is never found, and a later put replaces it",
          "[backend][workdir]") {
  TestStore db;
  std::unique_ptr<Store> main = db.Open();
  std::unique_ptr<WorkdirStore> store = OpenWorkdirs(db);
  // What a trainctld that stopped mid-upload left: the row not complete, some chunks (one of
  // them at a number the new upload does not reach).
  db.Exec("INSERT INTO workdirs VALUES ('team-a', '" + kDigestA + "', 9999999, 500, 0)");
  for (const char* seq : {"0", "1", "40"}) {
    db.Exec("INSERT INTO workdir_chunks VALUES ('team-a', '" + kDigestA + "', " + seq + ", " +
            HexBlob(db, "00ff00ff") + ")");
  }
  REQUIRE(store->Get("team-a", kDigestA).ok());
  CHECK_FALSE(store->Get("team-a", kDigestA)->has_value());
  CHECK(ReadAll(*store, kDigestA).status().code() == absl::StatusCode::kNotFound);

  const std::string data = Archive(kBig, 6);
  PutOk(*store, Info(kDigestA, kBig, 2'000), data);
  CHECK(Rows(db, "workdir_chunks") == 3);
  CHECK(db.QueryInt("SELECT max(seq) FROM workdir_chunks") == 2);
  absl::StatusOr<std::optional<WorkdirInfo>> got = store->Get("team-a", kDigestA);
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK((*got)->size == static_cast<int64_t>(kBig));
  CHECK((*got)->upload_ms == 2'000);
  CHECK(*ReadAll(*store, kDigestA) == data);
}

TEST_CASE("reading a missing workdir is NOT_FOUND, and an error from visit stops the read",
          "[backend][workdir]") {
  TestStore db;
  std::unique_ptr<Store> main = db.Open();
  std::unique_ptr<WorkdirStore> store = OpenWorkdirs(db);
  int visits = 0;
  absl::Status missing = store->Read("team-a", kDigestA, [&](const std::string&) {
    ++visits;
    return absl::OkStatus();
  });
  CHECK(missing.code() == absl::StatusCode::kNotFound);
  CHECK(visits == 0);
  PutOk(*store, Info(kDigestA, kBig, 1'000), Archive(kBig, 7));
  absl::Status stopped = store->Read("team-a", kDigestA, [&](const std::string& chunk) {
    ++visits;
    CHECK(chunk.size() == static_cast<size_t>(kWorkdirChunkBytes));
    return absl::UnavailableError("the node went away");
  });
  CHECK(stopped.code() == absl::StatusCode::kUnavailable);
  CHECK(visits == 1);
}

TEST_CASE("AddUse is idempotent and keeps the first time", "[backend][workdir]") {
  TestStore db;
  std::unique_ptr<Store> main = db.Open();
  std::unique_ptr<WorkdirStore> store = OpenWorkdirs(db);
  PutOk(*store, Info(kDigestA, 10, 1'000), Archive(10, 8));
  REQUIRE(store->AddUse("team-a", kDigestA, "j-1", 2'000).ok());
  REQUIRE(store->AddUse("team-a", kDigestA, "j-1", 2'000).ok());
  CHECK(Rows(db, "workdir_uses") == 1);
  REQUIRE(store->AddUse("team-a", kDigestA, "j-1", 3'000).ok());
  CHECK(Rows(db, "workdir_uses") == 1);
  CHECK(db.QueryInt("SELECT add_ms FROM workdir_uses") == 2'000);
  REQUIRE(store->AddUse("team-a", kDigestA, "j-2", 3'000).ok());
  CHECK(Rows(db, "workdir_uses") == 2);
  // A use of a workdir the project does not hold is recorded all the same (Sweep deletes it
  // once its job is gone).
  REQUIRE(store->AddUse("team-b", kDigestA, "j-3", 3'000).ok());
  CHECK(Rows(db, "workdir_uses") == 3);
  CHECK_FALSE(store->Get("team-b", kDigestA)->has_value());
  // None of these jobs was ever stored: after the grace their uses go, and the workdir with them.
  absl::StatusOr<std::vector<WorkdirInfo>> swept = store->Sweep(100'000, 10'000);
  REQUIRE(swept.ok());
  REQUIRE(swept->size() == 1);
  CHECK((*swept)[0].digest == kDigestA);
  CHECK(Rows(db, "workdir_uses") == 0);
}

TEST_CASE("Sweep deletes what no job uses after the grace, and uses once their job is gone",
          "[backend][workdir]") {
  TestStore db;
  std::unique_ptr<Store> main = db.Open();
  std::unique_ptr<WorkdirStore> store = OpenWorkdirs(db);
  Batch jobs;
  jobs.jobs.push_back(reopen::MakeJob("j-1", 1'000));
  REQUIRE(main->Commit(jobs).ok());
  const std::string data = Archive(kBig, 9);
  PutOk(*store, Info(kDigestA, kBig, 1'000), data);               // used by j-1, which exists
  PutOk(*store, Info(kDigestB, 10, 1'000), data.substr(0, 10));   // unused, old
  PutOk(*store, Info(kDigestC, 20, 95'000), data.substr(0, 20));  // unused, recent
  PutOk(*store, Info(kDigestD, 30, 1'000), data.substr(0, 30));   // used by a job not yet stored
  REQUIRE(store->AddUse("team-a", kDigestA, "j-1", 1'000).ok());
  REQUIRE(store->AddUse("team-a", kDigestD, "j-pending", 95'000).ok());

  // At 100 s with a grace of 10 s: B alone goes.
  absl::StatusOr<std::vector<WorkdirInfo>> swept = store->Sweep(100'000, 10'000);
  INFO(swept.status().ToString());
  REQUIRE(swept.ok());
  REQUIRE(swept->size() == 1);
  CHECK((*swept)[0].project == "team-a");
  CHECK((*swept)[0].digest == kDigestB);
  CHECK((*swept)[0].size == 10);
  CHECK((*swept)[0].upload_ms == 1'000);
  CHECK_FALSE(store->Get("team-a", kDigestB)->has_value());
  CHECK(store->Get("team-a", kDigestA)->has_value());
  CHECK(store->Get("team-a", kDigestC)->has_value());
  CHECK(store->Get("team-a", kDigestD)->has_value());
  CHECK(Rows(db, "workdir_uses") == 2);
  CHECK(Rows(db, "workdir_chunks") == 3 + 1 + 1);

  // j-1 is deleted: its use goes, and A with it.
  Batch deleted;
  deleted.deleted_jobs.push_back("j-1");
  REQUIRE(main->Commit(deleted).ok());
  swept = store->Sweep(100'000, 10'000);
  REQUIRE(swept.ok());
  REQUIRE(swept->size() == 1);
  CHECK((*swept)[0].digest == kDigestA);
  CHECK((*swept)[0].size == static_cast<int64_t>(kBig));
  CHECK(ReadAll(*store, kDigestA).status().code() == absl::StatusCode::kNotFound);
  CHECK(Rows(db, "workdir_uses") == 1);  // j-pending's, within the grace

  // Much later, j-pending never stored: its use goes, then D and C.
  swept = store->Sweep(200'000, 10'000);
  REQUIRE(swept.ok());
  REQUIRE(swept->size() == 2);
  CHECK((*swept)[0].digest == kDigestC);
  CHECK((*swept)[1].digest == kDigestD);
  CHECK(Rows(db, "workdirs") == 0);
  CHECK(Rows(db, "workdir_chunks") == 0);
  CHECK(Rows(db, "workdir_uses") == 0);
  swept = store->Sweep(300'000, 10'000);
  REQUIRE(swept.ok());
  CHECK(swept->empty());
}

TEST_CASE("a job's use is written in the commit that creates the job, once", "[backend][workdir]") {
  TestStore db;
  std::unique_ptr<Store> main = db.Open();
  std::unique_ptr<WorkdirStore> store = OpenWorkdirs(db);
  PutOk(*store, Info(kDigestA, 10, 1'000), Archive(kBig, 3).substr(0, 10));
  Batch created;
  created.jobs.push_back(reopen::MakeJob("j-1", 1'000));
  created.workdir_uses.push_back({"team-a", kDigestA, "j-1", 1'000});
  REQUIRE(main->Commit(created).ok());
  CHECK(Rows(db, "workdir_uses") == 1);
  // Written again (a retried create): still one.
  Batch again;
  again.workdir_uses.push_back({"team-a", kDigestA, "j-1", 5'000});
  REQUIRE(main->Commit(again).ok());
  CHECK(Rows(db, "workdir_uses") == 1);
  // Long past the grace, the job's upload stays while the job does.
  absl::StatusOr<std::vector<WorkdirInfo>> swept = store->Sweep(500'000, 10'000);
  REQUIRE(swept.ok());
  CHECK(swept->empty());
  CHECK(store->Get("team-a", kDigestA)->has_value());
}

TEST_CASE("Sweep deletes an old partial upload, and a large workdir batch by batch",
          "[backend][workdir]") {
  TestStore db;
  std::unique_ptr<Store> main = db.Open();
  std::unique_ptr<WorkdirStore> store = OpenWorkdirs(db);
  db.Exec("INSERT INTO workdirs VALUES ('team-a', '" + kDigestA + "', 100, 500, 0)");
  db.Exec("INSERT INTO workdir_chunks VALUES ('team-a', '" + kDigestA + "', 0, " +
          HexBlob(db, "00") + ")");
  // 40 chunks of 1 KiB: more than one batch of deletes.
  const std::string data = Archive(40 * 1024, 10);
  PutOk(*store, Info(kDigestB, data.size(), 1'000), data, 1024);
  CHECK(Rows(db, "workdir_chunks") == 41);
  absl::StatusOr<std::vector<WorkdirInfo>> swept = store->Sweep(100'000, 10'000);
  REQUIRE(swept.ok());
  REQUIRE(swept->size() == 2);
  CHECK((*swept)[0].digest == kDigestA);
  CHECK((*swept)[0].size == 100);
  CHECK((*swept)[1].digest == kDigestB);
  CHECK(Rows(db, "workdirs") == 0);
  CHECK(Rows(db, "workdir_chunks") == 0);
}

TEST_CASE("the store serves other calls while next runs, and Sweep spares the upload",
          "[backend][workdir]") {
  TestStore db;
  std::unique_ptr<Store> main = db.Open();
  std::unique_ptr<WorkdirStore> store = OpenWorkdirs(db);
  PutOk(*store, Info(kDigestB, 10, 1'000), Archive(10, 11));
  const std::string data = Archive(kBig, 12);
  int calls = 0;
  const Next whole = Yield(data, &calls);
  std::vector<WorkdirInfo> swept_meanwhile;
  std::optional<WorkdirInfo> got_meanwhile;
  absl::StatusOr<bool> put = store->Put(Info(kDigestA, kBig, 1'000), [&](std::string* chunk) {
    if (calls == 1) {
      // Mid-upload, long after its start: Sweep takes B but leaves A to its upload.
      absl::StatusOr<std::vector<WorkdirInfo>> swept = store->Sweep(1'000'000, 10);
      REQUIRE(swept.ok());
      swept_meanwhile = *swept;
      absl::StatusOr<std::optional<WorkdirInfo>> got = store->Get("team-a", kDigestA);
      REQUIRE(got.ok());
      got_meanwhile = *got;
    }
    return whole(chunk);
  });
  INFO(put.status().ToString());
  REQUIRE(put.ok());
  CHECK(*put);
  REQUIRE(swept_meanwhile.size() == 1);
  CHECK(swept_meanwhile[0].digest == kDigestB);
  CHECK_FALSE(got_meanwhile.has_value());
  CHECK(*ReadAll(*store, kDigestA) == data);
}

TEST_CASE("two puts of one workdir at once store it once", "[backend][workdir]") {
  TestStore db;
  std::unique_ptr<Store> main = db.Open();
  std::unique_ptr<WorkdirStore> store = OpenWorkdirs(db);
  const std::string data = Archive(kBig, 13);
  int first_calls = 0;
  int second_calls = 0;
  const Next whole = Yield(data, &first_calls);
  absl::StatusOr<bool> second = absl::UnknownError("not run");
  std::thread other;
  absl::StatusOr<bool> first = store->Put(Info(kDigestA, kBig, 1'000), [&](std::string* chunk) {
    // The second starts while the first uploads: it waits for it, or finds it complete.
    if (first_calls == 0) {
      other = std::thread(
          [&] { second = store->Put(Info(kDigestA, kBig, 2'000), Yield(data, &second_calls)); });
    }
    return whole(chunk);
  });
  other.join();
  REQUIRE(first.ok());
  CHECK(*first);
  INFO(second.status().ToString());
  REQUIRE(second.ok());
  CHECK_FALSE(*second);
  CHECK(second_calls == 0);
  CHECK((*store->Get("team-a", kDigestA))->upload_ms == 2'000);  // the second's, stored once
  CHECK(Rows(db, "workdir_chunks") == 3);
  CHECK(*ReadAll(*store, kDigestA) == data);
}

TEST_CASE("a workdir written on its own connection is there after the store reopens",
          "[backend][workdir]") {
  TestStore db;
  const std::string data = Archive(kBig, 14);
  {
    std::unique_ptr<Store> main = db.Open();
    std::unique_ptr<WorkdirStore> store = OpenWorkdirs(db);
    PutOk(*store, Info(kDigestA, kBig, 1'000), data);
    REQUIRE(store->AddUse("team-a", kDigestA, "j-1", 1'000).ok());
    Batch b;
    b.jobs.push_back(reopen::MakeJob("j-1", 1'000));
    REQUIRE(main->Commit(b).ok());  // the loop commits beside it
  }
  std::unique_ptr<Store> main = db.Open();
  CHECK(*main->SchemaVersion() == Store::kSchemaVersion);
  std::unique_ptr<WorkdirStore> store = OpenWorkdirs(db);
  absl::StatusOr<std::optional<WorkdirInfo>> got = store->Get("team-a", kDigestA);
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK(*ReadAll(*store, kDigestA) == data);
  CHECK(Rows(db, "workdir_uses") == 1);
  absl::StatusOr<Snapshot> snap = main->Load();
  REQUIRE(snap.ok());
  CHECK(snap->jobs.size() == 1);
}

TEST_CASE("a database at schema 15 gains the workdir tables when the store opens it",
          "[backend][workdir]") {
  TestStore db;
  db.Open();
  // Back to what schema 15 held.
  db.Exec("DROP TABLE workdir_uses; DROP TABLE workdir_chunks; DROP TABLE workdirs");
  // And what later versions added (PostgreSQL's log tables, schema 17).
  if (db.postgres()) db.Exec("DROP TABLE log_pieces; DROP TABLE log_runs");
  db.Exec(db.postgres() ? "UPDATE schema_version SET version = 15" : "PRAGMA user_version=15");
  absl::StatusOr<std::unique_ptr<WorkdirStore>> early = TryOpenWorkdirs(db);
  INFO(early.status().ToString());
  CHECK(early.status().code() == absl::StatusCode::kFailedPrecondition);

  std::unique_ptr<Store> main = db.Open();
  CHECK(*main->SchemaVersion() == Store::kSchemaVersion);
  CHECK(Store::kSchemaVersion >= 16);
  std::unique_ptr<WorkdirStore> store = OpenWorkdirs(db);
  const std::string data = Archive(kBig, 15);
  PutOk(*store, Info(kDigestA, kBig, 1'000), data);
  CHECK(*ReadAll(*store, kDigestA) == data);
}

TEST_CASE("a lost connection fails the workdir call as UNAVAILABLE, the next call reconnects",
          "[postgres][workdir]") {
  TestStore db;
  std::unique_ptr<Store> main = db.Open();
  std::unique_ptr<WorkdirStore> store = OpenWorkdirs(db);
  const std::string data = Archive(kBig, 16);
  PutOk(*store, Info(kDigestA, kBig, 1'000), data);
  const std::string kill_others =
      "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = "
      "current_database() AND pid <> pg_backend_pid()";
  db.QueryInt(kill_others);
  CHECK(store->Get("team-a", kDigestA).status().code() == absl::StatusCode::kUnavailable);
  absl::StatusOr<std::optional<WorkdirInfo>> got = store->Get("team-a", kDigestA);
  INFO(got.status().ToString());
  REQUIRE(got.ok());
  CHECK(got->has_value());

  // Lost mid-upload: the put fails, its partial rows stay (nothing could delete them), and the
  // next put of the workdir replaces them.
  int calls = 0;
  const Next whole = Yield(data, &calls);
  absl::StatusOr<bool> put = store->Put(Info(kDigestB, kBig, 2'000), [&](std::string* chunk) {
    if (calls == 1) db.QueryInt(kill_others);
    return whole(chunk);
  });
  CHECK(put.status().code() == absl::StatusCode::kUnavailable);
  CHECK(Rows(db, "workdir_chunks") == 3 + 1);
  CHECK_FALSE(store->Get("team-a", kDigestB)->has_value());
  PutOk(*store, Info(kDigestB, kBig, 3'000), data);
  CHECK(Rows(db, "workdir_chunks") == 3 + 3);
  CHECK(*ReadAll(*store, kDigestB) == data);
}

}  // namespace workdir_store_test
}  // namespace trainctl::storage
