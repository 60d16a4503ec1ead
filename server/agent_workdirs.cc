// AgentService.FetchWorkdir: a job's working directory for the agent of a node that holds, or is
// about to hold, one of the job's replicas. The node proves who it is as its stream does (its
// certificate, with authentication); the job as the reconcile loop last published it says whether
// the node may have the job's files (a node that holds none of its replicas gets PERMISSION_DENIED:
// one project's code is not another node's to read). The archive is streamed from the
// WorkdirStore a chunk at a time.
#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/time_util.h"
#include "server/agent_service.h"

namespace trainctl::server {
namespace {

// The job's project when `node` holds one of its replicas and `digest` is its workdir, from the
// published snapshots: a turn publishes a placement before its launches are sent, so a node asks
// only after it is there, and the check never waits for the loop.
absl::StatusOr<std::string> WorkdirHolder(const JobSnapshots& snapshots,
                                          const v1::FetchWorkdirRequest& req) {
  absl::StatusOr<v1::Job> job = snapshots.Get(req.job_id(), WallNowMs());
  if (!job.ok()) {
    if (absl::IsNotFound(job.status())) {
      return absl::NotFoundError(absl::StrCat("job ", req.job_id(), " is gone"));
    }
    return job.status();
  }
  if (job->spec().workdir() != req.digest()) {
    return absl::NotFoundError(
        absl::StrCat("job ", req.job_id(), " has no working directory ", req.digest()));
  }
  for (const v1::Replica& r : job->replicas()) {
    if (r.node() == req.node()) return job->spec().project();
  }
  return absl::PermissionDeniedError(
      absl::StrCat("node ", req.node(), " holds no replica of job ", req.job_id()));
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
  if (workdirs_ == nullptr || snapshots_ == nullptr) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "this trainctld keeps no working directories");
  }
  absl::StatusOr<std::string> project = WorkdirHolder(*snapshots_, *req);
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
