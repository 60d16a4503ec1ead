#include "scheduler/node_registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/enum_names.h"
#include "common/time_util.h"
#include "model/model_proto.h"
#include "scheduler/job_validation.h"
#include "scheduler/launch_env.h"

namespace trainctl::sched {
namespace {

constexpr size_t kMaxReasonLength = 1024;

absl::Status NotFound(const std::string& name) {
  return absl::NotFoundError(absl::StrCat("node ", name, " not found"));
}

absl::Status CheckReasonLength(const std::string& reason) {
  if (reason.size() <= kMaxReasonLength) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("reason must be at most ", kMaxReasonLength,
                                                 " characters, got ", reason.size()));
}

}  // namespace

void NodeRegistry::Restore(std::vector<Node> nodes) {
  for (Node& n : nodes) {
    liveness_.Restore(&n);
    n.draining = n.status.state == v1::NODE_STATE_DRAINING;
    book_.LoadDevices(n);
    nodes_[n.name] = std::move(n);
  }
  liveness_.Restored();
  Changed();
}

Node* NodeRegistry::FindMutable(const std::string& name) {
  auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : &it->second;
}

const Node* NodeRegistry::Find(const std::string& name) const {
  auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : &it->second;
}

// --- Reports from agents -----------------------------------------------------------------------

void NodeRegistry::Register(const v1::Register& reg, absl::Time now, Effects* fx) {
  Node& node = nodes_[reg.node()];
  const bool known_before = !node.name.empty();
  const bool same_agent = known_before && node.agent_instance == reg.agent_instance();
  node.name = reg.node();
  node.address = reg.address();
  node.fabric_port = reg.fabric_port();
  node.capacity = Res::FromProto(reg.capacity());
  node.allocatable = Res::FromProto(reg.allocatable());
  node.labels = {reg.labels().begin(), reg.labels().end()};
  node.shutting_down = false;
  node.agent_instance = reg.agent_instance();
  liveness_.Connected(&node, now);
  node.status.agent_version = reg.agent_version();
  node.status.config.clear();
  node.status.config.insert(reg.config().begin(), reg.config().end());
  // The inventory is trusted when it lists as many GPUs as the agent offers.
  node.status.gpu_devices.clear();
  if (reg.gpu_devices_size() == reg.allocatable().gpus()) {
    node.status.gpu_devices = {reg.gpu_devices().begin(), reg.gpu_devices().end()};
  } else {
    for (v1::GpuDevice& d : SyntheticDevices(reg.allocatable().gpus())) {
      node.status.gpu_devices.push_back(std::move(d));
    }
  }
  for (v1::GpuDevice& d : node.status.gpu_devices) {
    d.clear_holder();
    d.clear_run_id();
  }
  book_.LoadDevices(node);
  node.status.certificate_fingerprint = reg.certificate_fingerprint();
  if (reg.certificate_expire_ms() > 0) {
    node.status.certificate_expire_time = absl::FromUnixMillis(reg.certificate_expire_ms());
  } else {
    node.status.certificate_expire_time = absl::UnixEpoch();
  }
  fx->nodes.insert(node.name);
  Changed();
  AddEvent(fx, now, nullptr, "", node.name, known_before ? "NodeReconnected" : "NodeRegistered",
           absl::StrCat(same_agent ? "agent reconnected" : "agent registered", " with ",
                        reg.allocatable().cpu(), " cpu, ", reg.allocatable().memory_mb(), " MiB, ",
                        reg.allocatable().gpus(), " gpus allocatable; reports ", reg.runs_size(),
                        " runs"));
  if (!liveness_.Rejoined(&node, now, fx)) {
    Refresh(&node, known_before ? "its agent reconnected" : "its agent registered", now, fx);
  }
  if (reg.has_startup()) ApplyCheckRun(node.name, reg.startup(), now, fx);
}

NodeRegistry::CheckOutcome NodeRegistry::ApplyCheckRun(const std::string& name,
                                                       const v1::CheckRun& run_in, absl::Time now,
                                                       Effects* fx) {
  Node* found = FindMutable(name);
  if (found == nullptr) return {};
  Node& node = *found;
  v1::CheckRun run = run_in;
  if (!run.has_time()) *run.mutable_time() = ToProtoTime(now);
  const sched::CheckOutcome out = RecordCheckRun(policy_, run, now, &node);
  const std::string when = FormatRfc3339(TimestampToMs(run.time()));
  std::string reason;
  if (!run.passed()) {
    reason = absl::StrCat(run.phase(), " check failed: ", FailedItems(run));
    node.status.health_description = absl::StrCat("The host failed its ", run.phase(), " check at ",
                                                  when, ": ", FailedItems(run));
    if (out.isolated) {
      AddEvent(fx, now, nullptr, "", name, "NodeIsolated",
               absl::StrCat(reason, "; no new work until its checks pass again"));
    } else {
      AddEvent(fx, now, nullptr, "", name, "NodeCheckFailed", reason);
    }
    if (out.became_flapping) {
      AddEvent(
          fx, now, nullptr, "", name, "NodeFlapping",
          absl::StrCat("isolated ", node.status.isolation_times.size(), " times within ",
                       FormatDuration(ToMs(policy_.flap_window)),
                       ": stays out until an operator runs `trainctl node uncordon ", name, "`"));
      reason =
          absl::StrCat("flapping (isolated ", node.status.isolation_times.size(), " times within ",
                       FormatDuration(ToMs(policy_.flap_window)), "); last: ", reason);
    }
  } else if (out.recovered) {
    node.status.health_description =
        absl::StrCat("The host passed its ", run.phase(), " check again at ", when);
    if (node.status.flapping) {
      reason = absl::StrCat(
          "flapping: its checks pass again, but it stays out until an operator "
          "runs `trainctl node uncordon ",
          name, "`");
      node.status.state_reason = reason;  // still ISOLATED: Refresh keeps the old one
    } else {
      reason = absl::StrCat("its ", run.phase(), " check passed again");
    }
    AddEvent(fx, now, nullptr, "", name, "NodeHealthy", reason);
  }
  Refresh(&node, reason, now, fx);
  return {DeriveState(node) == v1::NODE_STATE_ISOLATED};
}

bool NodeRegistry::MarkShuttingDown(const std::string& name, absl::Time now, Effects* fx) {
  Node* node = FindMutable(name);
  if (node == nullptr || node->shutting_down) return false;
  node->shutting_down = true;
  Changed();
  node->status.health_description = absl::StrCat("The host had a maintenance event at ",
                                                 FormatRfc3339(ToMs(now)), ": its agent shut down");
  AddEvent(fx, now, nullptr, "", name, "NodeShutdown",
           "its agent is shutting down; moving its replicas to other nodes");
  Refresh(node, "its agent is shutting down", now, fx);
  return true;
}

void NodeRegistry::IgnoredReport(const std::string& name, const std::string& run_id,
                                 const std::string& owner, absl::Time now, Effects* fx) {
  Node* node = FindMutable(name);
  if (node == nullptr) return;
  node->status.ignored_reports = node->status.ignored_reports + 1;
  Changed();
  fx->nodes.insert(name);
  if (node->status.ignored_reports == 1) {
    AddEvent(fx, now, nullptr, "", name, "NodeReportIgnored",
             absl::StrCat("its agent reported on run ", run_id, ", which runs on ", owner,
                          "; ignored (later ones are only counted: trainctl node describe)"));
  }
}

// --- Operators ---------------------------------------------------------------------------------

absl::StatusOr<std::string> NodeRegistry::Revoke(const std::string& name, const std::string& reason,
                                                 absl::Time now, Effects* fx) {
  Node* node = FindMutable(name);
  if (node == nullptr) return NotFound(name);
  if (absl::Status s = CheckReasonLength(reason); !s.ok()) return s;
  const std::string fingerprint = node->status.certificate_fingerprint;
  if (fingerprint.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "node ", name,
        " never registered with a client certificate, so there is none to revoke (agents are "
        "authenticated only when trainctld runs with --tls-cert and --agent-ca)"));
  }
  bool known = false;
  for (const std::string& r : node->status.revoked_certificates) known = known || r == fingerprint;
  if (!known) node->status.revoked_certificates.push_back(fingerprint);
  node->status.cordoned = true;
  NodeMaintenance::OperatorTookHold(node);
  liveness_.Revoked(node);
  const std::string why =
      absl::StrCat("node ", name, "'s certificate ", fingerprint, " was revoked by an operator",
                   reason.empty() ? "" : ": ", reason);
  node->status.health_description =
      absl::StrCat("The host's certificate was revoked at ", FormatRfc3339(ToMs(now)),
                   reason.empty() ? "" : ": ", reason);
  AddEvent(fx, now, nullptr, "", name, "NodeRevoked",
           absl::StrCat(why, "; its agent is disconnected and its replicas move to other nodes"));
  fx->nodes.insert(name);
  Changed();
  Refresh(node, why, now, fx);
  return why;
}

absl::StatusOr<v1::Node> NodeRegistry::Delete(const std::string& name, const std::string& reason,
                                              absl::Time now, Effects* fx) {
  const Node* node = Find(name);
  if (node == nullptr) return NotFound(name);
  if (absl::Status s = CheckReasonLength(reason); !s.ok()) return s;
  if (node->connected) {
    return absl::FailedPreconditionError(absl::StrCat(
        "node ", name,
        "'s agent is connected; stop it first (or `trainctl node revoke` its certificate)"));
  }
  v1::Node was = ViewOf(*node);
  fx->deleted_nodes[name] = {node->status.revoked_certificates.begin(),
                             node->status.revoked_certificates.end()};
  fx->nodes.erase(name);
  nodes_.erase(name);
  book_.Forget(name);
  Changed();
  AddEvent(fx, now, nullptr, "", name, "NodeDeleted",
           absl::StrCat("node ", name, " was deleted by an operator", reason.empty() ? "" : ": ",
                        reason));
  return was;
}

void NodeRegistry::Refused(const std::string& name, const std::string& why, absl::Time now,
                           Effects* fx) {
  AddEvent(fx, now, nullptr, "", name, "AgentRefused", why);
}

absl::Status NodeRegistry::Cordon(const std::string& name, const std::string& reason,
                                  absl::Time now, Effects* fx) {
  Node* node = FindMutable(name);
  if (node == nullptr) return NotFound(name);
  if (absl::Status s = CheckReasonLength(reason); !s.ok()) return s;
  const std::string why = reason.empty() ? "cordoned by an operator"
                                         : absl::StrCat("cordoned by an operator: ", reason);
  if (!node->status.cordoned) {
    node->status.cordoned = true;
    NodeMaintenance::OperatorTookHold(node);
    AddEvent(fx, now, nullptr, "", name, "NodeCordoned", why);
    Refresh(node, why, now, fx);
  } else if (NodeMaintenance::OperatorTookHold(node)) {
    // Cordoned by its maintenance window: the cordon is the operator's now, and stays.
    AddEvent(fx, now, nullptr, "", name, "NodeCordoned",
             absl::StrCat(why, "; it stays cordoned after its maintenance window"));
    fx->nodes.insert(name);
  }
  return absl::OkStatus();
}

absl::Status NodeRegistry::Uncordon(const std::string& name, absl::Time now, Effects* fx) {
  Node* node = FindMutable(name);
  if (node == nullptr) return NotFound(name);
  const bool held = node->status.cordoned || node->draining || node->status.flapping;
  NodeMaintenance::OperatorTookHold(node);
  node->status.cordoned = false;
  node->status.flapping = false;
  node->status.isolation_times.clear();
  node->status.drain_deadline = absl::ZeroDuration();
  node->draining = false;
  std::string why = "uncordoned by an operator";
  if (FailingChecks(node->status)) {
    why = "uncordoned by an operator; stays out until its checks pass";
    if (node->connected) {
      v1::SchedulerMessage msg;
      msg.mutable_run_checks();
      fx->commands.push_back({name, std::move(msg)});
    }
  }
  if (held || FailingChecks(node->status)) {
    AddEvent(fx, now, nullptr, "", name, "NodeUncordoned", why);
  }
  Refresh(node, why, now, fx);
  return absl::OkStatus();
}

absl::StatusOr<std::string> NodeRegistry::Drain(const std::string& name, const std::string& reason,
                                                absl::Duration deadline, absl::Time now,
                                                Effects* fx) {
  Node* node = FindMutable(name);
  if (node == nullptr) return NotFound(name);
  if (reason.empty()) {
    return absl::InvalidArgumentError(
        "reason is required: say why the node is drained, e.g. \"kernel upgrade\"");
  }
  if (absl::Status s = CheckReasonLength(reason); !s.ok()) return s;
  if (deadline < absl::ZeroDuration() || deadline > absl::Hours(24)) {
    return absl::InvalidArgumentError(
        absl::StrCat("deadline must be 0s..24h, got ", FormatDuration(ToMs(deadline))));
  }
  NodeMaintenance::OperatorTookHold(node);
  const std::string why = absl::StrCat("drained by an operator: ", reason);
  StartDrain(node, why, reason, deadline, now, fx);
  return absl::StrCat("node ", name, " is draining: ", reason);
}

void NodeRegistry::StartDrain(Node* node, const std::string& why, const std::string& what,
                              absl::Duration deadline, absl::Time now, Effects* fx) {
  node->status.cordoned = true;
  node->draining = true;
  if (deadline > absl::ZeroDuration()) {
    node->status.drain_deadline = deadline;
  } else {
    node->status.drain_deadline = absl::ZeroDuration();
  }
  node->status.health_description =
      absl::StrCat("The host had a maintenance event at ", FormatRfc3339(ToMs(now)), ": ", what);
  AddEvent(
      fx, now, nullptr, "", node->name, "NodeDrainStarted",
      absl::StrCat(why, "; moving its replicas to other nodes",
                   deadline > absl::ZeroDuration()
                       ? absl::StrCat(" (each gets ", FormatDuration(ToMs(deadline)), " to stop)")
                       : std::string(" (each gets its job's stopGracePeriod)")));
  Refresh(node, why, now, fx);
}

// --- Time --------------------------------------------------------------------------------------

void NodeRegistry::FinishDrains(absl::Time now, Effects* fx) {
  for (auto& [name, node] : nodes_) {
    if (!node.draining || UsageOf(name).replicas != 0) continue;
    node.draining = false;
    node.status.drain_deadline = absl::ZeroDuration();
    AddEvent(fx, now, nullptr, "", name, "NodeDrained",
             "every replica has moved off; the node stays cordoned until `trainctl node "
             "uncordon`");
    Refresh(&node, "drained: every replica moved off; cordoned until uncordoned", now, fx);
  }
}

void NodeRegistry::Refresh(Node* node, const std::string& reason, absl::Time now, Effects* fx) {
  const v1::NodeState state = DeriveState(*node);
  const v1::NodeHealth health = DeriveHealth(*node);
  fx->nodes.insert(node->name);
  if (health != node->status.health) node->status.health = health;
  if (state == node->status.state) return;
  node->status.state = state;
  node->status.state_reason = reason;
  node->status.state_time = now;
  Changed();
}

// --- Reads -------------------------------------------------------------------------------------

bool NodeRegistry::KeepsReplicas(const std::string& name, std::string* why_not) const {
  const Node* node = Find(name);
  if (node != nullptr && sched::KeepsReplicas(*node)) return true;
  if (node != nullptr && node->shutting_down) {
    *why_not = absl::StrCat("node ", name, "'s agent is shutting down");
    return false;
  }
  *why_not =
      absl::StrCat("node ", name, " is ",
                   node == nullptr ? std::string("unknown") : EnumShortName(DeriveState(*node)),
                   node != nullptr && !node->connected ? " and disconnected" : "");
  return false;
}

v1::Node NodeRegistry::ViewOf(const Node& n) const {
  const NodeUsage usage = UsageOf(n.name);
  v1::Node out = ToProto(n);
  Res free = n.allocatable;
  free -= usage.used;
  *out.mutable_free() = ToProto(free);
  out.set_replicas(usage.replicas);
  if (const DevicePool* devices = book_.DevicesOf(n.name)) {
    out.mutable_gpu_devices()->Assign(devices->devices().begin(), devices->devices().end());
  }
  return out;
}

absl::StatusOr<v1::Node> NodeRegistry::View(const std::string& name) const {
  const Node* node = Find(name);
  if (node == nullptr) return NotFound(name);
  return ViewOf(*node);
}

std::vector<v1::Node> NodeRegistry::Views() const {
  std::vector<v1::Node> out;
  for (const auto& [name, n] : nodes_) out.push_back(ViewOf(n));
  return out;
}

}  // namespace trainctl::sched
