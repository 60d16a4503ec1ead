// SecretService: a project's secrets over gRPC; a thin edge over Api (server/api.h,
// api_secrets.cc). A SetSecret or DeleteSecret that returned OK is durable.
#pragma once

#include "server/api.h"
#include "server/request_diagnosis.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace trainctl::server {

class SecretServiceImpl final : public DiagnosingService<v1::SecretService> {
 public:
  // `api` (not owned) must outlive the service.
  explicit SecretServiceImpl(Api* api) : api_(api) {
    Diagnose("SetSecret", &SecretServiceImpl::SetSecret);
    Diagnose("ListSecrets", &SecretServiceImpl::ListSecrets);
    Diagnose("DeleteSecret", &SecretServiceImpl::DeleteSecret);
  }

  grpc::ServerUnaryReactor* SetSecret(grpc::CallbackServerContext* ctx,
                                      const v1::SetSecretRequest* req, v1::Secret* resp) override;
  grpc::ServerUnaryReactor* ListSecrets(grpc::CallbackServerContext* ctx,
                                        const v1::ListSecretsRequest* req,
                                        v1::ListSecretsResponse* resp) override;
  grpc::ServerUnaryReactor* DeleteSecret(grpc::CallbackServerContext* ctx,
                                         const v1::DeleteSecretRequest* req,
                                         v1::Secret* resp) override;

 private:
  Api* const api_;
};

}  // namespace trainctl::server
