#include "server/cluster_service.h"

#include <functional>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/status_macros.h"
#include "common/time_util.h"

namespace trainctl::server {
namespace {

// Authorizes the call, runs `op` in the loop (its events name the caller) and finishes the call
// with its node (or error) once the turn committed.
grpc::ServerUnaryReactor* NodeCall(ReconcileLoop* loop, const Authorizer* auth, Route route,
                                   grpc::CallbackServerContext* ctx, v1::Node* resp,
                                   std::function<absl::StatusOr<v1::Node>(Turn&)> op) {
  auto* reactor = ctx->DefaultReactor();
  std::optional<Caller> caller = AuthorizeOrFinish(auth, *ctx, route, reactor);
  if (!caller) return reactor;
  loop->Post([reactor, resp, op = std::move(op), name = caller->name](Turn& t) {
    const size_t first = t.fx->events.size();
    absl::StatusOr<v1::Node> node = op(t);
    StampActor(t.fx, first, name);
    absl::Status status = node.status();
    if (node.ok()) *resp = *std::move(node);
    t.after_commit->push_back([reactor, status] { reactor->Finish(ToGrpcStatus(status)); });
  });
  return reactor;
}

absl::Status CheckNodeName(const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("name is required: the node's name");
  return absl::OkStatus();
}

}  // namespace

grpc::ServerUnaryReactor* ClusterServiceImpl::ListNodes(grpc::CallbackServerContext* ctx,
                                                        const v1::ListNodesRequest* req,
                                                        v1::ListNodesResponse* resp) {
  (void)req;
  auto* reactor = ctx->DefaultReactor();
  if (!AuthorizeOrFinish(auth_, *ctx, Route::kListNodes, reactor)) return reactor;
  loop_->Post([reactor, resp](Turn& t) {
    for (v1::Node& n : t.core.ListNodes()) *resp->add_nodes() = std::move(n);
    t.after_commit->push_back([reactor] { reactor->Finish(grpc::Status::OK); });
  });
  return reactor;
}

grpc::ServerUnaryReactor* ClusterServiceImpl::GetNode(grpc::CallbackServerContext* ctx,
                                                      const v1::GetNodeRequest* req,
                                                      v1::Node* resp) {
  return NodeCall(loop_, auth_, Route::kGetNode, ctx, resp,
                  [name = req->name()](Turn& t) -> absl::StatusOr<v1::Node> {
                    TC_RETURN_IF_ERROR(CheckNodeName(name));
                    return t.core.GetNode(name);
                  });
}

grpc::ServerUnaryReactor* ClusterServiceImpl::CordonNode(grpc::CallbackServerContext* ctx,
                                                         const v1::CordonNodeRequest* req,
                                                         v1::Node* resp) {
  return NodeCall(loop_, auth_, Route::kCordonNode, ctx, resp,
                  [r = *req](Turn& t) -> absl::StatusOr<v1::Node> {
                    TC_RETURN_IF_ERROR(CheckNodeName(r.name()));
                    return t.core.CordonNode(r.name(), r.reason(), t.now, t.fx);
                  });
}

grpc::ServerUnaryReactor* ClusterServiceImpl::UncordonNode(grpc::CallbackServerContext* ctx,
                                                           const v1::UncordonNodeRequest* req,
                                                           v1::Node* resp) {
  return NodeCall(loop_, auth_, Route::kUncordonNode, ctx, resp,
                  [r = *req](Turn& t) -> absl::StatusOr<v1::Node> {
                    TC_RETURN_IF_ERROR(CheckNodeName(r.name()));
                    return t.core.UncordonNode(r.name(), t.now, t.fx);
                  });
}

grpc::ServerUnaryReactor* ClusterServiceImpl::DrainNode(grpc::CallbackServerContext* ctx,
                                                        const v1::DrainNodeRequest* req,
                                                        v1::Node* resp) {
  return NodeCall(
      loop_, auth_, Route::kDrainNode, ctx, resp, [r = *req](Turn& t) -> absl::StatusOr<v1::Node> {
        TC_RETURN_IF_ERROR(CheckNodeName(r.name()));
        TC_RETURN_IF_ERROR(ValidateProtoDuration("deadline", r.deadline(), 24 * 3600));
        return t.core.DrainNode(r.name(), r.reason(), DurationToMs(r.deadline()), t.now, t.fx);
      });
}

grpc::ServerUnaryReactor* ClusterServiceImpl::ListEvents(grpc::CallbackServerContext* ctx,
                                                         const v1::ListEventsRequest* req,
                                                         v1::ListEventsResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  if (!AuthorizeOrFinish(auth_, *ctx, Route::kListEvents, reactor)) return reactor;
  int32_t limit = req->limit() == 0 ? 1000 : req->limit();
  if (limit < 1 || limit > 10000) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 absl::StrCat("limit must be 1..10000, got ", req->limit())));
    return reactor;
  }
  storage::EventQuery q{req->job_id(), req->node(), req->type(), TimestampToMs(req->since()),
                        limit,         req->actor()};
  loop_->Post([reactor, resp, q](Turn& t) {
    // Events of this turn are not committed yet; the query sees every earlier turn.
    absl::StatusOr<std::vector<sched::Event>> events = t.store.ListEvents(q);
    if (events.ok()) {
      for (const sched::Event& e : *events) {
        v1::Event* out = resp->add_events();
        *out->mutable_time() = MsToTimestamp(e.time_ms);
        out->set_job_id(e.job_id);
        out->set_attempt(e.attempt);
        out->set_replica(e.replica);
        out->set_node(e.node);
        out->set_type(e.type);
        out->set_reason(e.reason);
        out->set_actor(e.actor);
      }
    }
    absl::Status status = events.status();
    t.after_commit->push_back([reactor, status] { reactor->Finish(ToGrpcStatus(status)); });
  });
  return reactor;
}

grpc::ServerUnaryReactor* ClusterServiceImpl::RevokeNode(grpc::CallbackServerContext* ctx,
                                                         const v1::RevokeNodeRequest* req,
                                                         v1::Node* resp) {
  return NodeCall(
      loop_, auth_, Route::kRevokeNode, ctx, resp,
      [r = *req, registry = registry_, revoked = revoked_](Turn& t) -> absl::StatusOr<v1::Node> {
        TC_RETURN_IF_ERROR(CheckNodeName(r.name()));
        TC_ASSIGN_OR_RETURN(v1::Node node, t.core.RevokeNode(r.name(), r.reason(), t.now, t.fx));
        // Once the revocation is stored: refuse the certificate, end the stream.
        t.after_commit->push_back([node, registry, revoked] {
          for (const std::string& fp : node.revoked_certificates()) {
            if (revoked != nullptr) revoked->Add(fp);
          }
          if (registry != nullptr) {
            registry->Disconnect(node.name(), "the node's certificate was revoked");
          }
        });
        return node;
      });
}

grpc::ServerUnaryReactor* ClusterServiceImpl::DeleteNode(grpc::CallbackServerContext* ctx,
                                                         const v1::DeleteNodeRequest* req,
                                                         v1::Node* resp) {
  return NodeCall(loop_, auth_, Route::kDeleteNode, ctx, resp,
                  [r = *req](Turn& t) -> absl::StatusOr<v1::Node> {
                    TC_RETURN_IF_ERROR(CheckNodeName(r.name()));
                    return t.core.DeleteNode(r.name(), r.reason(), t.now, t.fx);
                  });
}

}  // namespace trainctl::server
