// AgentService: the scheduler's end of every agent's stream.
//
// Each Connect() call gets an AgentSession reactor. It turns the agent's reports into work for
// the reconcile loop, acks each report after the turn that applied it has committed, and is the
// AgentChannel through which the loop's commands reach the agent.
//
// With agent authentication (AgentAuth::required, i.e. trainctld --tls-cert), a stream's
// Register is accepted only with a verified client certificate that is an agent's
// (OU=trainctl-agent), names the node it registers (its common name) and is not revoked;
// otherwise the stream ends with UNAUTHENTICATED or PERMISSION_DENIED, a log line and an
// AgentRefused event. A second stream for a connected node then takes over at once when it
// proves the same identity (a certificate for the same node); without authentication, only from
// the same agent process (see agent_registry.h).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/agent_registry.h"
#include "server/central_logs.h"
#include "server/job_snapshots.h"
#include "server/peer_limits.h"
#include "server/reconcile_loop.h"
#include "server/transport_security.h"
#include "storage/workdir_store.h"
#include "trainctl/v1/agent.grpc.pb.h"

namespace trainctl::server {

// Which refusals of agent streams get an event row: one per node and reason a minute, so that
// an agent retrying with a wrong certificate cannot flood the event log. Thread-safe.
class RefusalEvents {
 public:
  static constexpr absl::Duration kInterval = absl::Minutes(1);
  // Whether the refusal of `node` for `why` at `now` is recorded.
  bool ShouldRecord(const std::string& node, const std::string& why, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Bounded: cleared when it holds this many keys (names are the claimer's to choose).
  static constexpr size_t kMaxKeys = 4096;
  absl::Mutex mu_;
  std::map<std::string, absl::Time> last_ ABSL_GUARDED_BY(mu_);
};

// With authentication: whether a client certificate lets its holder act as agent `node`
// (OK without). UNAUTHENTICATED or PERMISSION_DENIED saying what is wrong and how to fix it.
absl::Status CheckAgentIdentity(const AgentAuth& auth,
                                const std::optional<CertificateInfo>& certificate,
                                const std::string& node);

// Connect is served by gRPC's callback API; FetchWorkdir (agent_workdirs.cc) by its synchronous
// one: it streams from the WorkdirStore a chunk at a time, on the call's own thread.
class AgentServiceImpl final
    : public v1::AgentService::WithCallbackMethod_Connect<v1::AgentService::Service> {
 public:
  // `max_streams_per_peer`: agent streams one host may hold at once
  // (--max-agent-streams-per-peer); `max_new_nodes_per_peer`: nodes of unknown names one host
  // may register per hour (--max-new-nodes-per-peer); 0: unlimited. `leader_epoch`: this
  // leader's lease epoch, sent with every message (0 without a lease).
  AgentServiceImpl(ReconcileLoop* loop, AgentRegistry* registry, AgentAuth auth = {},
                   int64_t max_streams_per_peer = 0, int64_t max_new_nodes_per_peer = 0,
                   int64_t leader_epoch = 0)
      : leader_epoch_(leader_epoch),
        loop_(loop),
        registry_(registry),
        auth_(auth),
        streams_("agent streams", "--max-agent-streams-per-peer", max_streams_per_peer),
        ship_streams_("log shipping streams", "--max-agent-streams-per-peer", max_streams_per_peer),
        new_nodes_(max_new_nodes_per_peer) {}

  grpc::ServerBidiReactor<v1::AgentMessage, v1::SchedulerMessage>* Connect(
      grpc::CallbackServerContext* ctx) override;
  grpc::Status FetchWorkdir(grpc::ServerContext* ctx, const v1::FetchWorkdirRequest* req,
                            grpc::ServerWriter<v1::WorkdirChunk>* writer) override;
  // Synchronous too (agent_log_shipping.cc): the store's writes happen on the call's thread.
  grpc::Status ShipLogs(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<v1::ShipLogsResponse, v1::ShipLogsRequest>* stream) override;

  // Where FetchWorkdir reads the archives from and which jobs' nodes it checks against (not
  // owned); unset, it is FAILED_PRECONDITION.
  void set_workdirs(storage::WorkdirStore* workdirs, const JobSnapshots* snapshots) {
    workdirs_ = workdirs;
    snapshots_ = snapshots;
  }
  // Where ShipLogs keeps what the agents ship (not owned); unset, it is FAILED_PRECONDITION.
  void set_logs(CentralLogs* logs) { logs_ = logs; }

 private:
  const int64_t leader_epoch_;
  ReconcileLoop* const loop_;
  AgentRegistry* const registry_;
  const AgentAuth auth_;
  RefusalEvents refusals_;
  PeerStreamLimiter streams_;
  // ShipLogs holds a thread of the synchronous server per stream: as many per host as Connect's.
  PeerStreamLimiter ship_streams_;
  NewNodeLimiter new_nodes_;
  storage::WorkdirStore* workdirs_ = nullptr;
  const JobSnapshots* snapshots_ = nullptr;
  CentralLogs* logs_ = nullptr;
};

}  // namespace trainctl::server
