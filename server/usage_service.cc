// UsageService over gRPC (server/usage_service.h).
#include "server/usage_service.h"

#include "server/grpc_unary.h"

namespace trainctl::server {

grpc::ServerUnaryReactor* UsageServiceImpl::GetUsage(grpc::CallbackServerContext* ctx,
                                                     const v1::GetUsageRequest* req,
                                                     v1::GetUsageResponse* resp) {
  return Unary(api_, &Api::GetUsage, ctx, req, resp);
}

}  // namespace trainctl::server
