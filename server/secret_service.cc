#include "server/secret_service.h"

#include "server/grpc_unary.h"

namespace trainctl::server {

grpc::ServerUnaryReactor* SecretServiceImpl::SetSecret(grpc::CallbackServerContext* ctx,
                                                       const v1::SetSecretRequest* req,
                                                       v1::Secret* resp) {
  return Unary(api_, &Api::SetSecret, ctx, req, resp);
}

grpc::ServerUnaryReactor* SecretServiceImpl::ListSecrets(grpc::CallbackServerContext* ctx,
                                                         const v1::ListSecretsRequest* req,
                                                         v1::ListSecretsResponse* resp) {
  return Unary(api_, &Api::ListSecrets, ctx, req, resp);
}

grpc::ServerUnaryReactor* SecretServiceImpl::DeleteSecret(grpc::CallbackServerContext* ctx,
                                                          const v1::DeleteSecretRequest* req,
                                                          v1::Secret* resp) {
  return Unary(api_, &Api::DeleteSecret, ctx, req, resp);
}

}  // namespace trainctl::server
