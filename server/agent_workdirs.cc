// AgentService.FetchWorkdir: a job's working directory for the agent of a node that holds, or is
// about to hold, one of the job's replicas. The node proves who it is as its stream does (its
// certificate, with authentication); the job's state in the core says whether the node may have
// the job's files (a node that never held the job gets PERMISSION_DENIED: one project's code is
// not another node's to read). The archive is streamed from the WorkdirStore a chunk at a time.
#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/grpc_status.h"
#include "server/agent_service.h"

namespace trainctl::server {
namespace {

// The job's project when `node` holds one of its replicas and `digest` is its workdir.
absl::StatusOr<std::string> WorkdirHolder(ReconcileLoop* loop, const v1::FetchWorkdirRequest& req) {
  absl::Notification answered;
  absl::StatusOr<std::string> project = absl::InternalError("no answer");
  loop->PostRead(
      [&](Turn& t) {
        const sched::Job* job = t.core.FindJob(req.job_id());
        if (job == nullptr) {
          project = absl::NotFoundError(absl::StrCat("job ", req.job_id(), " is gone"));
        } else if (job->spec.workdir() != req.digest()) {
          project = absl::NotFoundError(
              absl::StrCat("job ", req.job_id(), " has no working directory ", req.digest()));
        } else {
          bool holds = false;
          for (const sched::Replica& r : job->replicas) holds |= r.node == req.node();
          project = holds ? absl::StatusOr<std::string>(job->project)
                          : absl::PermissionDeniedError(absl::StrCat(
                                "node ", req.node(), " holds no replica of job ", req.job_id()));
        }
        t.after_commit->push_back([&answered] { answered.Notify(); });
      },
      [&](const absl::Status& why) {
        project = why;
        answered.Notify();
      });
  answered.WaitForNotification();
  return project;
}

}  // namespace

grpc::Status AgentServiceImpl::FetchWorkdir(grpc::ServerContext* ctx,
                                            const v1::FetchWorkdirRequest* req,
                                            grpc::ServerWriter<v1::WorkdirChunk>* writer) {
  if (absl::Status who = CheckAgentIdentity(auth_, VerifiedPeerCertificate(*ctx), req->node());
      !who.ok()) {
    spdlog::warn("workdir fetch from {} for node {} refused: {}", ctx->peer(), req->node(),
                 who.ToString());
    return ToGrpcStatus(who);
  }
  if (workdirs_ == nullptr) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "this trainctld keeps no working directories");
  }
  absl::StatusOr<std::string> project = WorkdirHolder(loop_, *req);
  if (!project.ok()) return ToGrpcStatus(project.status());
  absl::StatusOr<std::optional<storage::WorkdirInfo>> info =
      workdirs_->Get(*project, req->digest());
  if (!info.ok()) return ToGrpcStatus(info.status());
  if (!info->has_value()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("project ", *project, " holds no upload ", req->digest()));
  }
  v1::WorkdirChunk chunk;
  chunk.set_size_bytes((*info)->size);
  absl::Status read = workdirs_->Read(*project, req->digest(), [&](const std::string& data) {
    chunk.set_data(data);
    if (!writer->Write(chunk)) return absl::CancelledError("the agent stopped reading");
    chunk.clear_size_bytes();
    return absl::OkStatus();
  });
  if (read.ok()) {
    spdlog::info("node {} fetched the working directory {} of job {} ({} bytes)", req->node(),
                 req->digest(), req->job_id(), (*info)->size);
  }
  return ToGrpcStatus(read);
}

}  // namespace trainctl::server
