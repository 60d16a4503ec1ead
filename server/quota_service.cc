#include "server/quota_service.h"

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"

namespace trainctl::server {
namespace {

// ListQueueRequest.limit: the default when unset, and the most allowed.
constexpr int32_t kDefaultQueueLimit = 1000;
constexpr int32_t kMaxQueueLimit = 10000;

}  // namespace

grpc::ServerUnaryReactor* QuotaServiceImpl::GetQuota(grpc::CallbackServerContext* ctx,
                                                     const v1::GetQuotaRequest* req,
                                                     v1::Project* resp) {
  auto* reactor = ctx->DefaultReactor();
  if (!AuthorizeOrFinish(auth_, *ctx, Route::kGetQuota, reactor)) return reactor;
  std::string project = req->project();
  loop_->Post([reactor, resp, project](Turn& t) {
    absl::StatusOr<v1::Project> p = t.core.GetProject(project);
    if (p.ok()) *resp = *std::move(p);
    absl::Status status = p.status();
    t.after_commit->push_back([reactor, status] { reactor->Finish(ToGrpcStatus(status)); });
  });
  return reactor;
}

grpc::ServerUnaryReactor* QuotaServiceImpl::SetQuota(grpc::CallbackServerContext* ctx,
                                                     const v1::SetQuotaRequest* req,
                                                     v1::Project* resp) {
  auto* reactor = ctx->DefaultReactor();
  std::optional<Caller> caller = AuthorizeOrFinish(auth_, *ctx, Route::kSetQuota, reactor);
  if (!caller) return reactor;
  v1::Quota quota = req->quota();
  loop_->Post([reactor, resp, quota, name = caller->name](Turn& t) {
    const size_t first = t.fx->events.size();
    absl::StatusOr<v1::Project> p = t.core.SetQuota(quota, t.now, t.fx);
    StampActor(t.fx, first, name);
    if (p.ok()) *resp = *std::move(p);
    absl::Status status = p.status();
    // Replying after the commit: the caller hears OK only once the quota is durable.
    t.after_commit->push_back([reactor, status] { reactor->Finish(ToGrpcStatus(status)); });
  });
  return reactor;
}

grpc::ServerUnaryReactor* QuotaServiceImpl::ListProjects(grpc::CallbackServerContext* ctx,
                                                         const v1::ListProjectsRequest* req,
                                                         v1::ListProjectsResponse* resp) {
  (void)req;
  auto* reactor = ctx->DefaultReactor();
  if (!AuthorizeOrFinish(auth_, *ctx, Route::kListProjects, reactor)) return reactor;
  loop_->Post([reactor, resp](Turn& t) {
    for (v1::Project& p : t.core.ListProjects()) *resp->add_projects() = std::move(p);
    t.after_commit->push_back([reactor] { reactor->Finish(grpc::Status::OK); });
  });
  return reactor;
}

grpc::ServerUnaryReactor* QuotaServiceImpl::ListQueue(grpc::CallbackServerContext* ctx,
                                                      const v1::ListQueueRequest* req,
                                                      v1::ListQueueResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  if (!AuthorizeOrFinish(auth_, *ctx, Route::kListQueue, reactor)) return reactor;
  const int32_t limit = req->limit() == 0 ? kDefaultQueueLimit : req->limit();
  if (limit < 1 || limit > kMaxQueueLimit) {
    reactor->Finish(
        grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                     absl::StrCat("limit must be 1..", kMaxQueueLimit, ", got ", req->limit())));
    return reactor;
  }
  std::string project = req->project();
  loop_->Post([reactor, resp, project, limit](Turn& t) {
    for (v1::Job& job : t.core.ListQueue(project, limit, t.now)) *resp->add_jobs() = std::move(job);
    t.after_commit->push_back([reactor] { reactor->Finish(grpc::Status::OK); });
  });
  return reactor;
}

}  // namespace trainctl::server
