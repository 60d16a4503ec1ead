// WorkdirService, SecretService and AgentService.FetchWorkdir of an in-process trainctld (real
// SQLite store, gRPC over loopback): every way an upload is refused and leaves nothing, the
// submit-time checks of a spec's workdir, secretRefs and imagePullSecret, the fetch refused to a
// node without the job, and the secrets' key checked against the database at start.
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/sha256.h"
#include "server/daemon.h"
#include "trainctl/v1/agent.grpc.pb.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace trainctl::server {
namespace project_data_service_test {

std::string NewDataDir() {
  char tmpl[] = "/tmp/trainctl-project-data-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  return tmpl;
}

// A started trainctld on `dir` with `extra` flags, and channels to it.
struct Server {
  explicit Server(const std::string& dir, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--data-dir",    dir,  "--listen", "127.0.0.1:0",
                                     "--http-listen", "off"};
    args.insert(args.end(), extra.begin(), extra.end());
    absl::StatusOr<DaemonFlags> flags = ParseDaemonFlags(args);
    REQUIRE(flags.ok());
    sigset_t none;
    sigemptyset(&none);
    daemon = std::make_unique<Daemon>(args, *flags, none);
    init = daemon->Init();
    if (!init.ok()) return;
    REQUIRE(daemon->Start().ok());
    auto channel = grpc::CreateChannel(daemon->address(), grpc::InsecureChannelCredentials());
    workdirs = v1::WorkdirService::NewStub(channel);
    secrets = v1::SecretService::NewStub(channel);
    jobs = v1::JobService::NewStub(channel);
    agents = v1::AgentService::NewStub(channel);
  }
  ~Server() { daemon->Shutdown(); }

  std::unique_ptr<Daemon> daemon;
  absl::Status init;
  std::unique_ptr<v1::WorkdirService::Stub> workdirs;
  std::unique_ptr<v1::SecretService::Stub> secrets;
  std::unique_ptr<v1::JobService::Stub> jobs;
  std::unique_ptr<v1::AgentService::Stub> agents;
};

std::string DigestOf(const std::string& bytes) {
  Sha256 hash;
  hash.Update(bytes);
  return "sha256:" + hash.HexDigest();
}

// Sends `messages` as one upload; the call's status, and the reply in *out.
grpc::Status Upload(Server& s, const std::vector<v1::UploadWorkdirRequest>& messages,
                    v1::Workdir* out = nullptr) {
  grpc::ClientContext ctx;
  v1::Workdir reply;
  auto writer = s.workdirs->UploadWorkdir(&ctx, &reply);
  for (const v1::UploadWorkdirRequest& m : messages) {
    if (!writer->Write(m)) break;
  }
  writer->WritesDone();
  grpc::Status status = writer->Finish();
  if (out != nullptr) *out = reply;
  return status;
}

v1::UploadWorkdirRequest First(const std::string& project, const std::string& digest, int64_t size,
                               const std::string& data) {
  v1::UploadWorkdirRequest m;
  m.set_project(project);
  m.set_digest(digest);
  m.set_size_bytes(size);
  m.set_data(data);
  return m;
}

v1::UploadWorkdirRequest Data(const std::string& data) {
  v1::UploadWorkdirRequest m;
  m.set_data(data);
  return m;
}

grpc::StatusCode Held(Server& s, const std::string& project, const std::string& digest) {
  grpc::ClientContext ctx;
  v1::GetWorkdirRequest req;
  req.set_project(project);
  req.set_digest(digest);
  v1::Workdir w;
  return s.workdirs->GetWorkdir(&ctx, req, &w).error_code();
}

void CheckRefused(const grpc::Status& s, const std::string& text) {
  INFO(s.error_message());
  CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(absl::StrContains(s.error_message(), text));
}

v1::CreateJobRequest Job(const std::string& project) {
  v1::CreateJobRequest req;
  v1::JobSpec* spec = req.mutable_spec();
  spec->set_display_name("j");
  spec->set_project(project);
  v1::WorkerPool* pool = spec->add_worker_pools();
  pool->set_name("chief");
  pool->set_replica_count(1);
  pool->add_command("true");
  return req;
}

TEST_CASE("uploads: stored once per project, bytes that do not match leave nothing",
          "[workdir][grpc]") {
  const std::string dir = NewDataDir();
  Server s(dir, {"--max-workdir-mb", "1"});
  REQUIRE(s.init.ok());
  const std::string bytes(1000 * 1024, 'a');  // two messages, under the 1 MiB cap
  const std::string digest = DigestOf(bytes);
  const int64_t size = static_cast<int64_t>(bytes.size());
  v1::Workdir stored;
  REQUIRE(Upload(s,
                 {First("team-a", digest, size, bytes.substr(0, 600 * 1024)),
                  Data(bytes.substr(600 * 1024))},
                 &stored)
              .ok());
  CHECK(stored.size_bytes() == size);
  CHECK_FALSE(stored.deduplicated());
  CHECK(Held(s, "team-a", digest) == grpc::StatusCode::OK);
  // Per project: team-b does not hold team-a's upload.
  CHECK(Held(s, "team-b", digest) == grpc::StatusCode::NOT_FOUND);
  REQUIRE(Upload(s,
                 {First("team-a", digest, size, bytes.substr(0, 600 * 1024)),
                  Data(bytes.substr(600 * 1024))},
                 &stored)
              .ok());
  CHECK(stored.deduplicated());

  const std::string other(1000, 'b');
  const std::string other_digest = DigestOf(other);
  SECTION("bytes that hash to another digest") {
    CheckRefused(Upload(s, {First("team-b", other_digest, 1000, std::string(1000, 'c'))}),
                 "hash to " + DigestOf(std::string(1000, 'c')));
  }
  SECTION("fewer bytes than announced") {
    CheckRefused(Upload(s, {First("team-b", other_digest, 2000, other)}),
                 "ended after 1000 of the 2000 bytes");
  }
  SECTION("more bytes than announced") {
    CheckRefused(Upload(s, {First("team-b", other_digest, 1000, other), Data("x")}),
                 "more than the 1000 bytes");
  }
  SECTION("a later message for another project") {
    v1::UploadWorkdirRequest later = Data(other.substr(500));
    later.set_project("team-c");
    CheckRefused(Upload(s, {First("team-b", other_digest, 1000, other.substr(0, 500)), later}),
                 "another project, digest or size");
  }
  SECTION("over trainctld's cap, before a byte is stored") {
    CheckRefused(Upload(s, {First("team-b", other_digest, 2 << 20, other)}), "--max-workdir-mb");
  }
  SECTION("a malformed digest, project or no message") {
    CheckRefused(Upload(s, {First("team-b", "md5:abc", 1000, other)}), "digest: must be");
    CheckRefused(Upload(s, {First("Team B", other_digest, 1000, other)}), "project: \"Team B\"");
    CheckRefused(Upload(s, {}), "the upload sent no message");
  }
  CHECK(Held(s, "team-b", other_digest) == grpc::StatusCode::NOT_FOUND);

  // A job may name only an upload its project holds.
  v1::CreateJobRequest job = Job("team-b");
  job.mutable_spec()->set_workdir(digest);
  grpc::ClientContext ctx;
  v1::Job created;
  grpc::Status refused = s.jobs->CreateJob(&ctx, job, &created);
  CheckRefused(refused, "workdir: project team-b holds no upload " + digest);
  job.mutable_spec()->set_project("team-a");
  grpc::ClientContext ctx2;
  REQUIRE(s.jobs->CreateJob(&ctx2, job, &created).ok());
  CHECK(created.spec().workdir() == digest);

  // A node that holds no replica of the job may not fetch its files.
  grpc::ClientContext fetch_ctx;
  v1::FetchWorkdirRequest fetch;
  fetch.set_node("node-x");
  fetch.set_job_id(created.id());
  fetch.set_digest(digest);
  auto reader = s.agents->FetchWorkdir(&fetch_ctx, fetch);
  v1::WorkdirChunk chunk;
  CHECK_FALSE(reader->Read(&chunk));
  const grpc::Status fetched = reader->Finish();
  CHECK(fetched.error_code() == grpc::StatusCode::PERMISSION_DENIED);
  CHECK(absl::StrContains(fetched.error_message(), "node node-x holds no replica of job"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("secrets: validated, never returned, and referenced only in their project",
          "[secrets][grpc]") {
  const std::string dir = NewDataDir();
  {
    Server s(dir);
    REQUIRE(s.init.ok());
    auto set = [&](const std::string& project, const std::string& name, const std::string& value) {
      grpc::ClientContext ctx;
      v1::SetSecretRequest req;
      req.set_project(project);
      req.set_name(name);
      req.set_value(value);
      v1::Secret out;
      return s.secrets->SetSecret(&ctx, req, &out);
    };
    REQUIRE(set("team-a", "hf", "hf-value-1").ok());
    CheckRefused(set("team-a", "-bad", "x"), "secret name must be");
    CheckRefused(set("team-a", "empty", ""), "needs a value");
    CheckRefused(set("team-a", "nul", std::string("a\0b", 3)), "without NUL");
    CheckRefused(set("team-a", "big", std::string(64 * 1024 + 1, 'x')), "at most 65536 bytes");
    CheckRefused(set("", "hf", "x"), "project is required");

    grpc::ClientContext list_ctx;
    v1::ListSecretsRequest list;
    list.set_project("team-a");
    v1::ListSecretsResponse listed;
    REQUIRE(s.secrets->ListSecrets(&list_ctx, list, &listed).ok());
    REQUIRE(listed.secrets_size() == 1);
    CHECK(listed.secrets(0).name() == "hf");
    CHECK(listed.secrets(0).size_bytes() == 10);
    CHECK_FALSE(absl::StrContains(listed.DebugString(), "hf-value-1"));

    v1::CreateJobRequest job = Job("team-b");
    (*job.mutable_spec()->mutable_worker_pools(0)->mutable_secret_refs())["HF_TOKEN"] = "hf";
    grpc::ClientContext create_ctx;
    v1::Job created;
    CheckRefused(s.jobs->CreateJob(&create_ctx, job, &created),
                 "workerPools[0].secretRefs[HF_TOKEN]: project team-b has no secret \"hf\"");
    job.mutable_spec()->set_project("team-a");
    grpc::ClientContext create_ctx2;
    REQUIRE(s.jobs->CreateJob(&create_ctx2, job, &created).ok());
    CHECK_FALSE(absl::StrContains(created.DebugString(), "hf-value-1"));
    // An image's pull secret is checked the same way.
    v1::CreateJobRequest imaged = Job("team-b");
    imaged.mutable_spec()->mutable_worker_pools(0)->set_image("registry:5000/team/train:1.4");
    imaged.mutable_spec()->mutable_worker_pools(0)->set_image_pull_secret("hf");
    grpc::ClientContext image_ctx;
    CheckRefused(s.jobs->CreateJob(&image_ctx, imaged, &created),
                 "workerPools[0].imagePullSecret: project team-b has no secret \"hf\"");
    imaged.mutable_spec()->set_project("team-a");
    grpc::ClientContext image_ctx2;
    REQUIRE(s.jobs->CreateJob(&image_ctx2, imaged, &created).ok());
    CHECK(created.spec().worker_pools(0).image_pull_secret() == "hf");
    CHECK_FALSE(absl::StrContains(created.DebugString(), "hf-value-1"));

    grpc::ClientContext delete_ctx;
    v1::DeleteSecretRequest del;
    del.set_project("team-a");
    del.set_name("nope");
    v1::Secret gone;
    CHECK(s.secrets->DeleteSecret(&delete_ctx, del, &gone).error_code() ==
          grpc::StatusCode::NOT_FOUND);
  }
  // The key is the database's: another one stops the start, naming the file.
  const std::string key = dir + "/secrets.key";
  struct stat st;
  REQUIRE(stat(key.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  std::filesystem::rename(key, dir + "/secrets.key.orig");
  {
    std::ofstream(key, std::ios::binary) << std::string(32, '\x11');
    REQUIRE(chmod(key.c_str(), 0600) == 0);
    Server s(dir);
    INFO(s.init.message());
    CHECK(s.init.code() == absl::StatusCode::kFailedPrecondition);
    CHECK(absl::StrContains(s.init.message(), "the key in " + key + " is not the one"));
  }
  // The original key opens them again; one others could read is made the owner's alone.
  std::filesystem::rename(dir + "/secrets.key.orig", key);
  REQUIRE(chmod(key.c_str(), 0644) == 0);
  {
    Server s(dir);
    CHECK(s.init.ok());
    REQUIRE(stat(key.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace project_data_service_test
}  // namespace trainctl::server
