// JobService: the user-facing job API over gRPC.
//
// A thin edge over Api (server/api.h), which authorizes, checks and decides; this file only turns
// calls into Api operations and replies into gRPC statuses, and keeps WatchJob's stream.
#pragma once

#include "server/api.h"
#include "server/request_diagnosis.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace trainctl::server {

class JobServiceImpl final : public DiagnosingService<v1::JobService> {
 public:
  // `api` (not owned) must outlive the service.
  explicit JobServiceImpl(Api* api) : api_(api) {
    Diagnose("CreateJob", &JobServiceImpl::CreateJob);
    Diagnose("GetJob", &JobServiceImpl::GetJob);
    Diagnose("ListJobs", &JobServiceImpl::ListJobs);
    Diagnose("CancelJob", &JobServiceImpl::CancelJob);
    Diagnose("ResizeJob", &JobServiceImpl::ResizeJob);
    Diagnose("DeleteJob", &JobServiceImpl::DeleteJob);
    Diagnose("WatchJob", &JobServiceImpl::WatchJob);
    Diagnose("ReadLogs", &JobServiceImpl::ReadLogs);
    Diagnose("GetStacks", &JobServiceImpl::GetStacks);
    Diagnose("ReportProgress", &JobServiceImpl::ReportProgress);
    Diagnose("HoldJob", &JobServiceImpl::HoldJob);
    Diagnose("ReleaseJob", &JobServiceImpl::ReleaseJob);
    Diagnose("UpdateJob", &JobServiceImpl::UpdateJob);
    Diagnose("RequeueJob", &JobServiceImpl::RequeueJob);
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
  grpc::ServerUnaryReactor* ResizeJob(grpc::CallbackServerContext* ctx,
                                      const v1::ResizeJobRequest* req, v1::Job* resp) override;
  grpc::ServerUnaryReactor* DeleteJob(grpc::CallbackServerContext* ctx,
                                      const v1::DeleteJobRequest* req,
                                      v1::DeleteJobResponse* resp) override;
  grpc::ServerWriteReactor<v1::Job>* WatchJob(grpc::CallbackServerContext* ctx,
                                              const v1::WatchJobRequest* req) override;
  grpc::ServerUnaryReactor* ReadLogs(grpc::CallbackServerContext* ctx,
                                     const v1::ReadLogsRequest* req,
                                     v1::ReadLogsResponse* resp) override;
  grpc::ServerUnaryReactor* GetStacks(grpc::CallbackServerContext* ctx,
                                      const v1::GetStacksRequest* req,
                                      v1::GetStacksResponse* resp) override;
  grpc::ServerUnaryReactor* ReportProgress(grpc::CallbackServerContext* ctx,
                                           const v1::ReportProgressRequest* req,
                                           v1::ReportProgressResponse* resp) override;
  grpc::ServerUnaryReactor* HoldJob(grpc::CallbackServerContext* ctx, const v1::HoldJobRequest* req,
                                    v1::Job* resp) override;
  grpc::ServerUnaryReactor* ReleaseJob(grpc::CallbackServerContext* ctx,
                                       const v1::ReleaseJobRequest* req, v1::Job* resp) override;
  grpc::ServerUnaryReactor* UpdateJob(grpc::CallbackServerContext* ctx,
                                      const v1::UpdateJobRequest* req, v1::Job* resp) override;
  grpc::ServerUnaryReactor* RequeueJob(grpc::CallbackServerContext* ctx,
                                       const v1::RequeueJobRequest* req, v1::Job* resp) override;

 private:
  Api* const api_;
};

}  // namespace trainctl::server
