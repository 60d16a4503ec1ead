#include "model/model_proto.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace trainctl::sched {
namespace {

struct ClassName {
  FailureClass value;
  const char* name;
};
constexpr ClassName kClassNames[] = {
    {FailureClass::kNone, ""},
    {FailureClass::kTransient, "TRANSIENT"},
    {FailureClass::kUserError, "USER_ERROR"},
    {FailureClass::kOutOfMemory, "OUT_OF_MEMORY"},
    {FailureClass::kInternal, "INTERNAL"},
    {FailureClass::kHung, "HUNG"},
    {FailureClass::kCapacity, "CAPACITY"},
    {FailureClass::kDeadline, "DEADLINE"},
    {FailureClass::kHostFault, "HOST_FAULT"},
    {FailureClass::kMaintenance, "MAINTENANCE"},
    {FailureClass::kPreempted, "PREEMPTED"},
};

struct DecisionNameRow {
  Decision value;
  const char* name;
};
constexpr DecisionNameRow kDecisionNames[] = {
    {Decision::kNone, ""},
    {Decision::kContinue, "CONTINUE"},
    {Decision::kSucceedJob, "SUCCEED_JOB"},
    {Decision::kRestartReplica, "RESTART_REPLICA"},
    {Decision::kMoveReplica, "MOVE_REPLICA"},
    {Decision::kRestartGang, "RESTART_GANG"},
    {Decision::kRetryJob, "RETRY_JOB"},
    {Decision::kRedispatch, "REDISPATCH"},
    {Decision::kFailJob, "FAIL_JOB"},
    {Decision::kPreempt, "PREEMPT"},
};

struct MoveCauseRow {
  MoveCause value;
  v1::MoveCause proto;
};
constexpr MoveCauseRow kMoveCauses[] = {
    {MoveCause::kNone, v1::MOVE_CAUSE_UNSPECIFIED},
    {MoveCause::kDrain, v1::MOVE_CAUSE_DRAIN},
    {MoveCause::kLost, v1::MOVE_CAUSE_LOST},
    {MoveCause::kUnhealthy, v1::MOVE_CAUSE_UNHEALTHY},
    {MoveCause::kShutdown, v1::MOVE_CAUSE_SHUTDOWN},
    {MoveCause::kNodeUnavailable, v1::MOVE_CAUSE_NODE_UNAVAILABLE},
};

v1::MoveCause ToProto(MoveCause c) {
  for (const MoveCauseRow& row : kMoveCauses) {
    if (row.value == c) return row.proto;
  }
  return v1::MOVE_CAUSE_UNSPECIFIED;
}

MoveCause MoveCauseFromProto(v1::MoveCause c, const std::string& reason) {
  for (const MoveCauseRow& row : kMoveCauses) {
    if (row.proto == c && row.value != MoveCause::kNone) return row.value;
  }
  // A replica moving in a database written before move causes were stored: it moves, for a
  // reason that charges a re-dispatch like any host trouble.
  return reason.empty() ? MoveCause::kNone : MoveCause::kNodeUnavailable;
}

std::optional<absl::Time> OptionalTime(bool has, const google::protobuf::Timestamp& t) {
  if (!has) return std::nullopt;
  return FromProtoTime(t);
}

bool IsEmpty(const JobError& e) {
  return e.code == absl::StatusCode::kOk && e.message.empty() && e.replica.empty() &&
         e.node.empty() && e.reason == FailureClass::kNone && e.output_tail.empty();
}

Replica ReplicaFromProto(const v1::Replica& p) {
  Replica r;
  r.name = p.name();
  r.pool = p.pool();
  r.index = p.index();
  r.rank = p.rank();
  r.node = p.node();
  r.port = p.port();
  r.rendezvous_port = p.rendezvous_port();
  r.gpu_devices.assign(p.gpu_devices().begin(), p.gpu_devices().end());
  r.state = p.state();
  r.restart_count = p.restart_count();
  if (p.has_exit_code()) r.exit_code = p.exit_code();
  if (p.has_signal()) r.signal = p.signal();
  r.pid = p.pid();
  r.message = p.message();
  r.start_time = OptionalTime(p.has_start_time(), p.start_time());
  r.end_time = OptionalTime(p.has_end_time(), p.end_time());
  r.charged_restarts = p.charged_restarts();
  r.last_progress_time = OptionalTime(p.has_last_progress_time(), p.last_progress_time());
  r.step = p.step();
  r.straggler = p.straggler();
  r.next_start_time = OptionalTime(p.has_next_start_time(), p.next_start_time());
  r.oom_killed = p.oom_killed();
  r.moves = p.moves();
  r.move_reason = p.move_reason();
  r.move_cause = MoveCauseFromProto(p.move_cause(), p.move_reason());
  r.elastic_wait_until = OptionalTime(p.has_elastic_wait_until(), p.elastic_wait_until());
  return r;
}

}  // namespace

google::protobuf::Timestamp ToProtoTime(absl::Time t) {
  google::protobuf::Timestamp out;
  const int64_t seconds = absl::ToUnixSeconds(t);  // rounds toward the past
  out.set_seconds(seconds);
  out.set_nanos(static_cast<int32_t>(absl::ToInt64Nanoseconds(t - absl::FromUnixSeconds(seconds))));
  return out;
}

absl::Time FromProtoTime(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

std::string FailureClassName(FailureClass c) {
  for (const ClassName& row : kClassNames) {
    if (row.value == c) return row.name;
  }
  return "";
}

std::string DecisionName(Decision d) {
  for (const DecisionNameRow& row : kDecisionNames) {
    if (row.value == d) return row.name;
  }
  return "";
}

absl::StatusOr<FailureClass> ParseFailureClass(const std::string& name) {
  for (const ClassName& row : kClassNames) {
    if (name == row.name) return row.value;
  }
  return absl::DataLossError(absl::StrCat("unknown failure class \"", name, "\""));
}

absl::StatusOr<Decision> ParseDecision(const std::string& name) {
  for (const DecisionNameRow& row : kDecisionNames) {
    if (name == row.name) return row.value;
  }
  return absl::DataLossError(absl::StrCat("unknown decision \"", name, "\""));
}

v1::Resources ToProto(const Res& r) {
  v1::Resources out;
  out.set_cpu(r.cpu);
  out.set_memory_mb(r.memory_mb);
  out.set_gpus(static_cast<int32_t>(r.gpus));
  return out;
}

v1::Budgets ToProto(const Budgets& b) {
  v1::Budgets out;
  out.set_job_retries(b.job_retries);
  out.set_internal_retries(b.internal_retries);
  out.set_capacity_retries(b.capacity_retries);
  out.set_redispatches(b.redispatches);
  return out;
}

Budgets BudgetsFromProto(const v1::Budgets& p) {
  return Budgets{p.job_retries(), p.internal_retries(), p.capacity_retries(), p.redispatches()};
}

v1::JobError ToProto(const JobError& e) {
  v1::JobError out;
  out.set_code(static_cast<int32_t>(e.code));
  out.set_message(e.message);
  out.set_replica(e.replica);
  out.set_node(e.node);
  out.set_reason(FailureClassName(e.reason));
  out.set_output_tail(e.output_tail);
  for (const std::string& c : e.consequences) out.add_consequences(c);
  return out;
}

absl::StatusOr<JobError> ErrorFromProto(const v1::JobError& p) {
  JobError e;
  e.code = static_cast<absl::StatusCode>(p.code());
  e.message = p.message();
  e.replica = p.replica();
  e.node = p.node();
  TC_ASSIGN_OR_RETURN(e.reason, ParseFailureClass(p.reason()));
  e.output_tail = p.output_tail();
  e.consequences.assign(p.consequences().begin(), p.consequences().end());
  return e;
}

v1::Replica ToProto(const Replica& r) {
  v1::Replica out;
  out.set_name(r.name);
  out.set_pool(r.pool);
  out.set_index(r.index);
  out.set_rank(r.rank);
  out.set_node(r.node);
  out.set_port(r.port);
  out.set_rendezvous_port(r.rendezvous_port);
  out.mutable_gpu_devices()->Add(r.gpu_devices.begin(), r.gpu_devices.end());
  out.set_state(r.state);
  out.set_restart_count(r.restart_count);
  if (r.exit_code) out.set_exit_code(*r.exit_code);
  if (r.signal) out.set_signal(*r.signal);
  out.set_pid(r.pid);
  out.set_message(r.message);
  if (r.start_time) *out.mutable_start_time() = ToProtoTime(*r.start_time);
  if (r.end_time) *out.mutable_end_time() = ToProtoTime(*r.end_time);
  out.set_charged_restarts(r.charged_restarts);
  if (r.last_progress_time) *out.mutable_last_progress_time() = ToProtoTime(*r.last_progress_time);
  out.set_step(r.step);
  out.set_straggler(r.straggler);
  if (r.next_start_time) *out.mutable_next_start_time() = ToProtoTime(*r.next_start_time);
  out.set_oom_killed(r.oom_killed);
  out.set_moves(r.moves);
  out.set_move_reason(r.move_reason);
  out.set_move_cause(ToProto(r.move_cause));
  if (r.elastic_wait_until) *out.mutable_elastic_wait_until() = ToProtoTime(*r.elastic_wait_until);
  return out;
}

v1::RootCause ToProto(const RootCause& c) {
  v1::RootCause out;
  out.set_replica(c.replica);
  out.set_node(c.node);
  *out.mutable_exit_time() = ToProtoTime(c.exit_time);
  out.set_failure_class(FailureClassName(c.failure_class));
  out.set_summary(c.summary);
  for (const std::string& s : c.consequences) out.add_consequences(s);
  return out;
}

absl::StatusOr<RootCause> RootCauseFromProto(const v1::RootCause& p) {
  RootCause c;
  c.replica = p.replica();
  c.node = p.node();
  c.exit_time = FromProtoTime(p.exit_time());
  TC_ASSIGN_OR_RETURN(c.failure_class, ParseFailureClass(p.failure_class()));
  c.summary = p.summary();
  c.consequences.assign(p.consequences().begin(), p.consequences().end());
  return c;
}

v1::Attempt ToProto(const Attempt& a) {
  v1::Attempt out;
  out.set_number(a.number);
  out.set_state(a.state);
  out.set_reason(a.reason);
  if (a.start_time) *out.mutable_start_time() = ToProtoTime(*a.start_time);
  if (a.end_time) *out.mutable_end_time() = ToProtoTime(*a.end_time);
  for (const std::string& n : a.nodes) out.add_nodes(n);
  out.set_failure_class(FailureClassName(a.failure_class));
  out.set_matched_rule(a.matched_rule);
  out.set_replica(a.replica);
  out.set_node(a.node);
  out.set_decision(DecisionName(a.decision));
  if (a.budgets_left) *out.mutable_budgets_left() = ToProto(*a.budgets_left);
  for (const std::string& c : a.consequences) out.add_consequences(c);
  for (const GangRestart& g : a.gang_restarts) {
    v1::GangRestart* p = out.add_gang_restarts();
    p->set_generation(g.generation);
    *p->mutable_time() = ToProtoTime(g.time);
    *p->mutable_cause() = ToProto(g.cause);
    p->set_matched_rule(g.matched_rule);
    p->set_charged(g.charged);
  }
  for (const Resize& z : a.resizes) {
    v1::Resize* p = out.add_resizes();
    *p->mutable_time() = ToProtoTime(z.time);
    p->set_generation(z.generation);
    p->set_pool(z.pool);
    p->set_from_replicas(z.from_replicas);
    p->set_to_replicas(z.to_replicas);
    for (const std::string& name : z.replicas) p->add_replicas(name);
    p->set_reason(z.reason);
    p->set_world_size(z.world_size);
  }
  if (a.fabric_check) *out.mutable_fabric_check() = *a.fabric_check;
  return out;
}

absl::StatusOr<Attempt> AttemptFromProto(const v1::Attempt& p) {
  Attempt a;
  a.number = p.number();
  a.state = p.state();
  a.reason = p.reason();
  a.start_time = OptionalTime(p.has_start_time(), p.start_time());
  a.end_time = OptionalTime(p.has_end_time(), p.end_time());
  a.nodes.assign(p.nodes().begin(), p.nodes().end());
  TC_ASSIGN_OR_RETURN(a.failure_class, ParseFailureClass(p.failure_class()));
  a.matched_rule = p.matched_rule();
  a.replica = p.replica();
  a.node = p.node();
  TC_ASSIGN_OR_RETURN(a.decision, ParseDecision(p.decision()));
  if (p.has_budgets_left()) a.budgets_left = BudgetsFromProto(p.budgets_left());
  a.consequences.assign(p.consequences().begin(), p.consequences().end());
  for (const v1::GangRestart& g : p.gang_restarts()) {
    GangRestart restart;
    restart.generation = g.generation();
    restart.time = FromProtoTime(g.time());
    TC_ASSIGN_OR_RETURN(restart.cause, RootCauseFromProto(g.cause()));
    restart.matched_rule = g.matched_rule();
    restart.charged = g.charged();
    a.gang_restarts.push_back(std::move(restart));
  }
  for (const v1::Resize& z : p.resizes()) {
    a.resizes.push_back({FromProtoTime(z.time()),
                         z.generation(),
                         z.pool(),
                         z.from_replicas(),
                         z.to_replicas(),
                         {z.replicas().begin(), z.replicas().end()},
                         z.reason(),
                         z.world_size()});
  }
  if (p.has_fabric_check()) a.fabric_check = p.fabric_check();
  return a;
}

v1::Job ToProto(const Job& job) {
  v1::Job out;
  out.set_id(job.id);
  out.set_display_name(job.display_name);
  out.set_project(job.project);
  out.set_creator(job.creator);
  out.set_request_id(job.request_id);
  out.set_request_hash(job.request_hash);
  out.set_priority(job.priority);
  out.set_state(job.state);
  if (!IsEmpty(job.error)) *out.mutable_error() = ToProto(job.error);
  *out.mutable_create_time() = ToProtoTime(job.create_time);
  if (job.start_time) *out.mutable_start_time() = ToProtoTime(*job.start_time);
  if (job.end_time) *out.mutable_end_time() = ToProtoTime(*job.end_time);
  *out.mutable_update_time() = ToProtoTime(job.update_time);
  for (const Replica& r : job.replicas) *out.add_replicas() = ToProto(r);
  for (const Attempt& a : job.attempts) *out.add_attempts() = ToProto(a);
  *out.mutable_spec() = job.spec;
  out.set_queue_reason(job.queue_reason);
  out.set_checkpoint_dir(job.checkpoint_dir);
  out.set_checkpoint_root(job.checkpoint_root);
  if (job.budgets_used != Budgets{}) *out.mutable_budgets_used() = ToProto(job.budgets_used);
  if (job.next_attempt_time) *out.mutable_next_attempt_time() = ToProtoTime(*job.next_attempt_time);
  if (job.queue_time) *out.mutable_queue_time() = ToProtoTime(*job.queue_time);
  out.set_gang_generation(job.gang_generation);
  if (job.root_cause) *out.mutable_root_cause() = ToProto(*job.root_cause);
  out.set_gang_restarting(job.gang_restarting);
  out.set_preemptions(job.preemptions);
  if (job.preemption) {
    v1::Preemption* pre = out.mutable_preemption();
    pre->set_preempting_job(job.preemption->by);
    pre->set_reason(job.preemption->reason);
    *pre->mutable_decision_time() = ToProtoTime(job.preemption->decided);
    *pre->mutable_deadline() = ToProtoTime(job.preemption->deadline);
    pre->set_attempt(job.preemption->attempt);
  }
  if (job.preempted_wait != absl::ZeroDuration()) {
    const int64_t seconds = absl::ToInt64Seconds(job.preempted_wait);
    out.mutable_preempted_wait()->set_seconds(seconds);
    out.mutable_preempted_wait()->set_nanos(static_cast<int32_t>(
        absl::ToInt64Nanoseconds(job.preempted_wait - absl::Seconds(seconds))));
  }
  if (job.last_checkpoint) *out.mutable_last_checkpoint_time() = ToProtoTime(*job.last_checkpoint);
  for (const std::string& node : job.excluded_nodes) out.add_excluded_nodes(node);
  out.set_held(job.held);
  out.set_held_by(job.held_by);
  out.set_hold_reason(job.hold_reason);
  if (job.hold_time) *out.mutable_hold_time() = ToProtoTime(*job.hold_time);
  for (const v1::DependencyStatus& d : job.dependencies) *out.add_dependencies() = d;
  ArrayFieldsToProto(job.array, job.element, job.state, &out);
  return out;
}

absl::StatusOr<Job> JobFromProto(const v1::Job& p) {
  Job job;
  job.id = p.id();
  job.display_name = p.display_name();
  job.project = p.project();
  job.creator = p.creator();
  job.request_id = p.request_id();
  job.request_hash = p.request_hash();
  job.priority = p.priority();
  job.state = p.state();
  if (p.has_error()) {
    TC_ASSIGN_OR_RETURN(job.error, ErrorFromProto(p.error()));
  }
  job.create_time = FromProtoTime(p.create_time());
  job.start_time = OptionalTime(p.has_start_time(), p.start_time());
  job.end_time = OptionalTime(p.has_end_time(), p.end_time());
  job.update_time = FromProtoTime(p.update_time());
  job.spec = p.spec();
  job.policy = RetryPolicy::ForJob(job.spec);
  for (const v1::Replica& r : p.replicas()) {
    job.replicas.push_back(ReplicaFromProto(r));
    const v1::WorkerPool* pool = PoolOf(job, job.replicas.back());
    if (pool != nullptr) job.replicas.back().need = Res::FromProto(pool->resources());
  }
  for (const v1::Attempt& a : p.attempts()) {
    TC_ASSIGN_OR_RETURN(Attempt attempt, AttemptFromProto(a));
    job.attempts.push_back(std::move(attempt));
  }
  job.queue_reason = p.queue_reason();
  job.checkpoint_dir = p.checkpoint_dir();
  job.checkpoint_root = p.checkpoint_root();
  job.budgets_used = BudgetsFromProto(p.budgets_used());
  job.next_attempt_time = OptionalTime(p.has_next_attempt_time(), p.next_attempt_time());
  job.queue_time = OptionalTime(p.has_queue_time(), p.queue_time());
  job.gang_generation = p.gang_generation();
  if (p.has_root_cause()) {
    TC_ASSIGN_OR_RETURN(RootCause rc, RootCauseFromProto(p.root_cause()));
    job.root_cause = std::move(rc);
  }
  job.gang_restarting = p.gang_restarting();
  job.preemptions = p.preemptions();
  if (p.has_preemption()) {
    Preemption pre;
    pre.by = p.preemption().preempting_job();
    pre.reason = p.preemption().reason();
    pre.decided = FromProtoTime(p.preemption().decision_time());
    pre.deadline = FromProtoTime(p.preemption().deadline());
    pre.attempt = p.preemption().attempt();
    job.preemption = std::move(pre);
  }
  job.preempted_wait =
      absl::Seconds(p.preempted_wait().seconds()) + absl::Nanoseconds(p.preempted_wait().nanos());
  job.last_checkpoint = OptionalTime(p.has_last_checkpoint_time(), p.last_checkpoint_time());
  job.excluded_nodes.assign(p.excluded_nodes().begin(), p.excluded_nodes().end());
  job.held = p.held();
  job.held_by = p.held_by();
  job.hold_reason = p.hold_reason();
  job.hold_time = OptionalTime(p.has_hold_time(), p.hold_time());
  job.dependencies.assign(p.dependencies().begin(), p.dependencies().end());
  TC_RETURN_IF_ERROR(ArrayFieldsFromProto(p, &job.array, &job.element, &job.state));
  return job;
}

// --- Quotas --------------------------------------------------------------------------------------

Quota QuotaFromProto(const v1::Quota& p) {
  Quota q;
  q.project = p.project();
  if (p.has_gpus()) q.gpus = p.gpus();
  if (p.has_cpu()) q.cpu = p.cpu();
  if (p.has_memory_mb()) q.memory_mb = p.memory_mb();
  if (p.has_max_running_jobs()) q.max_running_jobs = p.max_running_jobs();
  q.cohort = p.cohort();
  q.has_borrowing_limit = p.has_borrowing_limit();
  q.borrowing_limit = Res::FromProto(p.borrowing_limit());
  q.queueing_strategy = p.queueing_strategy();
  if (p.has_starvation_limit()) {
    q.starvation_limit = absl::Seconds(p.starvation_limit().seconds()) +
                         absl::Nanoseconds(p.starvation_limit().nanos());
  }
  q.run_as_user = p.run_as_user();
  q.reclaim = p.reclaim();
  q.preempt_within_project = p.preempt_within_project();
  if (p.has_weight()) q.weight = p.weight();
  return q;
}

v1::Quota QuotaToProto(const Quota& q) {
  v1::Quota p;
  p.set_project(q.project);
  if (q.gpus) p.set_gpus(*q.gpus);
  if (q.cpu) p.set_cpu(*q.cpu);
  if (q.memory_mb) p.set_memory_mb(*q.memory_mb);
  if (q.max_running_jobs) p.set_max_running_jobs(*q.max_running_jobs);
  p.set_cohort(q.cohort);
  if (q.has_borrowing_limit) *p.mutable_borrowing_limit() = ToProto(q.borrowing_limit);
  p.set_queueing_strategy(q.queueing_strategy);
  if (q.starvation_limit) {
    const int64_t seconds = absl::ToInt64Seconds(*q.starvation_limit);
    p.mutable_starvation_limit()->set_seconds(seconds);
    p.mutable_starvation_limit()->set_nanos(static_cast<int32_t>(
        absl::ToInt64Nanoseconds(*q.starvation_limit - absl::Seconds(seconds))));
  }
  p.set_run_as_user(q.run_as_user);
  p.set_reclaim(q.reclaim);
  p.set_preempt_within_project(q.preempt_within_project);
  if (q.weight) p.set_weight(*q.weight);
  return p;
}

// --- Nodes -------------------------------------------------------------------------------------

namespace {

// NodeStatus's unset times and durations: the epoch and zero.
google::protobuf::Timestamp NodeTimeToProto(absl::Time t) {
  return t == absl::UnixEpoch() ? google::protobuf::Timestamp() : ToProtoTime(t);
}

google::protobuf::Duration NodeDurationToProto(absl::Duration d) {
  google::protobuf::Duration out;
  const int64_t seconds = absl::ToInt64Seconds(d);  // toward zero, as nanos keep d's sign
  out.set_seconds(seconds);
  out.set_nanos(static_cast<int32_t>(absl::ToInt64Nanoseconds(d - absl::Seconds(seconds))));
  return out;
}

absl::Duration NodeDurationFromProto(const google::protobuf::Duration& d) {
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

}  // namespace

v1::Node ToProto(const NodeStatus& s) {
  v1::Node out;
  out.set_state(s.state);
  out.set_health(s.health);
  out.set_health_description(s.health_description);
  out.set_state_reason(s.state_reason);
  if (s.state_time != absl::UnixEpoch()) *out.mutable_state_time() = ToProtoTime(s.state_time);
  out.set_cordoned(s.cordoned);
  out.set_flapping(s.flapping);
  for (absl::Time t : s.isolation_times) *out.add_isolation_times() = ToProtoTime(t);
  out.mutable_checks()->Assign(s.checks.begin(), s.checks.end());
  for (const auto& [key, value] : s.config) (*out.mutable_config())[key] = value;
  out.set_agent_version(s.agent_version);
  if (s.drain_deadline != absl::ZeroDuration()) {
    *out.mutable_drain_deadline() = NodeDurationToProto(s.drain_deadline);
  }
  out.mutable_gpu_devices()->Assign(s.gpu_devices.begin(), s.gpu_devices.end());
  out.set_certificate_fingerprint(s.certificate_fingerprint);
  if (s.certificate_expire_time != absl::UnixEpoch()) {
    *out.mutable_certificate_expire_time() = ToProtoTime(s.certificate_expire_time);
  }
  out.mutable_revoked_certificates()->Assign(s.revoked_certificates.begin(),
                                             s.revoked_certificates.end());
  out.set_ignored_reports(s.ignored_reports);
  if (s.maintenance.has_value()) *out.mutable_maintenance() = *s.maintenance;
  if (s.agent_maintenance.has_value()) *out.mutable_agent_maintenance() = *s.agent_maintenance;
  return out;
}

NodeStatus NodeStatusFromProto(const v1::Node& p) {
  NodeStatus s;
  s.state = p.state();
  s.health = p.health();
  s.health_description = p.health_description();
  s.state_reason = p.state_reason();
  if (p.has_state_time()) s.state_time = FromProtoTime(p.state_time());
  s.cordoned = p.cordoned();
  s.flapping = p.flapping();
  for (const google::protobuf::Timestamp& t : p.isolation_times()) {
    s.isolation_times.push_back(FromProtoTime(t));
  }
  s.checks.assign(p.checks().begin(), p.checks().end());
  s.config.insert(p.config().begin(), p.config().end());
  s.agent_version = p.agent_version();
  if (p.has_drain_deadline()) s.drain_deadline = NodeDurationFromProto(p.drain_deadline());
  s.gpu_devices.assign(p.gpu_devices().begin(), p.gpu_devices().end());
  s.certificate_fingerprint = p.certificate_fingerprint();
  if (p.has_certificate_expire_time()) {
    s.certificate_expire_time = FromProtoTime(p.certificate_expire_time());
  }
  s.revoked_certificates.assign(p.revoked_certificates().begin(), p.revoked_certificates().end());
  s.ignored_reports = p.ignored_reports();
  if (p.has_maintenance()) s.maintenance = p.maintenance();
  if (p.has_agent_maintenance()) s.agent_maintenance = p.agent_maintenance();
  return s;
}

v1::Node ToProto(const Node& n) {
  v1::Node out = ToProto(n.status);
  out.set_name(n.name);
  out.set_address(n.address);
  out.set_connected(n.connected);
  *out.mutable_capacity() = ToProto(n.capacity);
  *out.mutable_allocatable() = ToProto(n.allocatable);
  out.mutable_labels()->insert(n.labels.begin(), n.labels.end());
  *out.mutable_last_heartbeat_time() =
      NodeTimeToProto(absl::FromUnixMillis(absl::ToUnixMillis(n.last_heartbeat)));
  *out.mutable_register_time() =
      NodeTimeToProto(absl::FromUnixMillis(absl::ToUnixMillis(n.registered)));
  return out;
}

}  // namespace trainctl::sched
