// Api: AuthService's operations (see api.h): API tokens. Every change is written in a
// reconcile-loop turn with a TokenCreated/TokenRevoked event naming its actor, and reaches the
// token registry only once committed.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/time_util.h"
#include "server/api.h"
#include "server/auth_service.h"

namespace trainctl::server {

void Api::CreateToken(const CallContext& call, const v1::CreateTokenRequest& req,
                      Reply<v1::CreateTokenResponse> done) {
  absl::StatusOr<Caller> caller = Authorize(call, Route::kCreateToken);
  if (!caller.ok()) return done(caller.status());
  if (parts_.tokens == nullptr) return done(absl::UnimplementedError("tokens are not kept here"));
  if (absl::Status valid = ValidateCreateToken(req); !valid.ok()) return done(valid);
  v1::ApiToken fields;
  fields.set_owner(req.owner());
  fields.set_role(req.role());
  *fields.mutable_projects() = req.projects();
  const int64_t now = WallNowMs();
  *fields.mutable_create_time() = MsToTimestamp(now);
  if (req.has_ttl()) *fields.mutable_expire_time() = MsToTimestamp(now + DurationToMs(req.ttl()));
  fields.set_created_by(caller->name.empty() ? "anonymous" : caller->name);
  absl::StatusOr<MintedToken> minted = MintToken(fields);
  if (!minted.ok()) return done(minted.status());
  v1::CreateTokenResponse resp;
  *resp.mutable_token() = minted->row.token;
  resp.set_secret(minted->bearer);
  const v1::ApiToken& t = minted->row.token;
  StoreToken(
      parts_.loop, parts_.tokens, minted->row, "TokenCreated",
      absl::StrCat("token ", t.id(), " for ", t.owner(), " (", v1::Role_Name(t.role()),
                   t.projects().empty() ? "" : " of ", absl::StrJoin(t.projects(), ","), ")"),
      caller->name, [resp = std::move(resp), done](const absl::Status& stored) {
        if (!stored.ok()) return done(stored);
        done(resp);
      });
}

void Api::ListTokens(const CallContext& call, const v1::ListTokensRequest& req,
                     Reply<v1::ListTokensResponse> done) {
  (void)req;
  if (absl::StatusOr<Caller> caller = Authorize(call, Route::kListTokens); !caller.ok()) {
    return done(caller.status());
  }
  if (parts_.tokens == nullptr) return done(absl::UnimplementedError("tokens are not kept here"));
  v1::ListTokensResponse resp;
  for (v1::ApiToken& t : parts_.tokens->List()) *resp.add_tokens() = std::move(t);
  done(std::move(resp));
}

void Api::RevokeToken(const CallContext& call, const v1::RevokeTokenRequest& req,
                      Reply<v1::ApiToken> done) {
  absl::StatusOr<Caller> caller = Authorize(call, Route::kRevokeToken);
  if (!caller.ok()) return done(caller.status());
  if (parts_.tokens == nullptr) return done(absl::UnimplementedError("tokens are not kept here"));
  std::optional<storage::TokenRow> row = parts_.tokens->Find(req.id());
  if (!row) return done(absl::NotFoundError(absl::StrCat("token ", req.id(), " not found")));
  row->token.set_revoked(true);
  StoreToken(parts_.loop, parts_.tokens, *row, "TokenRevoked",
             absl::StrCat("token ", row->token.id(), " of ", row->token.owner(), " revoked"),
             caller->name, [token = row->token, done](const absl::Status& stored) {
               if (!stored.ok()) return done(stored);
               done(token);
             });
}

void Api::WhoAmI(const CallContext& call, const v1::WhoAmIRequest& req, Reply<v1::ApiToken> done) {
  (void)req;
  absl::StatusOr<Caller> caller = Authorize(call, Route::kWhoAmI);
  if (!caller.ok()) return done(caller.status());
  done(caller->token);
}

}  // namespace trainctl::server
