#include "tests/cli/fake_quota_service.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"

namespace trainctl::cli {
namespace {

constexpr int64_t kSecondMs = 1000;

bool IsWellFormed(const std::string& name) {
  if (name.empty() || name.size() > 63) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

v1::Project DefaultProject(const std::string& name) {
  v1::Project p;
  p.set_name(name);
  p.mutable_quota()->set_project(name);
  p.set_default_quota(true);
  return p;
}

std::map<std::string, v1::Project> Projects() {
  std::map<std::string, v1::Project> projects;
  v1::Project& a = projects["team-a"];
  a.set_name("team-a");
  v1::Quota* q = a.mutable_quota();
  q->set_project("team-a");
  q->set_gpus(8);
  q->set_cpu(32);
  q->set_max_running_jobs(4);
  q->set_cohort("research");
  q->mutable_borrowing_limit()->set_gpus(2);
  q->set_queueing_strategy(v1::QUEUEING_STRATEGY_STRICT_FIFO);
  a.mutable_in_use()->set_gpus(4);
  a.mutable_in_use()->set_cpu(8);
  a.mutable_in_use()->set_memory_mb(16384);
  a.set_running_jobs(1);
  a.set_replica_uid(65536);
  a.set_queued_jobs(2);

  v1::Project& s = projects["team-s"];
  s.set_name("team-s");
  q = s.mutable_quota();
  q->set_project("team-s");
  q->set_gpus(8);
  q->set_cpu(16);
  q->set_memory_mb(65536);
  q->set_cohort("research");
  q->mutable_borrowing_limit()->set_gpus(2);
  q->set_queueing_strategy(v1::QUEUEING_STRATEGY_BEST_EFFORT_FIFO);
  *q->mutable_starvation_limit() = MsToDuration(600 * kSecondMs);

  v1::Project& v = projects["vision"];
  v = DefaultProject("vision");
  v.mutable_in_use()->set_gpus(2);
  v.set_running_jobs(1);
  v.set_queued_jobs(1);
  v.mutable_borrowed()->set_gpus(1);
  return projects;
}

v1::Blocker MakeBlocker(const std::string& kind, const std::string& message) {
  v1::Blocker b;
  b.set_kind(kind);
  b.set_message(message);
  return b;
}

std::vector<v1::Job> Queue(int64_t now_ms) {
  std::vector<v1::Job> jobs(3);
  jobs[0].set_id("j-q1");
  jobs[0].set_display_name("bert-large");
  jobs[0].set_project("team-a");
  jobs[0].set_priority(10);
  *jobs[0].mutable_create_time() = MsToTimestamp(now_ms - 3600 * kSecondMs);
  *jobs[0].mutable_queue_time() = MsToTimestamp(now_ms - 300 * kSecondMs);
  jobs[0].mutable_queue_status()->set_position(1);
  *jobs[0].mutable_queue_status()->add_blockers() =
      MakeBlocker("QUOTA", "QUOTA: project team-a needs 8 gpus, 4 of 8 in use by 1 job");

  jobs[1].set_id("j-q2");
  jobs[1].set_display_name("sweep-3");
  jobs[1].set_project("team-a");
  *jobs[1].mutable_create_time() = MsToTimestamp(now_ms - 120 * kSecondMs);
  v1::QueueStatus* qs = jobs[1].mutable_queue_status();
  qs->set_position(2);
  qs->add_jobs_ahead("j-q1");
  qs->set_jobs_ahead_count(1);
  *qs->add_blockers() =
      MakeBlocker("QUOTA", "QUOTA: project team-a needs 2 gpus, 4 of 8 in use by 1 job");
  *qs->add_blockers() = MakeBlocker("PRIORITY", "PRIORITY: 1 job ahead in team-a");

  jobs[2].set_id("j-q3");
  jobs[2].set_display_name("resnet");
  jobs[2].set_project("vision");
  jobs[2].set_priority(-5);
  *jobs[2].mutable_queue_time() = MsToTimestamp(now_ms - 30 * kSecondMs);
  jobs[2].mutable_queue_status()->set_position(1);
  for (v1::Job& job : jobs) job.set_state(v1::JOB_STATE_QUEUED);
  return jobs;
}

}  // namespace

grpc::Status FakeQuotaService::GetQuota(grpc::ServerContext*, const v1::GetQuotaRequest* request,
                                        v1::Project* project) {
  if (!IsWellFormed(request->project())) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("project must be 1..63 characters of a-z, 0-9 and '-'; got \"",
                                     request->project(), "\""));
  }
  const std::map<std::string, v1::Project> projects = Projects();
  auto it = projects.find(request->project());
  *project = it != projects.end() ? it->second : DefaultProject(request->project());
  return grpc::Status::OK;
}

grpc::Status FakeQuotaService::SetQuota(grpc::ServerContext*, const v1::SetQuotaRequest* request,
                                        v1::Project* project) {
  {
    absl::MutexLock lock(&mu_);
    last_set_ = *request;
  }
  if (request->quota().has_gpus() && request->quota().gpus() < 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("quota.gpus must be >= 0, got ", request->quota().gpus()));
  }
  v1::GetQuotaRequest get;
  get.set_project(request->quota().project());
  grpc::Status found = GetQuota(nullptr, &get, project);
  if (!found.ok()) return found;
  *project->mutable_quota() = request->quota();
  project->set_default_quota(false);
  return grpc::Status::OK;
}

grpc::Status FakeQuotaService::ListProjects(grpc::ServerContext*, const v1::ListProjectsRequest*,
                                            v1::ListProjectsResponse* response) {
  for (const auto& [name, project] : Projects()) *response->add_projects() = project;
  return grpc::Status::OK;
}

grpc::Status FakeQuotaService::ListQueue(grpc::ServerContext*, const v1::ListQueueRequest* request,
                                         v1::ListQueueResponse* response) {
  const int limit = request->limit() == 0 ? 1000 : request->limit();
  if (limit < 1 || limit > 10000) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("limit must be 1..10000, got ", request->limit()));
  }
  for (const v1::Job& job : Queue(WallNowMs())) {
    if (response->jobs_size() >= limit) break;
    if (request->project().empty() || request->project() == job.project()) {
      *response->add_jobs() = job;
    }
  }
  return grpc::Status::OK;
}

v1::SetQuotaRequest FakeQuotaService::LastSetQuotaRequest() {
  absl::MutexLock lock(&mu_);
  return last_set_;
}

}  // namespace trainctl::cli
