// The queue operations through Api (server/api_queue_ops.cc) and their REST routes, with a real
// reconcile loop, core and SQLite store and authentication on: who may hold, release, update and
// requeue a job (the cancel permission in its project), what an unknown or ended job answers, the
// request checks made before the loop, and CreateJob's dependencies on jobs only the database
// holds.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "server/agent_registry.h"
#include "server/api.h"
#include "server/authorizer.h"
#include "server/job_snapshots.h"
#include "server/reconcile_loop.h"
#include "server/rest/routes.h"
#include "server/tokens.h"
#include "server/watch_hub.h"
#include "storage/sqlite_store.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::server {
namespace queue_ops_api_test {

// trainctld's Api in one process, with tokens: alice and bob are members of team-a and team-b,
// vic a viewer, root an admin. Ended jobs leave the core at the next turn.
class ApiFixture {
 public:
  ApiFixture() {
    char tmpl[] = "/tmp/trainctl-queue-ops-XXXXXX";
    dir_ = mkdtemp(tmpl);
    auto store = storage::SqliteStore::Open(dir_ + "/trainctl.db");
    REQUIRE(store.ok());
    sched::CoreOptions options;
    options.id_seed = 11;
    options.checkpoint_root = dir_ + "/checkpoints";
    loop_ = std::make_unique<ReconcileLoop>(std::make_unique<sched::Core>(options),
                                            std::move(*store), &registry_, &snapshots_, WallNowMs);
    loop_->set_finished_job_cache_jobs(0);
    alice_ = Mint("alice", v1::ROLE_MEMBER, "team-a");
    bob_ = Mint("bob", v1::ROLE_MEMBER, "team-b");
    vic_ = Mint("vic", v1::ROLE_VIEWER, "");
    root_ = Mint("root", v1::ROLE_ADMIN, "");
    Api::Parts parts;
    parts.loop = loop_.get();
    parts.registry = &registry_;
    parts.snapshots = &snapshots_;
    parts.clock = WallNowMs;
    parts.auth = &auth_;
    api_ = std::make_unique<Api>(std::move(parts));
    loop_->Start();
  }

  ~ApiFixture() {
    hub_.Clear();
    loop_->Stop();
    std::filesystem::remove_all(dir_);
  }

  // Runs one Api operation as the holder of `bearer` ("" sends no token) and waits for its reply.
  template <class Req, class Resp>
  absl::StatusOr<Resp> Call(void (Api::*op)(const CallContext&, const Req&, Reply<Resp>),
                            const std::string& bearer, const Req& req) {
    CallContext call;
    if (!bearer.empty()) call.authorization = "Bearer " + bearer;
    auto reply = std::make_shared<std::promise<absl::StatusOr<Resp>>>();
    std::future<absl::StatusOr<Resp>> got = reply->get_future();
    (api_.get()->*op)(call, req, [reply](absl::StatusOr<Resp> r) { reply->set_value(r); });
    REQUIRE(got.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
    return got.get();
  }

  // A job of `project` submitted by root, depending on `depends_on` (afterany) when given.
  absl::StatusOr<v1::Job> Submit(const std::string& project, const std::string& depends_on = "") {
    v1::CreateJobRequest req;
    v1::JobSpec* spec = req.mutable_spec();
    spec->set_display_name("train");
    spec->set_project(project);
    v1::WorkerPool* pool = spec->add_worker_pools();
    pool->set_name("chief");
    pool->set_replica_count(1);
    pool->add_command("true");
    // More than any node has: it stays QUEUED.
    pool->mutable_resources()->set_gpus(8);
    if (!depends_on.empty()) {
      v1::Dependency* d = spec->add_depends_on();
      d->set_job(depends_on);
      d->set_condition(v1::DEPENDENCY_CONDITION_ENDED);
    }
    return Call(&Api::CreateJob, root_, req);
  }

  // Whether the core still holds job `id` (the loop's answer).
  bool CoreHolds(const std::string& id) {
    auto reply = std::make_shared<std::promise<bool>>();
    std::future<bool> got = reply->get_future();
    loop_->PostRead(
        [id, reply](Turn& t) {
          const bool holds = t.core.FindJob(id) != nullptr;
          t.after_commit->push_back([reply, holds] { reply->set_value(holds); });
        },
        nullptr);
    REQUIRE(got.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
    return got.get();
  }

  Api* api() { return api_.get(); }
  std::string alice_, bob_, vic_, root_;

 private:
  std::string Mint(const std::string& owner, v1::Role role, const std::string& project) {
    v1::ApiToken fields;
    fields.set_owner(owner);
    fields.set_role(role);
    if (!project.empty()) fields.add_projects(project);
    absl::StatusOr<MintedToken> t = MintToken(fields);
    REQUIRE(t.ok());
    tokens_.Put(t->row);
    return t->bearer;
  }

  std::string dir_;
  AgentRegistry registry_;
  WatchHub hub_;
  JobSnapshots snapshots_{&hub_};
  TokenRegistry tokens_;
  const Authorizer auth_{true, &tokens_, WallNowMs};
  std::unique_ptr<ReconcileLoop> loop_;
  std::unique_ptr<Api> api_;
};

v1::HoldJobRequest Hold(const std::string& id, const std::string& reason = "") {
  v1::HoldJobRequest req;
  req.set_id(id);
  req.set_reason(reason);
  return req;
}

v1::ReleaseJobRequest Release(const std::string& id) {
  v1::ReleaseJobRequest req;
  req.set_id(id);
  return req;
}

v1::UpdateJobRequest Update(const std::string& id, int priority) {
  v1::UpdateJobRequest req;
  req.set_id(id);
  req.set_priority(priority);
  return req;
}

v1::RequeueJobRequest Requeue(const std::string& id, const std::string& reason = "") {
  v1::RequeueJobRequest req;
  req.set_id(id);
  req.set_reason(reason);
  return req;
}

TEST_CASE("queue operations: each needs the cancel permission in the job's project") {
  ApiFixture f;
  absl::StatusOr<v1::Job> job = f.Submit("team-a");
  REQUIRE(job.ok());
  const std::string id = job->id();
  // A member of another project, and a viewer, are refused before anything changes.
  for (const std::string* who : {&f.bob_, &f.vic_}) {
    INFO((*who == f.bob_ ? "bob" : "vic"));
    CHECK(f.Call(&Api::HoldJob, *who, Hold(id)).status().code() ==
          absl::StatusCode::kPermissionDenied);
    CHECK(f.Call(&Api::ReleaseJob, *who, Release(id)).status().code() ==
          absl::StatusCode::kPermissionDenied);
    CHECK(f.Call(&Api::UpdateJob, *who, Update(id, 5)).status().code() ==
          absl::StatusCode::kPermissionDenied);
    CHECK(f.Call(&Api::RequeueJob, *who, Requeue(id)).status().code() ==
          absl::StatusCode::kPermissionDenied);
  }
  absl::Status bob = f.Call(&Api::HoldJob, f.bob_, Hold(id)).status();
  CHECK(absl::StrContains(bob.message(), "in project team-a"));
  // No token at all.
  CHECK(f.Call(&Api::HoldJob, "", Hold(id)).status().code() == absl::StatusCode::kUnauthenticated);
  // Bob's refusals left the job as it was; alice, a member of team-a, may hold it.
  absl::StatusOr<v1::Job> held = f.Call(&Api::HoldJob, f.alice_, Hold(id, "dataset not ready"));
  REQUIRE(held.ok());
  CHECK(held->held());
  CHECK(held->held_by() == "alice");
  CHECK(held->hold_reason() == "dataset not ready");
}

TEST_CASE("queue operations: requests are checked before the loop, unknown jobs are NOT_FOUND") {
  ApiFixture f;
  CHECK(f.Call(&Api::HoldJob, f.alice_, Hold("")).status().message() ==
        "id is required: the job's id, e.g. j-1a2b3c");
  absl::Status long_reason =
      f.Call(&Api::RequeueJob, f.alice_, Requeue("j-1", std::string(1025, 'x'))).status();
  CHECK(long_reason.code() == absl::StatusCode::kInvalidArgument);
  CHECK(long_reason.message() == "reason must be at most 1024 characters, got 1025");
  CHECK(f.Call(&Api::HoldJob, f.alice_, Hold("j-nope")).status().code() ==
        absl::StatusCode::kNotFound);
  CHECK(f.Call(&Api::ReleaseJob, f.alice_, Release("j-nope")).status().code() ==
        absl::StatusCode::kNotFound);
  CHECK(f.Call(&Api::UpdateJob, f.alice_, Update("j-nope", 1)).status().code() ==
        absl::StatusCode::kNotFound);
  CHECK(f.Call(&Api::RequeueJob, f.alice_, Requeue("j-nope")).status().code() ==
        absl::StatusCode::kNotFound);
}

TEST_CASE("queue operations: hold, update and release a queued job, requeue refuses it") {
  ApiFixture f;
  absl::StatusOr<v1::Job> job = f.Submit("team-a");
  REQUIRE(job.ok());
  const std::string id = job->id();
  REQUIRE(f.Call(&Api::HoldJob, f.alice_, Hold(id, "wait")).ok());
  absl::StatusOr<v1::Job> updated = f.Call(&Api::UpdateJob, f.alice_, Update(id, 7));
  REQUIRE(updated.ok());
  CHECK(updated->priority() == 7);
  absl::StatusOr<v1::Job> released = f.Call(&Api::ReleaseJob, f.alice_, Release(id));
  REQUIRE(released.ok());
  CHECK_FALSE(released->held());
  CHECK(f.Call(&Api::ReleaseJob, f.alice_, Release(id)).status().code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK(f.Call(&Api::RequeueJob, f.alice_, Requeue(id)).status().code() ==
        absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("queue operations: a job only the database holds is said to have ended") {
  ApiFixture f;
  absl::StatusOr<v1::Job> job = f.Submit("team-a");
  REQUIRE(job.ok());
  v1::CancelJobRequest cancel;
  cancel.set_id(job->id());
  REQUIRE(f.Call(&Api::CancelJob, f.root_, cancel).ok());
  // Ended jobs leave the core at once here (a cache of 0 jobs).
  for (int i = 0; i < 200 && f.CoreHolds(job->id()); ++i) usleep(10'000);
  REQUIRE_FALSE(f.CoreHolds(job->id()));
  absl::Status held = f.Call(&Api::HoldJob, f.alice_, Hold(job->id())).status();
  CHECK(held.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(held.message() ==
        absl::StrCat("job ", job->id(), " has ended (CANCELLED): only a QUEUED job can be held"));
  // The project check reads the database too: bob is still refused.
  CHECK(f.Call(&Api::RequeueJob, f.bob_, Requeue(job->id())).status().code() ==
        absl::StatusCode::kPermissionDenied);
}

TEST_CASE("CreateJob: dependsOn names a job that exists, in the core or only in the database") {
  ApiFixture f;
  absl::StatusOr<v1::Job> unknown = f.Submit("team-a", "j-nope");
  CHECK(unknown.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StartsWith(unknown.status().message(), "spec.dependsOn[0].job: no job j-nope"));

  absl::StatusOr<v1::Job> first = f.Submit("team-a");
  REQUIRE(first.ok());
  v1::CancelJobRequest cancel;
  cancel.set_id(first->id());
  REQUIRE(f.Call(&Api::CancelJob, f.root_, cancel).ok());
  for (int i = 0; i < 200 && f.CoreHolds(first->id()); ++i) usleep(10'000);
  REQUIRE_FALSE(f.CoreHolds(first->id()));
  // Only the database holds it now: its end (CANCELLED) meets afterany.
  absl::StatusOr<v1::Job> second = f.Submit("team-a", first->id());
  REQUIRE(second.ok());
  REQUIRE(second->dependencies_size() == 1);
  CHECK(second->dependencies(0).job() == first->id());
  CHECK(second->dependencies(0).ended() == v1::JOB_STATE_CANCELLED);
  CHECK(second->dependencies(0).met());
}

// The route of `method` `path` in the REST table.
const rest::Route& FindRestRoute(const std::string& method, const std::string& path) {
  for (const rest::Route& r : rest::Routes()) {
    if (r.method == method && r.path == path) return r;
  }
  FAIL("no REST route " << method << " " << path);
  throw std::logic_error("not reached");
}

TEST_CASE("REST: the queue operations' routes name their RPCs and reach the Api") {
  ApiFixture f;
  CHECK(std::string(FindRestRoute("POST", "/v1/jobs/{id}:hold").rpc) ==
        "trainctl.v1.JobService/HoldJob");
  CHECK(std::string(FindRestRoute("POST", "/v1/jobs/{id}:release").rpc) ==
        "trainctl.v1.JobService/ReleaseJob");
  CHECK(std::string(FindRestRoute("PATCH", "/v1/jobs/{id}").rpc) ==
        "trainctl.v1.JobService/UpdateJob");
  CHECK(std::string(FindRestRoute("POST", "/v1/jobs/{id}:requeue").rpc) ==
        "trainctl.v1.JobService/RequeueJob");

  absl::StatusOr<v1::Job> job = f.Submit("team-a");
  REQUIRE(job.ok());
  auto call = [&](const char* method, const char* path, const std::string& body,
                  const std::string& bearer) {
    rest::HttpRequest req;
    req.body = body;
    req.params.emplace("id", job->id());
    req.call.authorization = "Bearer " + bearer;
    return FindRestRoute(method, path).handle(f.api(), nullptr, req);
  };
  rest::HttpReply held =
      call("POST", "/v1/jobs/{id}:hold", R"({"reason": "quota talk"})", f.alice_);
  INFO(held.body);
  CHECK(held.status == 200);
  CHECK(absl::StrContains(held.body, "\"holdReason\":\"quota talk\""));
  rest::HttpReply patched =
      call("PATCH", "/v1/jobs/{id}", R"({"priority": 9, "labels": {"team": "vision"}})", f.alice_);
  INFO(patched.body);
  CHECK(patched.status == 200);
  CHECK(absl::StrContains(patched.body, "\"team\":\"vision\""));
  CHECK(call("POST", "/v1/jobs/{id}:release", "", f.alice_).status == 200);
  CHECK(call("POST", "/v1/jobs/{id}:requeue", "{}", f.alice_).status == 400);
  // A member of another project: 403; a body of the wrong shape: 400 before any call.
  CHECK(call("POST", "/v1/jobs/{id}:hold", "{}", f.bob_).status == 403);
  CHECK(call("PATCH", "/v1/jobs/{id}", R"({"priority": "high"})", f.alice_).status == 400);
}

}  // namespace queue_ops_api_test
}  // namespace trainctl::server
