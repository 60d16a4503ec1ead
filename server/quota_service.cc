#include "server/quota_service.h"

#include "server/grpc_unary.h"

namespace trainctl::server {

grpc::ServerUnaryReactor* QuotaServiceImpl::GetQuota(grpc::CallbackServerContext* ctx,
                                                     const v1::GetQuotaRequest* req,
                                                     v1::Project* resp) {
  return Unary(api_, &Api::GetQuota, ctx, req, resp);
}

grpc::ServerUnaryReactor* QuotaServiceImpl::SetQuota(grpc::CallbackServerContext* ctx,
                                                     const v1::SetQuotaRequest* req,
                                                     v1::Project* resp) {
  return Unary(api_, &Api::SetQuota, ctx, req, resp);
}

grpc::ServerUnaryReactor* QuotaServiceImpl::ListProjects(grpc::CallbackServerContext* ctx,
                                                         const v1::ListProjectsRequest* req,
                                                         v1::ListProjectsResponse* resp) {
  return Unary(api_, &Api::ListProjects, ctx, req, resp);
}

grpc::ServerUnaryReactor* QuotaServiceImpl::ListQueue(grpc::CallbackServerContext* ctx,
                                                      const v1::ListQueueRequest* req,
                                                      v1::ListQueueResponse* resp) {
  return Unary(api_, &Api::ListQueue, ctx, req, resp);
}

}  // namespace trainctl::server
