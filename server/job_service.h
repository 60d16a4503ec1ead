// JobService: the user-facing job API over gRPC.
//
// Thin edge: writes become work for the reconcile loop and are answered after the loop's commit;
// reads (get, list, watch) are answered from the published JobSnapshots and never wait for the
// loop. Nothing here decides anything.
#pragma once

#include "server/agent_registry.h"
#include "server/authorizer.h"
#include "server/job_snapshots.h"
#include "server/peer_limits.h"
#include "server/reconcile_loop.h"
#include "server/request_diagnosis.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace trainctl::server {

struct JobServiceLimits {
  // The most log bytes one ReadLogs asks an agent for, so that its reply fits trainctld's
  // --max-request-bytes. Default: a 4 MiB message less room for the reply's other fields.
  int64_t max_log_chunk = (int64_t{4} << 20) - (int64_t{64} << 10);
  // WatchJob streams one host may hold at once (--max-watches-per-peer); 0: unlimited.
  int64_t max_watches_per_peer = 0;
};

class JobServiceImpl final : public DiagnosingService<v1::JobService> {
 public:
  // `clock` gives the time queue statuses are computed for.
  // `auth` (not owned) authorizes every call; null allows everything.
  JobServiceImpl(ReconcileLoop* loop, AgentRegistry* registry, JobSnapshots* snapshots,
                 ReconcileLoop::Clock clock, const Authorizer* auth = nullptr,
                 JobServiceLimits limits = JobServiceLimits())
      : loop_(loop),
        registry_(registry),
        snapshots_(snapshots),
        clock_(std::move(clock)),
        auth_(auth),
        max_log_chunk_(limits.max_log_chunk),
        watches_("watch streams", "--max-watches-per-peer", limits.max_watches_per_peer) {
    Diagnose("CreateJob", &JobServiceImpl::CreateJob);
    Diagnose("GetJob", &JobServiceImpl::GetJob);
    Diagnose("ListJobs", &JobServiceImpl::ListJobs);
    Diagnose("CancelJob", &JobServiceImpl::CancelJob);
    Diagnose("WatchJob", &JobServiceImpl::WatchJob);
    Diagnose("ReadLogs", &JobServiceImpl::ReadLogs);
    Diagnose("ReportProgress", &JobServiceImpl::ReportProgress);
  }

  grpc::ServerUnaryReactor* CreateJob(grpc::CallbackServerContext* ctx,
                                      const v1::CreateJobRequest* req, v1::Job* resp) override;
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* ctx, const v1::GetJobRequest* req,
                                   v1::Job* resp) override;
  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* ctx,
                                     const v1::ListJobsRequest* req,
                                     v1::ListJobsResponse* resp) override;
  grpc::ServerUnaryReactor* CancelJob(grpc::CallbackServerContext* ctx,
                                      const v1::CancelJobRequest* req, v1::Job* resp) override;
  grpc::ServerWriteReactor<v1::Job>* WatchJob(grpc::CallbackServerContext* ctx,
                                              const v1::WatchJobRequest* req) override;
  grpc::ServerUnaryReactor* ReadLogs(grpc::CallbackServerContext* ctx,
                                     const v1::ReadLogsRequest* req,
                                     v1::ReadLogsResponse* resp) override;
  grpc::ServerUnaryReactor* ReportProgress(grpc::CallbackServerContext* ctx,
                                           const v1::ReportProgressRequest* req,
                                           v1::ReportProgressResponse* resp) override;

 private:
  // Authorizer::CheckProject, or OK without an authorizer.
  absl::Status CheckProject(const Caller& caller, Permission p, const std::string& project) const;
  // CheckProject for the project of job `job_id` (OK when it is unknown: NOT_FOUND follows).
  absl::Status CheckJobProject(Turn& t, const Caller& caller, Permission p,
                               const std::string& job_id) const;

  ReconcileLoop* const loop_;
  AgentRegistry* const registry_;
  JobSnapshots* const snapshots_;
  const ReconcileLoop::Clock clock_;
  const Authorizer* const auth_;
  const int64_t max_log_chunk_;
  PeerStreamLimiter watches_;
};

}  // namespace trainctl::server
