// UsageService: who used what, summed from the hourly usage rollup, over gRPC; a thin edge over
// Api (server/api.h, api_usage.cc).
#pragma once

#include "server/api.h"
#include "server/request_diagnosis.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace trainctl::server {

class UsageServiceImpl final : public DiagnosingService<v1::UsageService> {
 public:
  // `api` (not owned) must outlive the service.
  explicit UsageServiceImpl(Api* api) : api_(api) {
    Diagnose("GetUsage", &UsageServiceImpl::GetUsage);
  }

  grpc::ServerUnaryReactor* GetUsage(grpc::CallbackServerContext* ctx,
                                     const v1::GetUsageRequest* req,
                                     v1::GetUsageResponse* resp) override;

 private:
  Api* const api_;
};

}  // namespace trainctl::server
