#include "server/agent_service.h"

#include <spdlog/spdlog.h>

#include <deque>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/agent_protocol.h"
#include "common/grpc_status.h"
#include "scheduler/agent_validation.h"
#include "server/metrics_daemon.h"

namespace trainctl::server {
namespace {

using Reactor = grpc::ServerBidiReactor<v1::AgentMessage, v1::SchedulerMessage>;

// The channel half of a session. It outlives the reactor: the registry and the loop may hold it
// after the stream ended, and then Send() does nothing. Send and Close come from any thread (the
// loop's, gRPC's), the rest from the reactor's callbacks; StartWrite and Finish are called with
// mu_ held, so none starts after the reactor is done.
class SessionChannel : public AgentChannel {
 public:
  SessionChannel(Reactor* reactor, int64_t leader_epoch)
      : leader_epoch_(leader_epoch), reactor_(reactor) {}

  void Enqueue(sched::Command cmd) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (reactor_ == nullptr || finishing_) return;
    outbox_.push_back(std::move(cmd));
    if (!writing_) WriteNextLocked();
  }

  void Close(const std::string& why) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (reactor_ == nullptr || finishing_) return;
    finishing_ = true;
    reactor_->Finish(grpc::Status(grpc::StatusCode::ABORTED, why));
  }

  // Reactor callbacks.
  void WriteDone(bool ok) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    current_.Clear();
    if (!ok || reactor_ == nullptr || finishing_ || outbox_.empty()) return;
    WriteNextLocked();
  }
  void Finish(const grpc::Status& status) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (reactor_ == nullptr || finishing_) return;
    finishing_ = true;
    reactor_->Finish(status);
  }
  void Detach() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    reactor_ = nullptr;
  }

 private:
  // Completes the next queued command into current_ and writes it. REQUIRES: !writing_ and a
  // non-empty outbox.
  void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    current_ = std::move(outbox_.front()).Take();
    outbox_.pop_front();
    if (leader_epoch_ != 0) current_.set_leader_epoch(leader_epoch_);
    writing_ = true;
    reactor_->StartWrite(&current_);
  }

  const int64_t leader_epoch_;
  absl::Mutex mu_;
  // Null after OnDone.
  Reactor* reactor_ ABSL_GUARDED_BY(mu_);
  // Commands not yet written, and the one being written while writing_: only one launch at a
  // time is whole in memory.
  std::deque<sched::Command> outbox_ ABSL_GUARDED_BY(mu_);
  v1::SchedulerMessage current_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
};

// A stream refused before it began: finished at once with `status`.
class RefusedStream : public Reactor {
 public:
  explicit RefusedStream(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

class AgentSession : public Reactor {
 public:
  AgentSession(ReconcileLoop* loop, AgentRegistry* registry, std::string peer, AgentAuth auth,
               std::optional<CertificateInfo> certificate, RefusalEvents* refusals,
               NewNodeLimiter* new_nodes, PeerStreamLimiter::Slot slot, int64_t leader_epoch)
      : slot_(std::move(slot)),
        loop_(loop),
        registry_(registry),
        refusals_(refusals),
        new_nodes_(new_nodes),
        peer_(std::move(peer)),
        auth_(auth),
        certificate_(std::move(certificate)),
        channel_(std::make_shared<SessionChannel>(this, leader_epoch)) {
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      channel_->Finish(grpc::Status::OK);
      return;
    }
    if (node_.empty() && !in_.has_register_()) {
      channel_->Finish(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                    "the first message on an agent stream must be register"));
      return;
    }
    if (Handle(in_)) StartRead(&in_);
  }

  void OnWriteDone(bool ok) override { channel_->WriteDone(ok); }

  void OnDone() override {
    channel_->Detach();
    if (!node_.empty() && registry_->Detach(node_, channel_.get())) {
      spdlog::info("agent {} disconnected ({})", node_, peer_);
      std::string node = node_;
      loop_->Post([node](Turn& t) { t.core.AgentDisconnected(node, t.now, t.fx); });
    }
    delete this;
  }

 private:
  // Runs after the commit of the turn that applied report `seq`.
  std::function<void()> AckAfterCommit(uint64_t seq) {
    std::shared_ptr<SessionChannel> ch = channel_;
    return [ch, seq] {
      v1::SchedulerMessage ack;
      ack.mutable_ack()->set_seq(seq);
      ch->Send(ack);
    };
  }

  // Applies a journaled report in the loop and acks it once that turn has committed.
  void PostReport(uint64_t seq, std::function<void(Turn&)> apply) {
    // Counted in flight until its ack is sent, or its work dropped.
    DaemonMetrics* metrics = loop_->metrics();
    std::shared_ptr<void> in_flight = metrics != nullptr ? metrics->ReportInFlight() : nullptr;
    loop_->Post([apply = std::move(apply), ack = AckAfterCommit(seq), in_flight](Turn& t) {
      apply(t);
      t.after_commit->push_back([ack, in_flight] { ack(); });
    });
  }

  // With authentication: whether the stream's certificate lets it register `node`. Without:
  // OK.
  absl::Status CheckIdentity(const std::string& node) const {
    return CheckAgentIdentity(auth_, certificate_, node);
  }

  // Ends the stream for a Register refused for its identity: a log line and an event row.
  void Refuse(const std::string& node, const absl::Status& why) {
    const std::string text(why.message());
    if (!refusals_->ShouldRecord(node, text, absl::Now())) {
      channel_->Finish(ToGrpcStatus(why));
      return;
    }
    spdlog::warn("agent stream from {} claiming node {} refused: {}", peer_, node, why.ToString());
    loop_->Post([node, why = std::string(why.message())](Turn& t) {
      t.core.AgentRefused(node, absl::StrCat("an agent stream was refused: ", why), t.now, t.fx);
    });
    channel_->Finish(ToGrpcStatus(why));
  }

  // Returns false when the stream was finished and must not read again.
  bool Handle(const v1::AgentMessage& m) {
    const uint64_t seq = m.seq();
    // A stream that is no longer its node's (taken over, or closed when trainctld reloaded its
    // state) is ending: what it still carries is sent again on the node's next stream.
    if (!node_.empty() && !registry_->Heard(node_, channel_.get())) return true;
    switch (m.msg_case()) {
      case v1::AgentMessage::kRegister: {
        v1::Register reg = m.register_();
        if (absl::Status valid = sched::ValidateRegister(reg); !valid.ok()) {
          spdlog::warn("agent stream from {} refused: {}", peer_, valid.ToString());
          channel_->Finish(ToGrpcStatus(valid));
          return false;
        }
        if (!node_.empty() && node_ != reg.node()) {
          channel_->Finish(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                        "an agent stream cannot change its node name"));
          return false;
        }
        if (absl::Status identity = CheckIdentity(reg.node()); !identity.ok()) {
          Refuse(reg.node(), identity);
          return false;
        }
        if (absl::Status protocol = CheckAgentProtocol(reg.protocol_version()); !protocol.ok()) {
          Refuse(reg.node(), protocol);
          return false;
        }
        // The identity a takeover must prove: the node's certificate, or the agent process.
        std::string instance = reg.agent_instance();
        reg.clear_certificate_fingerprint();
        reg.clear_certificate_expire_ms();
        if (certificate_.has_value() && auth_.required) {
          instance = absl::StrCat("certificate CN=", certificate_->common_name);
          reg.set_certificate_fingerprint(certificate_->fingerprint);
          reg.set_certificate_expire_ms(certificate_->not_after_ms);
        }
        if (absl::Status attached = registry_->Attach(reg.node(), channel_, instance);
            !attached.ok()) {
          spdlog::warn("agent stream from {} refused: {}", peer_, attached.ToString());
          channel_->Finish(ToGrpcStatus(attached));
          return false;
        }
        node_ = reg.node();
        spdlog::info("agent {} registered from {} ({} runs)", node_, peer_, reg.runs_size());
        std::shared_ptr<SessionChannel> ch = channel_;
        auto ack_seq = AckAfterCommit(seq);
        // While trainctld refuses writes (a full disk) the agent is told why and dials again.
        auto refused = [ch](const absl::Status& why) { ch->Finish(ToGrpcStatus(why)); };
        loop_->Post(
            [reg, ch, ack_seq, peer = peer_, new_nodes = new_nodes_, loop = loop_](Turn& t) {
              // A name trainctld does not know counts against the host's new nodes.
              if (t.core.FindNode(reg.node()) == nullptr) {
                if (absl::Status admitted = new_nodes->Admit(peer, t.now); !admitted.ok()) {
                  spdlog::warn("agent stream from {} claiming new node {} refused: {}", peer,
                               reg.node(), admitted.ToString());
                  ch->Finish(ToGrpcStatus(admitted));
                  return;
                }
              }
              v1::SchedulerMessage ack;
              *ack.mutable_register_ack() = t.core.AgentRegistered(reg, t.now, t.fx);
              ack.mutable_register_ack()->set_job_retention_ms(loop->job_retention_ms());
              t.after_commit->push_back([ch, ack, ack_seq] {
                ch->Send(ack);
                ack_seq();
              });
            },
            refused);
        break;
      }
      case v1::AgentMessage::kHeartbeat: {
        std::string node = node_;
        // Answered by the turn that records it, so the agent's fence timer (node_health.h),
        // which counts from when it sent the heartbeat, never runs behind the lost timeout.
        // Not after the commit: the time a node was heard lives in memory only. Answered also
        // while writes are refused: no tick marks a node LOST then, and the rebuilt core gives
        // every node a full lost timeout, so replicas keep running through a full disk.
        auto answer = [ch = channel_, seq] {
          v1::SchedulerMessage ack;
          ack.mutable_heartbeat_ack()->set_seq(seq);
          ch->Send(ack);
        };
        loop_->Post(
            [node, answer,
             maintenance = m.heartbeat().has_maintenance()
                               ? std::optional(m.heartbeat().maintenance())
                               : std::nullopt](Turn& t) {
              t.core.Heartbeat(node, t.now, t.fx);
              if (maintenance) t.core.MaintenanceReported(node, *maintenance, t.now, t.fx);
              answer();
            },
            [answer](const absl::Status&) { answer(); });
        break;
      }
      case v1::AgentMessage::kReplicaStarted:
        PostReport(seq, [node = node_, started = m.replica_started()](Turn& t) {
          t.core.ReplicaStarted(node, started, t.now, t.fx);
        });
        break;
      case v1::AgentMessage::kReplicaExited:
        PostReport(seq, [node = node_, exited = m.replica_exited()](Turn& t) {
          t.core.ReplicaExited(node, exited, t.now, t.fx);
        });
        break;
      case v1::AgentMessage::kCheckReport:
        PostReport(seq, [node = node_, run = m.check_report().run()](Turn& t) {
          t.core.CheckReported(node, run, t.now, t.fx);
        });
        break;
      case v1::AgentMessage::kReplicaProgress: {
        std::string node = node_;
        v1::ReplicaProgress progress = m.replica_progress();
        loop_->Post(
            [node, progress](Turn& t) { t.core.ReplicaProgress(node, progress, t.now, t.fx); });
        break;
      }
      case v1::AgentMessage::kLogData:
        registry_->CompleteLog(m.log_data());
        break;
      case v1::AgentMessage::kImagePull: {
        // Best effort, like progress: not journaled, not acknowledged.
        std::string node = node_;
        v1::ImagePull pull = m.image_pull();
        loop_->Post([node, pull](Turn& t) { t.core.ImagePull(node, pull, t.now, t.fx); });
        break;
      }
      case v1::AgentMessage::kFabric: {
        // An answer to CheckFabric: not journaled; a lost one counts as none at the deadline.
        std::string node = node_;
        v1::FabricReport report = m.fabric();
        loop_->Post([node, report](Turn& t) { t.core.FabricReported(node, report, t.now, t.fx); });
        break;
      }
      case v1::AgentMessage::kImagePrepulled:
        registry_->CompletePrepull(m.image_prepulled());
        break;
      case v1::AgentMessage::kStacks:
        if (m.stacks().request_id() != 0) {
          registry_->CompleteStacks(m.stacks());  // `trainctl stacks --now`
        } else {
          PostReport(seq, [node = node_, stacks = m.stacks().stacks()](Turn& t) {
            t.core.StacksCaptured(node, stacks, t.now, t.fx);
          });
        }
        break;
      case v1::AgentMessage::MSG_NOT_SET:
        break;
    }
    return true;
  }

  // This stream's place among its host's agent streams.
  const PeerStreamLimiter::Slot slot_;
  ReconcileLoop* const loop_;
  AgentRegistry* const registry_;
  RefusalEvents* const refusals_;
  NewNodeLimiter* const new_nodes_;
  const std::string peer_;
  const AgentAuth auth_;
  // The verified client certificate, when the peer presented one.
  const std::optional<CertificateInfo> certificate_;
  const std::shared_ptr<SessionChannel> channel_;
  // No lock: touched only by OnReadDone (one read at a time, each started by the one before)
  // and by OnDone, which gRPC runs after every other callback of the stream.
  // Set by the first register.
  std::string node_;
  // The read buffer.
  v1::AgentMessage in_;
};

}  // namespace

grpc::ServerBidiReactor<v1::AgentMessage, v1::SchedulerMessage>* AgentServiceImpl::Connect(
    grpc::CallbackServerContext* ctx) {
  absl::StatusOr<PeerStreamLimiter::Slot> slot = streams_.Acquire(ctx->peer());
  if (!slot.ok()) {
    spdlog::warn("agent stream from {} refused: {}", ctx->peer(),
                 std::string(slot.status().message()));
    return new RefusedStream(ToGrpcStatus(slot.status()));
  }
  return new AgentSession(loop_, registry_, ctx->peer(), auth_, VerifiedPeerCertificate(*ctx),
                          &refusals_, &new_nodes_, *std::move(slot), leader_epoch_);
}

absl::Status CheckAgentIdentity(const AgentAuth& auth,
                                const std::optional<CertificateInfo>& certificate,
                                const std::string& node) {
  if (!auth.required) return absl::OkStatus();
  if (!certificate.has_value()) {
    return absl::UnauthenticatedError(
        "this scheduler accepts agents only with a client certificate signed by its "
        "--agent-ca: start trainctl-agent with --tls-cert and --tls-key (made by `trainctld "
        "pki issue-agent DIR NODE`)");
  }
  if (certificate->organizational_unit != kAgentUnit) {
    return absl::PermissionDeniedError(
        absl::StrCat("the client certificate (CN=", certificate->common_name,
                     ") is not an agent certificate (OU=", kAgentUnit,
                     "); issue one with `trainctld pki "
                     "issue-agent DIR ",
                     node, "`"));
  }
  if (certificate->common_name != node) {
    return absl::PermissionDeniedError(absl::StrCat("the client certificate is for node '",
                                                    certificate->common_name,
                                                    "'; it cannot register as '", node, "'"));
  }
  if (auth.revoked != nullptr && auth.revoked->Contains(certificate->fingerprint)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "node ", node, "'s certificate ", certificate->fingerprint,
        " was revoked; issue a new one with `trainctld pki issue-agent DIR ", node, "`"));
  }
  return absl::OkStatus();
}

bool RefusalEvents::ShouldRecord(const std::string& node, const std::string& why, absl::Time now) {
  absl::MutexLock lock(&mu_);
  if (last_.size() >= kMaxKeys) last_.clear();
  auto [it, fresh] = last_.try_emplace(absl::StrCat(node, "\n", why), now);
  if (!fresh && now - it->second < kInterval) return false;
  it->second = now;
  return true;
}

}  // namespace trainctl::server
