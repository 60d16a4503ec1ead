// AuthService: API tokens over gRPC (create, list, revoke, who am I); a thin edge over Api
// (server/api.h, api_auth.cc). Also the token checks and writes Api and trainctld's start share.
#pragma once

#include "server/authorizer.h"
#include "server/reconcile_loop.h"
#include "server/request_diagnosis.h"
#include "server/tokens.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace trainctl::server {
class Api;
}

namespace trainctl::server {

class AuthServiceImpl final : public DiagnosingService<v1::AuthService> {
 public:
  // `api` (not owned) must outlive the service.
  explicit AuthServiceImpl(Api* api) : api_(api) {
    Diagnose("CreateToken", &AuthServiceImpl::CreateToken);
    Diagnose("ListTokens", &AuthServiceImpl::ListTokens);
    Diagnose("RevokeToken", &AuthServiceImpl::RevokeToken);
    Diagnose("WhoAmI", &AuthServiceImpl::WhoAmI);
  }

  grpc::ServerUnaryReactor* CreateToken(grpc::CallbackServerContext* ctx,
                                        const v1::CreateTokenRequest* req,
                                        v1::CreateTokenResponse* resp) override;
  grpc::ServerUnaryReactor* ListTokens(grpc::CallbackServerContext* ctx,
                                       const v1::ListTokensRequest* req,
                                       v1::ListTokensResponse* resp) override;
  grpc::ServerUnaryReactor* RevokeToken(grpc::CallbackServerContext* ctx,
                                        const v1::RevokeTokenRequest* req,
                                        v1::ApiToken* resp) override;
  grpc::ServerUnaryReactor* WhoAmI(grpc::CallbackServerContext* ctx, const v1::WhoAmIRequest* req,
                                   v1::ApiToken* resp) override;

 private:
  Api* const api_;
};

// Checks a CreateTokenRequest: INVALID_ARGUMENT naming the field.
absl::Status ValidateCreateToken(const v1::CreateTokenRequest& req);

// Stores `row` in a loop turn (with an event by `actor`) and, once committed, puts it in
// `tokens`; then runs `done` with the outcome (an error when the turn's commit failed or
// trainctld refuses writes). For AuthService and the first admin
// token at start.
void StoreToken(ReconcileLoop* loop, TokenRegistry* tokens, storage::TokenRow row,
                const std::string& event_type, const std::string& reason, const std::string& actor,
                std::function<void(const absl::Status&)> done);

}  // namespace trainctl::server
