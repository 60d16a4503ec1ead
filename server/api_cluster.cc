// Api: ClusterService's and QuotaService's operations (see api.h).
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/time_util.h"
#include "model/model_proto.h"
#include "scheduler/admission.h"
#include "server/api.h"

namespace trainctl::server {
namespace {

// ListQueueRequest.limit: the default when unset, and the most allowed.
constexpr int32_t kDefaultQueueLimit = 1000;
constexpr int32_t kMaxQueueLimit = 10000;

absl::Status CheckNodeName(const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("name is required: the node's name");
  return absl::OkStatus();
}

}  // namespace

// --- QuotaService ------------------------------------------------------------------------------

void Api::GetQuota(const CallContext& call, const v1::GetQuotaRequest& req,
                   Reply<v1::Project> done) {
  if (absl::StatusOr<Caller> caller = Authorize(call, Route::kGetQuota); !caller.ok()) {
    return done(caller.status());
  }
  parts_.loop->PostRead(
      [project = req.project(), done](Turn& t) {
        absl::StatusOr<v1::Project> p = t.core.GetProject(project);
        t.after_commit->push_back([p = std::move(p), done] { done(p); });
      },
      done);
}

void Api::SetQuota(const CallContext& call, const v1::SetQuotaRequest& req,
                   Reply<v1::Project> done) {
  absl::StatusOr<Caller> caller = Authorize(call, Route::kSetQuota);
  if (!caller.ok()) return done(caller.status());
  parts_.loop->Post(
      [quota = req.quota(), name = caller->name, done](Turn& t) {
        const size_t first = t.fx->events.size();
        // Checked as the message it came as (the field paths are its JSON names), then mapped.
        const absl::Status valid = sched::ValidateQuota(quota);
        absl::StatusOr<v1::Project> p =
            valid.ok() ? t.core.SetQuota(sched::QuotaFromProto(quota), t.now, t.fx)
                       : absl::StatusOr<v1::Project>(valid);
        StampActor(t.fx, first, name);
        // Replying after the commit: the caller hears OK only once the quota is durable.
        t.after_commit->push_back([p = std::move(p), done] { done(p); });
      },
      done);
}

void Api::ListProjects(const CallContext& call, const v1::ListProjectsRequest& req,
                       Reply<v1::ListProjectsResponse> done) {
  (void)req;
  if (absl::StatusOr<Caller> caller = Authorize(call, Route::kListProjects); !caller.ok()) {
    return done(caller.status());
  }
  parts_.loop->PostRead(
      [done](Turn& t) {
        v1::ListProjectsResponse resp;
        for (v1::Project& p : t.core.ListProjects()) *resp.add_projects() = std::move(p);
        t.after_commit->push_back([resp = std::move(resp), done] { done(resp); });
      },
      done);
}

void Api::ListQueue(const CallContext& call, const v1::ListQueueRequest& req,
                    Reply<v1::ListQueueResponse> done) {
  if (absl::StatusOr<Caller> caller = Authorize(call, Route::kListQueue); !caller.ok()) {
    return done(caller.status());
  }
  const int32_t limit = req.limit() == 0 ? kDefaultQueueLimit : req.limit();
  if (limit < 1 || limit > kMaxQueueLimit) {
    return done(absl::InvalidArgumentError(
        absl::StrCat("limit must be 1..", kMaxQueueLimit, ", got ", req.limit())));
  }
  parts_.loop->PostRead(
      [project = req.project(), limit, done](Turn& t) {
        v1::ListQueueResponse resp;
        for (v1::Job& job : t.core.ListQueue(project, limit, t.now))
          *resp.add_jobs() = std::move(job);
        t.after_commit->push_back([resp = std::move(resp), done] { done(resp); });
      },
      done);
}

// --- ClusterService ----------------------------------------------------------------------------

void Api::NodeCall(const CallContext& call, Route route,
                   std::function<absl::StatusOr<v1::Node>(Turn&)> op, Reply<v1::Node> done) {
  absl::StatusOr<Caller> caller = Authorize(call, route);
  if (!caller.ok()) return done(caller.status());
  auto work = [op = std::move(op), name = caller->name, done](Turn& t) {
    const size_t first = t.fx->events.size();
    absl::StatusOr<v1::Node> node = op(t);
    StampActor(t.fx, first, name);
    t.after_commit->push_back([node = std::move(node), done] { done(node); });
  };
  if (route == Route::kGetNode) {
    parts_.loop->PostRead(std::move(work), std::move(done));
  } else {
    parts_.loop->Post(std::move(work), std::move(done));
  }
}

void Api::ListNodes(const CallContext& call, const v1::ListNodesRequest& req,
                    Reply<v1::ListNodesResponse> done) {
  (void)req;
  if (absl::StatusOr<Caller> caller = Authorize(call, Route::kListNodes); !caller.ok()) {
    return done(caller.status());
  }
  parts_.loop->PostRead(
      [done](Turn& t) {
        v1::ListNodesResponse resp;
        for (v1::Node& n : t.core.ListNodes()) *resp.add_nodes() = std::move(n);
        t.after_commit->push_back([resp = std::move(resp), done] { done(resp); });
      },
      done);
}

void Api::GetNode(const CallContext& call, const v1::GetNodeRequest& req, Reply<v1::Node> done) {
  NodeCall(
      call, Route::kGetNode,
      [name = req.name()](Turn& t) -> absl::StatusOr<v1::Node> {
        TC_RETURN_IF_ERROR(CheckNodeName(name));
        return t.core.GetNode(name);
      },
      std::move(done));
}

void Api::CordonNode(const CallContext& call, const v1::CordonNodeRequest& req,
                     Reply<v1::Node> done) {
  NodeCall(
      call, Route::kCordonNode,
      [r = req](Turn& t) -> absl::StatusOr<v1::Node> {
        TC_RETURN_IF_ERROR(CheckNodeName(r.name()));
        return t.core.CordonNode(r.name(), r.reason(), t.now, t.fx);
      },
      std::move(done));
}

void Api::UncordonNode(const CallContext& call, const v1::UncordonNodeRequest& req,
                       Reply<v1::Node> done) {
  NodeCall(
      call, Route::kUncordonNode,
      [r = req](Turn& t) -> absl::StatusOr<v1::Node> {
        TC_RETURN_IF_ERROR(CheckNodeName(r.name()));
        return t.core.UncordonNode(r.name(), t.now, t.fx);
      },
      std::move(done));
}

void Api::DrainNode(const CallContext& call, const v1::DrainNodeRequest& req,
                    Reply<v1::Node> done) {
  NodeCall(
      call, Route::kDrainNode,
      [r = req](Turn& t) -> absl::StatusOr<v1::Node> {
        TC_RETURN_IF_ERROR(CheckNodeName(r.name()));
        TC_RETURN_IF_ERROR(ValidateProtoDuration("deadline", r.deadline(), 24 * 3600));
        return t.core.DrainNode(r.name(), r.reason(),
                                absl::Milliseconds(DurationToMs(r.deadline())), t.now, t.fx);
      },
      std::move(done));
}

void Api::SetNodeMaintenance(const CallContext& call, const v1::SetNodeMaintenanceRequest& req,
                             Reply<v1::Node> done) {
  NodeCall(
      call, Route::kSetNodeMaintenance,
      [r = req](Turn& t) -> absl::StatusOr<v1::Node> {
        TC_RETURN_IF_ERROR(CheckNodeName(r.name()));
        return t.core.SetNodeMaintenance(r, t.now, t.fx);
      },
      std::move(done));
}

void Api::ListEvents(const CallContext& call, const v1::ListEventsRequest& req,
                     Reply<v1::ListEventsResponse> done) {
  if (absl::StatusOr<Caller> caller = Authorize(call, Route::kListEvents); !caller.ok()) {
    return done(caller.status());
  }
  const int32_t limit = req.limit() == 0 ? 1000 : req.limit();
  if (limit < 1 || limit > 10000) {
    return done(
        absl::InvalidArgumentError(absl::StrCat("limit must be 1..10000, got ", req.limit())));
  }
  if (parts_.archive == nullptr) {
    return done(absl::UnavailableError("this trainctld serves no event log"));
  }
  const storage::EventQuery q{req.job_id(), req.node(), req.type(), TimestampToMs(req.since()),
                              limit,        req.actor()};
  // From the database's reader, never through the loop: events of the turn running now are not
  // committed yet, and the query sees every earlier turn.
  absl::StatusOr<std::vector<sched::Event>> events = parts_.archive->ListEvents(q);
  if (!events.ok()) return done(events.status());
  v1::ListEventsResponse resp;
  for (const sched::Event& e : *events) {
    v1::Event* out = resp.add_events();
    *out->mutable_time() = MsToTimestamp(e.time_ms);
    out->set_job_id(e.job_id);
    out->set_attempt(e.attempt);
    out->set_replica(e.replica);
    out->set_node(e.node);
    out->set_type(e.type);
    out->set_reason(e.reason);
    out->set_actor(e.actor);
  }
  done(std::move(resp));
}

void Api::RevokeNode(const CallContext& call, const v1::RevokeNodeRequest& req,
                     Reply<v1::Node> done) {
  NodeCall(
      call, Route::kRevokeNode,
      [r = req, registry = parts_.registry,
       revoked = parts_.revoked](Turn& t) -> absl::StatusOr<v1::Node> {
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
      },
      std::move(done));
}

void Api::DeleteNode(const CallContext& call, const v1::DeleteNodeRequest& req,
                     Reply<v1::Node> done) {
  NodeCall(
      call, Route::kDeleteNode,
      [r = req](Turn& t) -> absl::StatusOr<v1::Node> {
        TC_RETURN_IF_ERROR(CheckNodeName(r.name()));
        return t.core.DeleteNode(r.name(), r.reason(), t.now, t.fx);
      },
      std::move(done));
}

}  // namespace trainctl::server
