// QuotaService and the queue status of JobService through the real reconcile loop, core and a
// SQLite store in a temporary directory, served on a loopback port.
#include "server/quota_service.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "server/agent_registry.h"
#include "server/job_service.h"
#include "server/job_snapshots.h"
#include "server/reconcile_loop.h"
#include "server/watch_hub.h"
#include "storage/sqlite_store.h"

namespace trainctl::server {
namespace {

// trainctld in one process, without agents: every project's default quota is 4 gpus.
class Server {
 public:
  Server() {
    char tmpl[] = "/tmp/trainctl-server-XXXXXX";
    dir_ = mkdtemp(tmpl);
    auto store = storage::SqliteStore::Open(db_path());
    REQUIRE(store.ok());
    sched::CoreOptions options;
    options.id_seed = 7;
    options.checkpoint_root = dir_ + "/checkpoints";
    options.default_quota.gpus = 4;
    loop_ = std::make_unique<ReconcileLoop>(std::make_unique<sched::Core>(options),
                                            std::move(*store), &registry_, &snapshots_, WallNowMs);
    Api::Parts parts;
    parts.loop = loop_.get();
    parts.registry = &registry_;
    parts.snapshots = &snapshots_;
    parts.clock = WallNowMs;
    api_ = std::make_unique<Api>(std::move(parts));
    jobs_ = std::make_unique<JobServiceImpl>(api_.get());
    quotas_ = std::make_unique<QuotaServiceImpl>(api_.get());
    loop_->Start();
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(jobs_.get());
    builder.RegisterService(quotas_.get());
    server_ = builder.BuildAndStart();
    REQUIRE(server_ != nullptr);
    auto channel =
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials());
    job_stub_ = v1::JobService::NewStub(channel);
    quota_stub_ = v1::QuotaService::NewStub(channel);
  }

  ~Server() {
    server_->Shutdown();
    hub_.Clear();
    loop_->Stop();
    std::filesystem::remove_all(dir_);
  }

  std::string db_path() const { return dir_ + "/trainctl.db"; }
  v1::JobService::Stub& jobs() { return *job_stub_; }
  v1::QuotaService::Stub& quota() { return *quota_stub_; }

 private:
  std::string dir_;
  AgentRegistry registry_;
  WatchHub hub_;
  JobSnapshots snapshots_{&hub_};
  std::unique_ptr<ReconcileLoop> loop_;
  std::unique_ptr<Api> api_;
  std::unique_ptr<JobServiceImpl> jobs_;
  std::unique_ptr<QuotaServiceImpl> quotas_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::JobService::Stub> job_stub_;
  std::unique_ptr<v1::QuotaService::Stub> quota_stub_;
};

v1::JobSpec GpuJob(const std::string& project, int gpus) {
  v1::JobSpec spec;
  spec.set_display_name("train");
  spec.set_project(project);
  v1::WorkerPool* pool = spec.add_worker_pools();
  pool->set_name("chief");
  pool->set_replica_count(1);
  pool->add_command("true");
  pool->mutable_resources()->set_gpus(gpus);
  return spec;
}

TEST_CASE("SetQuota answers once the quota is durable") {
  Server s;
  v1::SetQuotaRequest request;
  request.mutable_quota()->set_project("team-a");
  request.mutable_quota()->set_gpus(8);
  request.mutable_quota()->set_cohort("research");
  grpc::ClientContext ctx;
  v1::Project project;
  REQUIRE(s.quota().SetQuota(&ctx, request, &project).ok());
  CHECK(project.name() == "team-a");
  CHECK(!project.default_quota());
  CHECK(project.quota().gpus() == 8);

  // A second connection to the database already sees the row.
  auto store = storage::SqliteStore::Open(s.db_path());
  REQUIRE(store.ok());
  auto snap = (*store)->Load();
  REQUIRE(snap.ok());
  REQUIRE(snap->quotas.size() == 1);
  CHECK(snap->quotas[0].project() == "team-a");
  CHECK(snap->quotas[0].gpus() == 8);
  CHECK(snap->quotas[0].cohort() == "research");

  grpc::ClientContext get_ctx;
  v1::GetQuotaRequest get;
  get.set_project("team-a");
  REQUIRE(s.quota().GetQuota(&get_ctx, get, &project).ok());
  CHECK(project.quota().gpus() == 8);

  grpc::ClientContext bad_ctx;
  request.mutable_quota()->set_gpus(-1);
  CHECK(s.quota().SetQuota(&bad_ctx, request, &project).error_code() ==
        grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_CASE("a job is readable and listed as soon as CreateJob returns") {
  Server s;
  for (int i = 0; i < 20; ++i) {
    v1::CreateJobRequest create;
    *create.mutable_spec() = GpuJob("team-a", 1);
    grpc::ClientContext ctx;
    v1::Job created;
    REQUIRE(s.jobs().CreateJob(&ctx, create, &created).ok());
    grpc::ClientContext get_ctx;
    v1::GetJobRequest get;
    get.set_id(created.id());
    v1::Job read;
    REQUIRE(s.jobs().GetJob(&get_ctx, get, &read).ok());
    CHECK(read.id() == created.id());
    CHECK(read.state() == v1::JOB_STATE_QUEUED);
    CHECK(read.queue_status().position() == i + 1);  // no node: every job waits, in order
    grpc::ClientContext list_ctx;
    v1::ListJobsResponse listed;
    REQUIRE(s.jobs().ListJobs(&list_ctx, v1::ListJobsRequest(), &listed).ok());
    REQUIRE(listed.jobs_size() == i + 1);
    CHECK(listed.jobs(0).id() == created.id());  // newest first
  }
}

TEST_CASE("GetQuota gives a project without a quota the default one") {
  Server s;
  v1::GetQuotaRequest request;
  request.set_project("team-new");
  grpc::ClientContext ctx;
  v1::Project project;
  REQUIRE(s.quota().GetQuota(&ctx, request, &project).ok());
  CHECK(project.default_quota());
  CHECK(project.quota().gpus() == 4);
  CHECK(!project.quota().has_cpu());

  request.set_project("Not_A_Label");
  grpc::ClientContext bad_ctx;
  CHECK(s.quota().GetQuota(&bad_ctx, request, &project).error_code() ==
        grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_CASE("ListQueue takes a limit of 1..10000") {
  Server s;
  for (int limit : {-1, 10001}) {
    v1::ListQueueRequest request;
    request.set_limit(limit);
    grpc::ClientContext ctx;
    v1::ListQueueResponse response;
    grpc::Status status = s.quota().ListQueue(&ctx, request, &response);
    CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(status.error_message() == absl::StrCat("limit must be 1..10000, got ", limit));
  }
  v1::ListQueueRequest request;  // limit 0: the default
  grpc::ClientContext ctx;
  v1::ListQueueResponse response;
  CHECK(s.quota().ListQueue(&ctx, request, &response).ok());
  CHECK(response.jobs().empty());
}

TEST_CASE("a queued job carries its blockers through GetJob, ListJobs and ListQueue") {
  Server s;
  v1::Job first, second;
  for (v1::Job* job : {&first, &second}) {
    v1::CreateJobRequest create;
    *create.mutable_spec() = GpuJob("team-b", 8);  // more than the default quota of 4
    grpc::ClientContext ctx;
    REQUIRE(s.jobs().CreateJob(&ctx, create, job).ok());
  }

  v1::GetJobRequest get;
  get.set_id(second.id());
  grpc::ClientContext get_ctx;
  v1::Job got;
  REQUIRE(s.jobs().GetJob(&get_ctx, get, &got).ok());
  CHECK(got.state() == v1::JOB_STATE_QUEUED);
  CHECK(got.queue_status().position() == 2);
  CHECK(got.queue_status().jobs_ahead_count() == 1);
  REQUIRE(got.queue_status().jobs_ahead_size() == 1);
  CHECK(got.queue_status().jobs_ahead(0) == first.id());
  REQUIRE(got.queue_status().blockers_size() >= 2);
  CHECK(got.queue_status().blockers(0).kind() == "QUOTA");
  CHECK(got.queue_status().blockers().rbegin()->kind() == "PRIORITY");

  v1::ListJobsRequest list;
  grpc::ClientContext list_ctx;
  v1::ListJobsResponse listed;
  REQUIRE(s.jobs().ListJobs(&list_ctx, list, &listed).ok());
  REQUIRE(listed.jobs_size() == 2);
  for (const v1::Job& job : listed.jobs()) CHECK(job.queue_status().blockers_size() > 0);

  v1::ListQueueRequest queue;
  queue.set_project("team-b");
  queue.set_limit(1);
  grpc::ClientContext queue_ctx;
  v1::ListQueueResponse queued;
  REQUIRE(s.quota().ListQueue(&queue_ctx, queue, &queued).ok());
  REQUIRE(queued.jobs_size() == 1);
  CHECK(queued.jobs(0).id() == first.id());
  CHECK(queued.jobs(0).queue_status().position() == 1);

  grpc::ClientContext projects_ctx;
  v1::ListProjectsResponse projects;
  REQUIRE(s.quota().ListProjects(&projects_ctx, v1::ListProjectsRequest(), &projects).ok());
  REQUIRE(projects.projects_size() == 1);
  CHECK(projects.projects(0).name() == "team-b");
  CHECK(projects.projects(0).queued_jobs() == 2);
  CHECK(projects.projects(0).default_quota());
}

}  // namespace
}  // namespace trainctl::server
