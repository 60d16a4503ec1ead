#include "server/auth_service.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/names.h"
#include "common/time_util.h"
#include "server/grpc_unary.h"

namespace trainctl::server {
namespace {

constexpr int64_t kMaxTtlSeconds = 10LL * 366 * 86400;

}  // namespace

absl::Status ValidateCreateToken(const v1::CreateTokenRequest& req) {
  if (req.owner().empty() || req.owner().size() > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("owner must be 1..64 characters, got ", req.owner().size()));
  }
  for (unsigned char c : req.owner()) {
    if (c < 0x20 || c == 0x7f) {
      return absl::InvalidArgumentError("owner must not contain control characters");
    }
  }
  switch (req.role()) {
    case v1::ROLE_ADMIN:
    case v1::ROLE_OPERATOR:
    case v1::ROLE_VIEWER:
      if (!req.projects().empty()) {
        return absl::InvalidArgumentError(
            "projects are for role member; an admin, operator or viewer token covers every "
            "project");
      }
      break;
    case v1::ROLE_MEMBER:
      if (req.projects().empty()) {
        return absl::InvalidArgumentError("a member token needs at least one project");
      }
      for (int i = 0; i < req.projects_size(); ++i) {
        if (!IsDnsLabel(req.projects(i), 63)) {
          return absl::InvalidArgumentError(absl::StrCat("projects[", i, "]: \"", req.projects(i),
                                                         "\" is not a valid project name"));
        }
      }
      break;
    default:
      return absl::InvalidArgumentError(
          "role must be ROLE_ADMIN, ROLE_OPERATOR, ROLE_MEMBER or ROLE_VIEWER");
  }
  if (req.has_ttl()) {
    if (absl::Status s = ValidateProtoDuration("ttl", req.ttl(), kMaxTtlSeconds); !s.ok()) return s;
    if (DurationToMs(req.ttl()) <= 0) {
      return absl::InvalidArgumentError("ttl must be positive; leave it out for no expiry");
    }
  }
  return absl::OkStatus();
}

void StoreToken(ReconcileLoop* loop, TokenRegistry* tokens, storage::TokenRow row,
                const std::string& event_type, const std::string& reason, const std::string& actor,
                std::function<void(const absl::Status&)> done) {
  loop->Post(
      [=](Turn& t) {
        t.writes->tokens.push_back(row);
        const size_t first = t.fx->events.size();
        sched::AddEvent(t.fx, t.now, nullptr, "", "", event_type, reason);
        StampActor(t.fx, first, actor);
        t.after_commit->push_back([tokens, row, done] {
          tokens->Put(row);
          done(absl::OkStatus());
        });
      },
      done);
}

grpc::ServerUnaryReactor* AuthServiceImpl::CreateToken(grpc::CallbackServerContext* ctx,
                                                       const v1::CreateTokenRequest* req,
                                                       v1::CreateTokenResponse* resp) {
  return Unary(api_, &Api::CreateToken, ctx, req, resp);
}

grpc::ServerUnaryReactor* AuthServiceImpl::ListTokens(grpc::CallbackServerContext* ctx,
                                                      const v1::ListTokensRequest* req,
                                                      v1::ListTokensResponse* resp) {
  return Unary(api_, &Api::ListTokens, ctx, req, resp);
}

grpc::ServerUnaryReactor* AuthServiceImpl::RevokeToken(grpc::CallbackServerContext* ctx,
                                                       const v1::RevokeTokenRequest* req,
                                                       v1::ApiToken* resp) {
  return Unary(api_, &Api::RevokeToken, ctx, req, resp);
}

grpc::ServerUnaryReactor* AuthServiceImpl::WhoAmI(grpc::CallbackServerContext* ctx,
                                                  const v1::WhoAmIRequest* req,
                                                  v1::ApiToken* resp) {
  return Unary(api_, &Api::WhoAmI, ctx, req, resp);
}

}  // namespace trainctl::server
