// QuotaService: projects, their quotas and the queue, over gRPC. A thin edge like JobService:
// each handler checks the request, posts the core call to the reconcile loop and replies after
// that turn's commit, so a SetQuota that returned OK is durable.
#pragma once

#include "server/authorizer.h"
#include "server/reconcile_loop.h"
#include "server/request_diagnosis.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace trainctl::server {

class QuotaServiceImpl final : public DiagnosingService<v1::QuotaService> {
 public:
  // `auth` (not owned) authorizes every call; null allows everything.
  explicit QuotaServiceImpl(ReconcileLoop* loop, const Authorizer* auth = nullptr)
      : loop_(loop), auth_(auth) {
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
  ReconcileLoop* const loop_;
  const Authorizer* const auth_;
};

}  // namespace trainctl::server
