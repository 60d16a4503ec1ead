// Online backups and versions against a real trainctld: `trainctl admin backup FILE` taken while
// jobs are being created opens, passes integrity_check and holds every job whose CreateJob returned
// before it began; one backup runs at a time; a backup restored as docs/operators/backups.md says
// starts a trainctld with those jobs; `trainctl version` prints both versions (GetVersion, also
// over REST), and the client's alone with an error when the server is down.
#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/version.h"
#include "tests/common/sqlite_column.h"
#include "tests/integration/mini_cluster.h"
#include "trainctl/v1/admin.grpc.pb.h"

namespace trainctl::testing {
namespace {

// A queued job (no agent runs it) with 16 KiB of env: jobs add up to a database of megabytes.
v1::CreateJobRequest BulkyJob(int i) {
  v1::CreateJobRequest req;
  v1::JobSpec* spec = req.mutable_spec();
  spec->set_display_name(absl::StrCat("bulky-", i));
  v1::WorkerPool* pool = spec->add_worker_pools();
  pool->set_name("chief");
  pool->set_replica_count(1);
  pool->add_command("/bin/true");
  (*pool->mutable_env())["PAYLOAD"] = std::string(16 << 10, static_cast<char>('a' + i % 26));
  pool->mutable_resources()->set_cpu(0.1);
  pool->mutable_resources()->set_memory_mb(16);
  return req;
}

// Creates jobs one after another on a thread of its own until stopped, and keeps the ids of
// those whose CreateJob returned OK, in order.
class Submitter {
 public:
  explicit Submitter(v1::JobService::Stub* stub) : thread_([this, stub] { Run(stub); }) {}
  ~Submitter() { Stop(); }

  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::vector<std::string> Acked() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return acked_;
  }
  size_t count() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return acked_.size();
  }
  // The first failed CreateJob's message; "" while none failed.
  std::string error() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return error_;
  }

 private:
  void Run(v1::JobService::Stub* stub) {
    for (int i = 0; !stop_; ++i) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      v1::Job job;
      const grpc::Status s = stub->CreateJob(&ctx, BulkyJob(i), &job);
      absl::MutexLock lock(&mu_);
      if (!s.ok()) {
        error_ = s.error_message();
        return;
      }
      acked_.push_back(job.id());
    }
  }

  absl::Mutex mu_;
  std::vector<std::string> acked_ ABSL_GUARDED_BY(mu_);
  std::string error_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> stop_{false};
  // Last: it starts once everything above exists.
  std::thread thread_;
};

// The names in `dir` that start with `prefix`.
std::vector<std::string> NamesStartingWith(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (absl::StartsWith(name, prefix)) names.push_back(name);
  }
  return names;
}

ClusterOptions NoAgents() {
  ClusterOptions o;
  o.agents = 0;
  return o;
}

TEST_CASE(
    "a backup taken while jobs are created is sound and holds every job acknowledged "
    "before it began",
    "[integration][backup]") {
  MiniCluster c(NoAgents());
  Submitter submitter(&c.jobs());
  // Megabytes of jobs first, so that the copy is many steps and chunks.
  REQUIRE(Eventually([&] { return submitter.count() >= 300 || !submitter.error().empty(); },
                     std::chrono::seconds(90)));
  REQUIRE(submitter.error().empty());

  const std::vector<std::string> before = submitter.Acked();
  const std::string file = c.dir() + "/backup.db";
  CliResult backup = c.Cli({"admin", "backup", file});
  const size_t during = submitter.count();
  INFO(backup.err);
  REQUIRE(backup.exit_code == 0);
  CHECK(absl::StartsWith(backup.out, "wrote " + file + ": trainctld's database as of "));
  CHECK(absl::StrContains(backup.err, "holds secret"));
  // Jobs were created while the backup ran.
  CHECK(during > before.size());
  CHECK((std::filesystem::status(file).permissions() & std::filesystem::perms::all) ==
        (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write));
  CHECK(SqliteColumn(file, "PRAGMA integrity_check") == std::vector<std::string>{"ok"});
  const std::vector<std::string> ids = SqliteColumn(file, "SELECT id FROM jobs");
  const std::set<std::string> held(ids.begin(), ids.end());
  std::vector<std::string> missing;
  for (const std::string& id : before) {
    if (held.count(id) == 0) missing.push_back(id);
  }
  CHECK(missing.empty());
  // Nothing left behind: no partial FILE beside it, no copy in the data dir.
  CHECK(NamesStartingWith(c.dir(), "backup.db.").empty());
  CHECK(NamesStartingWith(c.DataDir(), "trainctl.db.backup-").empty());
  // An existing FILE is kept.
  CliResult again = c.Cli({"admin", "backup", file});
  CHECK(again.exit_code == 2);
  CHECK(absl::StrContains(again.err, "FAILED_PRECONDITION: " + file + " exists: pass --force"));

  // One backup at a time. A stream that is not read holds its backup: its client takes 64 KiB
  // at a time, a chunk is 1 MiB.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 64 << 10);
  auto admin = v1::AdminService::NewStub(
      grpc::CreateCustomChannel(c.address(), grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext held_call;
  std::unique_ptr<grpc::ClientReader<v1::BackupChunk>> reader =
      admin->Backup(&held_call, v1::BackupRequest());
  v1::BackupChunk chunk;
  REQUIRE(reader->Read(&chunk));
  CHECK(chunk.data().size() == size_t{1} << 20);
  const std::string second = c.dir() + "/second.db";
  CliResult refused = c.Cli({"admin", "backup", second});
  CHECK(refused.exit_code == 2);
  CHECK(absl::StrContains(refused.err, "FAILED_PRECONDITION: another backup, for "));
  CHECK_FALSE(std::filesystem::exists(second));
  CHECK(NamesStartingWith(c.dir(), "second.db").empty());
  held_call.TryCancel();
  while (reader->Read(&chunk)) {
  }
  CHECK(reader->Finish().error_code() == grpc::StatusCode::CANCELLED);
  // Once it ended, the next is taken; the abandoned one left no copy.
  REQUIRE(Eventually([&] { return c.Cli({"admin", "backup", second}).exit_code == 0; }));
  CHECK(NamesStartingWith(c.DataDir(), "trainctl.db.backup-").empty());

  // Restored as docs/operators/backups.md says: stop trainctld, replace trainctl.db, remove -wal
  // and -shm, start it. The jobs acknowledged before the backup are back; one created long after is
  // not.
  submitter.Stop();
  REQUIRE(submitter.error().empty());
  const std::string later = submitter.Acked().back();
  c.KillDaemon(SIGTERM);
  const std::string db = c.DataDir() + "/trainctl.db";
  std::filesystem::copy_file(file, db, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::remove(db + "-wal");
  std::filesystem::remove(db + "-shm");
  c.StartDaemon();
  CHECK(c.GetJob(before.front()).id() == before.front());
  CHECK(c.GetJob(before.back()).spec().worker_pools(0).env().at("PAYLOAD").size() == 16 << 10);
  grpc::ClientContext ctx;
  v1::GetJobRequest get;
  get.set_id(later);
  v1::Job job;
  CHECK(c.jobs().GetJob(&ctx, get, &job).error_code() == grpc::StatusCode::NOT_FOUND);
}

TEST_CASE(
    "trainctl version prints the client's and the server's, and the client's alone when "
    "the server is down",
    "[integration][backup]") {
  MiniCluster c(NoAgents());
  CliResult v = c.Cli({"version"});
  INFO(v.err);
  REQUIRE(v.exit_code == 0);
  const std::string client_line = absl::StrCat("trainctl ", VersionText(), "\n");
  CHECK(absl::StartsWith(v.out, client_line));
  const std::string server_line = v.out.substr(client_line.size());
  CHECK(absl::StartsWith(server_line, absl::StrCat("trainctld ", kVersion, " (")));
  CHECK(absl::StrContains(server_line, "sqlite store; started "));
  if (kGitCommit[0] != '\0') {
    CHECK(absl::StrContains(server_line, absl::StrCat("commit ", kGitCommit)));
  }

  // Every program's --version is the same version.
  CHECK(c.Cli({"--version"}).out == client_line);
  CHECK(c.Run({BinDir() + "/trainctld", "--version"}).out ==
        absl::StrCat("trainctld ", VersionText(), "\n"));

  // Over REST too.
  const std::string http = c.http_address();
  httplib::Client rest(http.substr(0, http.rfind(':')),
                       std::stoi(http.substr(http.rfind(':') + 1)));
  httplib::Result got = rest.Get("/v1/version");
  REQUIRE(got);
  CHECK(got->status == 200);
  CHECK(absl::StrContains(got->body, absl::StrCat("\"version\":\"", kVersion, "\"")));
  CHECK(absl::StrContains(got->body, "\"store\":\"sqlite\""));

  // The server is down: the client's line, then the error.
  c.KillDaemon(SIGTERM);
  CliResult down = c.Cli({"version"});
  CHECK(down.exit_code == 2);
  CHECK(down.out == client_line);
  CHECK(absl::StrContains(down.err, "error: UNAVAILABLE: "));
}

}  // namespace
}  // namespace trainctl::testing
