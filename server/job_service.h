// JobService: the user-facing job API over gRPC.
//
// Thin edge: every handler translates the request into work for the reconcile loop and replies
// after the loop's commit. Nothing here decides anything.
#pragma once

#include "server/agent_registry.h"
#include "server/reconcile_loop.h"
#include "server/watch_hub.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace trainctl::server {

class JobServiceImpl final : public v1::JobService::CallbackService {
 public:
  JobServiceImpl(ReconcileLoop* loop, AgentRegistry* registry, WatchHub* hub)
      : loop_(loop), registry_(registry), hub_(hub) {}

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
  ReconcileLoop* const loop_;
  AgentRegistry* const registry_;
  WatchHub* const hub_;
};

}  // namespace trainctl::server
