#include "server/cluster_service.h"

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/time_util.h"

namespace trainctl::server {
namespace {

v1::Resources ToProto(const sched::Res& r) {
  v1::Resources out;
  out.set_cpu(r.cpu);
  out.set_memory_mb(r.memory_mb);
  out.set_gpus(static_cast<int32_t>(r.gpus));
  return out;
}

}  // namespace

grpc::ServerUnaryReactor* ClusterServiceImpl::ListNodes(grpc::CallbackServerContext* ctx,
                                                        const v1::ListNodesRequest* req,
                                                        v1::ListNodesResponse* resp) {
  (void)req;
  auto* reactor = ctx->DefaultReactor();
  loop_->Post([reactor, resp](Turn& t) {
    std::map<std::string, sched::Core::NodeUsage> usage = t.core.Usage();
    for (const auto& [name, n] : t.core.nodes()) {
      v1::Node* out = resp->add_nodes();
      out->set_name(n.name);
      out->set_address(n.address);
      out->set_connected(n.connected);
      *out->mutable_capacity() = ToProto(n.capacity);
      *out->mutable_allocatable() = ToProto(n.allocatable);
      sched::Res free = n.allocatable;
      free -= usage[name].used;
      *out->mutable_free() = ToProto(free);
      out->set_replicas(usage[name].replicas);
      out->mutable_labels()->insert(n.labels.begin(), n.labels.end());
      *out->mutable_last_heartbeat_time() = MsToTimestamp(n.last_heartbeat_ms);
      *out->mutable_register_time() = MsToTimestamp(n.registered_ms);
    }
    t.after_commit->push_back([reactor] { reactor->Finish(grpc::Status::OK); });
  });
  return reactor;
}

grpc::ServerUnaryReactor* ClusterServiceImpl::ListEvents(grpc::CallbackServerContext* ctx,
                                                         const v1::ListEventsRequest* req,
                                                         v1::ListEventsResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  int32_t limit = req->limit() == 0 ? 1000 : req->limit();
  if (limit < 1 || limit > 10000) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 absl::StrCat("limit must be 1..10000, got ", req->limit())));
    return reactor;
  }
  storage::EventQuery q{req->job_id(), req->node(), req->type(), TimestampToMs(req->since()),
                        limit};
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
      }
    }
    absl::Status status = events.status();
    t.after_commit->push_back([reactor, status] { reactor->Finish(ToGrpcStatus(status)); });
  });
  return reactor;
}

}  // namespace trainctl::server
