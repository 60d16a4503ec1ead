// QuotaService: projects, their quotas and the queue over gRPC; a thin edge over Api
// (server/api.h). A SetQuota that returned OK is durable.
#pragma once

#include "server/api.h"
#include "server/request_diagnosis.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace trainctl::server {

class QuotaServiceImpl final : public DiagnosingService<v1::QuotaService> {
 public:
  // `api` (not owned) must outlive the service.
  explicit QuotaServiceImpl(Api* api) : api_(api) {
    Diagnose("GetQuota", &QuotaServiceImpl::GetQuota);
    Diagnose("SetQuota", &QuotaServiceImpl::SetQuota);
    Diagnose("ListProjects", &QuotaServiceImpl::ListProjects);
    Diagnose("ListQueue", &QuotaServiceImpl::ListQueue);
  }

  grpc::ServerUnaryReactor* GetQuota(grpc::CallbackServerContext* ctx,
                                     const v1::GetQuotaRequest* req, v1::Project* resp) override;
  grpc::ServerUnaryReactor* SetQuota(grpc::CallbackServerContext* ctx,
                                     const v1::SetQuotaRequest* req, v1::Project* resp) override;
  grpc::ServerUnaryReactor* ListProjects(grpc::CallbackServerContext* ctx,
                                         const v1::ListProjectsRequest* req,
                                         v1::ListProjectsResponse* resp) override;
  grpc::ServerUnaryReactor* ListQueue(grpc::CallbackServerContext* ctx,
                                      const v1::ListQueueRequest* req,
                                      v1::ListQueueResponse* resp) override;

 private:
  Api* const api_;
};

}  // namespace trainctl::server
