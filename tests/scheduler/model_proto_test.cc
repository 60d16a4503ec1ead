// The one mapping between the core's model and trainctl.v1 (model/model_proto.h): a stored
// job comes back field for field, and the names of classes and decisions are the historic words.
#include "model/model_proto.h"

#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "tests/common/proto_fill.h"

namespace trainctl::sched {
namespace {

using trainctl::testing::Differences;
using trainctl::testing::FillEveryField;

// A message's bytes with its maps in key order, so that equal messages compare equal.
std::string DeterministicBytes(const google::protobuf::Message& m) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    m.SerializeToCodedStream(&coded);
  }
  return out;
}

TEST_CASE("a job with every field set maps to the model and back unchanged") {
  v1::Job job;
  // Job.queue_status is computed when read (QueueStatusOf) and never mapped. A job array's
  // status is derived from its spec's indices and its index lists (job_arrays_test.cc maps it).
  FillEveryField(
      &job, {"trainctl.v1.Job.queue_status", "trainctl.v1.JobSpec.array", "trainctl.v1.Job.array"});
  // Fields that hold an enum's name or value must hold one the model knows.
  job.mutable_error()->set_reason("OUT_OF_MEMORY");
  const char* classes[] = {"TRANSIENT", "HOST_FAULT"};
  const char* decisions[] = {"RETRY_JOB", "REDISPATCH"};
  REQUIRE(job.attempts_size() == 2);
  for (int i = 0; i < job.attempts_size(); ++i) {
    job.mutable_attempts(i)->set_failure_class(classes[i]);
    job.mutable_attempts(i)->set_decision(decisions[i]);
    for (v1::GangRestart& g : *job.mutable_attempts(i)->mutable_gang_restarts()) {
      g.mutable_cause()->set_failure_class("HUNG");
    }
  }
  job.mutable_root_cause()->set_failure_class("INTERNAL");
  const v1::MoveCause causes[] = {v1::MOVE_CAUSE_LOST, v1::MOVE_CAUSE_NODE_UNAVAILABLE};
  REQUIRE(job.replicas_size() == 2);
  for (int i = 0; i < job.replicas_size(); ++i) job.mutable_replicas(i)->set_move_cause(causes[i]);

  absl::StatusOr<Job> model = JobFromProto(job);
  REQUIRE(model.ok());
  const v1::Job back = ToProto(*model);
  INFO(Differences(job, back));
  CHECK(Differences(job, back).empty());
}

TEST_CASE("JobFromProto derives each replica's need from its pool and the resolved policy") {
  v1::Job job;
  v1::WorkerPool* pool = job.mutable_spec()->add_worker_pools();
  pool->set_name("worker");
  pool->mutable_resources()->set_cpu(2.5);
  pool->mutable_resources()->set_memory_mb(512);
  pool->mutable_resources()->set_gpus(1);
  job.mutable_spec()->mutable_fault_tolerance()->set_job_retry_num(2);
  job.add_replicas()->set_pool("worker");
  job.add_replicas()->set_pool("gone");  // a pool the spec does not have: needs nothing

  absl::StatusOr<Job> model = JobFromProto(job);
  REQUIRE(model.ok());
  CHECK(model->replicas[0].need.cpu == 2.5);
  CHECK(model->replicas[0].need.memory_mb == 512);
  CHECK(model->replicas[0].need.gpus == 1);
  CHECK(model->replicas[1].need.cpu == 0);
  CHECK(model->policy.max_redispatches == 2);
}

TEST_CASE("every failure class and decision round-trips through its historic name") {
  struct ClassRow {
    FailureClass value;
    const char* name;
  };
  const ClassRow classes[] = {
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
  for (const ClassRow& row : classes) {
    INFO(row.name);
    CHECK(FailureClassName(row.value) == row.name);
    absl::StatusOr<FailureClass> parsed = ParseFailureClass(row.name);
    REQUIRE(parsed.ok());
    CHECK(*parsed == row.value);
  }

  struct DecisionRow {
    Decision value;
    const char* name;
  };
  // The stored ones (Attempt.decision) are the historic words; the others only appear in
  // messages but must round-trip too.
  const DecisionRow decisions[] = {
      {Decision::kNone, ""},
      {Decision::kRetryJob, "RETRY_JOB"},
      {Decision::kFailJob, "FAIL_JOB"},
      {Decision::kRedispatch, "REDISPATCH"},
      {Decision::kContinue, "CONTINUE"},
      {Decision::kSucceedJob, "SUCCEED_JOB"},
      {Decision::kRestartReplica, "RESTART_REPLICA"},
      {Decision::kMoveReplica, "MOVE_REPLICA"},
      {Decision::kPreempt, "PREEMPT"},
  };
  for (const DecisionRow& row : decisions) {
    INFO(row.name);
    CHECK(DecisionName(row.value) == row.name);
    absl::StatusOr<Decision> parsed = ParseDecision(row.name);
    REQUIRE(parsed.ok());
    CHECK(*parsed == row.value);
  }
}

TEST_CASE("an unknown stored name is DATA_LOSS, wherever it is stored") {
  CHECK(ParseFailureClass("transient").status().code() == absl::StatusCode::kDataLoss);
  CHECK(ParseFailureClass("PREEMPTION").status().code() == absl::StatusCode::kDataLoss);
  CHECK(ParseDecision("RETRY").status().code() == absl::StatusCode::kDataLoss);
  CHECK(ParseDecision("PREEMPT_JOB").status().message() == "unknown decision \"PREEMPT_JOB\"");

  v1::Job bad_error;
  bad_error.mutable_error()->set_reason("NOT_A_CLASS");
  CHECK(JobFromProto(bad_error).status().code() == absl::StatusCode::kDataLoss);

  v1::Job bad_class;
  bad_class.add_attempts()->set_failure_class("NOT_A_CLASS");
  CHECK(JobFromProto(bad_class).status().code() == absl::StatusCode::kDataLoss);

  v1::Job bad_decision;
  bad_decision.add_attempts()->set_decision("NOT_A_DECISION");
  CHECK(JobFromProto(bad_decision).status().code() == absl::StatusCode::kDataLoss);
}

TEST_CASE("an unset Timestamp is an unset optional, and maps back unset") {
  v1::Job job;
  // What every stored job has: its times of creation and update, and its spec.
  *job.mutable_create_time() = ToProtoTime(absl::FromUnixMillis(1'700'000'000'123));
  *job.mutable_update_time() = job.create_time();
  job.mutable_spec()->set_display_name("test");
  v1::Replica* r = job.add_replicas();
  r->set_name("chief-0");
  job.add_attempts()->set_number(1);

  absl::StatusOr<Job> model = JobFromProto(job);
  REQUIRE(model.ok());
  CHECK_FALSE(model->start_time.has_value());
  CHECK_FALSE(model->end_time.has_value());
  CHECK_FALSE(model->next_attempt_time.has_value());
  CHECK_FALSE(model->queue_time.has_value());
  CHECK_FALSE(model->replicas[0].start_time.has_value());
  CHECK_FALSE(model->replicas[0].end_time.has_value());
  CHECK_FALSE(model->replicas[0].last_progress_time.has_value());
  CHECK_FALSE(model->replicas[0].next_start_time.has_value());
  CHECK_FALSE(model->replicas[0].exit_code.has_value());
  CHECK_FALSE(model->replicas[0].signal.has_value());
  CHECK_FALSE(model->attempts[0].start_time.has_value());
  CHECK_FALSE(model->attempts[0].end_time.has_value());
  CHECK_FALSE(model->attempts[0].budgets_left.has_value());

  const v1::Job back = ToProto(*model);
  CHECK_FALSE(back.has_start_time());
  CHECK_FALSE(back.has_end_time());
  CHECK_FALSE(back.has_next_attempt_time());
  CHECK_FALSE(back.has_queue_time());
  CHECK_FALSE(back.has_error());         // no error: unset, not an empty message
  CHECK_FALSE(back.has_budgets_used());  // nothing used: unset
  CHECK_FALSE(back.replicas(0).has_start_time());
  CHECK_FALSE(back.replicas(0).has_exit_code());
  CHECK_FALSE(back.attempts(0).has_end_time());
  CHECK_FALSE(back.attempts(0).has_budgets_left());
  INFO(Differences(job, back));
  CHECK(Differences(job, back).empty());
}

TEST_CASE("ToProtoTime keeps nanoseconds, before the epoch too") {
  const absl::Time times[] = {
      absl::FromUnixNanos(1'700'000'000'123'456'789),
      absl::FromUnixNanos(-1'500'000'000),  // 1.5s before the epoch: seconds -2, nanos 5e8
      absl::UnixEpoch(),
  };
  for (absl::Time t : times) {
    const google::protobuf::Timestamp p = ToProtoTime(t);
    CHECK(p.nanos() >= 0);
    CHECK(p.nanos() < 1'000'000'000);
    CHECK(FromProtoTime(p) == t);
  }
}

TEST_CASE("a replica moving in a database from before move causes were stored") {
  v1::Job job;
  v1::Replica* moving = job.add_replicas();
  moving->set_move_reason("node node-a is LOST and disconnected");  // no move_cause
  job.add_replicas();  // neither a reason nor a cause: not moving
  absl::StatusOr<Job> model = JobFromProto(job);
  REQUIRE(model.ok());
  // It moves, for a reason that charges a re-dispatch like any host trouble.
  CHECK(model->replicas[0].move_cause == MoveCause::kNodeUnavailable);
  CHECK(model->replicas[0].moving());
  CHECK(model->replicas[1].move_cause == MoveCause::kNone);
  CHECK_FALSE(model->replicas[1].moving());
}

TEST_CASE("every move cause maps to its own proto value and back") {
  const MoveCause causes[] = {MoveCause::kDrain, MoveCause::kLost, MoveCause::kUnhealthy,
                              MoveCause::kShutdown, MoveCause::kNodeUnavailable};
  std::set<int> seen;
  for (MoveCause c : causes) {
    Replica r;
    r.move_cause = c;
    r.move_reason = "why";
    const v1::Replica p = ToProto(r);
    CHECK(p.move_cause() != v1::MOVE_CAUSE_UNSPECIFIED);
    CHECK(seen.insert(p.move_cause()).second);
    v1::Job job;
    *job.add_replicas() = p;
    absl::StatusOr<Job> back = JobFromProto(job);
    REQUIRE(back.ok());
    CHECK(back->replicas[0].move_cause == c);
  }
}

TEST_CASE("a quota with every field set maps to the model and back unchanged") {
  v1::Quota quota;
  FillEveryField(&quota);
  const Quota model = QuotaFromProto(quota);
  CHECK(model.project == quota.project());
  CHECK(model.gpus == quota.gpus());
  CHECK(model.cpu == quota.cpu());
  CHECK(model.memory_mb == quota.memory_mb());
  CHECK(model.max_running_jobs == quota.max_running_jobs());
  CHECK(model.cohort == quota.cohort());
  CHECK(model.has_borrowing_limit);
  CHECK(model.borrowing_limit.cpu == quota.borrowing_limit().cpu());
  CHECK(model.borrowing_limit.memory_mb == quota.borrowing_limit().memory_mb());
  CHECK(model.borrowing_limit.gpus == quota.borrowing_limit().gpus());
  CHECK(model.queueing_strategy == quota.queueing_strategy());
  CHECK(model.starvation_limit == absl::Seconds(quota.starvation_limit().seconds()) +
                                      absl::Nanoseconds(quota.starvation_limit().nanos()));
  CHECK(model.run_as_user == quota.run_as_user());
  CHECK(model.reclaim == quota.reclaim());
  CHECK(model.preempt_within_project == quota.preempt_within_project());
  const v1::Quota back = QuotaToProto(model);
  INFO(Differences(quota, back));
  CHECK(Differences(quota, back).empty());
}

TEST_CASE("a quota's unset limits stay unset, and its zeros stay set") {
  const Quota open = QuotaFromProto(v1::Quota());
  CHECK_FALSE(open.gpus.has_value());
  CHECK_FALSE(open.cpu.has_value());
  CHECK_FALSE(open.memory_mb.has_value());
  CHECK_FALSE(open.max_running_jobs.has_value());
  CHECK_FALSE(open.has_borrowing_limit);
  CHECK_FALSE(open.starvation_limit.has_value());
  CHECK(Differences(v1::Quota(), QuotaToProto(open)).empty());

  v1::Quota zeros;
  zeros.set_project("team-a");
  zeros.set_gpus(0);
  zeros.set_cpu(0);
  zeros.set_memory_mb(0);
  zeros.set_max_running_jobs(0);
  zeros.mutable_borrowing_limit();
  zeros.mutable_starvation_limit();
  const Quota model = QuotaFromProto(zeros);
  CHECK(model.gpus == 0);
  CHECK(model.max_running_jobs == 0);
  CHECK(model.has_borrowing_limit);
  CHECK(model.starvation_limit == absl::ZeroDuration());
  const v1::Quota back = QuotaToProto(model);
  INFO(Differences(zeros, back));
  CHECK(Differences(zeros, back).empty());
  // The stored row is the same bytes.
  CHECK(back.SerializeAsString() == zeros.SerializeAsString());
}

TEST_CASE("a node's status with every field set maps to NodeStatus and back unchanged") {
  v1::Node node;
  FillEveryField(&node);
  // The fields before `state` are the node's own (Node), not its status; `reservation` is the
  // admission queue's (reservation.h), added to the node's view by the core.
  for (const char* field :
       {"name", "address", "connected", "capacity", "allocatable", "free", "labels", "replicas",
        "last_heartbeat_time", "register_time", "reservation"}) {
    node.GetReflection()->ClearField(&node, node.GetDescriptor()->FindFieldByName(field));
  }
  const NodeStatus status = NodeStatusFromProto(node);
  CHECK(status.state == node.state());
  CHECK(status.health == node.health());
  CHECK(status.health_description == node.health_description());
  CHECK(status.state_reason == node.state_reason());
  CHECK(status.state_time == FromProtoTime(node.state_time()));
  CHECK(status.cordoned == node.cordoned());
  CHECK(status.flapping == node.flapping());
  REQUIRE(static_cast<int>(status.isolation_times.size()) == node.isolation_times_size());
  for (int i = 0; i < node.isolation_times_size(); ++i) {
    CHECK(status.isolation_times[i] == FromProtoTime(node.isolation_times(i)));
  }
  REQUIRE(static_cast<int>(status.checks.size()) == node.checks_size());
  for (int i = 0; i < node.checks_size(); ++i) {
    CHECK(Differences(status.checks[i], node.checks(i)) == "");
  }
  CHECK(status.config ==
        std::map<std::string, std::string>(node.config().begin(), node.config().end()));
  CHECK(status.agent_version == node.agent_version());
  CHECK(status.drain_deadline == absl::Seconds(node.drain_deadline().seconds()) +
                                     absl::Nanoseconds(node.drain_deadline().nanos()));
  REQUIRE(static_cast<int>(status.gpu_devices.size()) == node.gpu_devices_size());
  for (int i = 0; i < node.gpu_devices_size(); ++i) {
    CHECK(Differences(status.gpu_devices[i], node.gpu_devices(i)) == "");
  }
  CHECK(status.certificate_fingerprint == node.certificate_fingerprint());
  CHECK(status.certificate_expire_time == FromProtoTime(node.certificate_expire_time()));
  CHECK(status.revoked_certificates == std::vector<std::string>(node.revoked_certificates().begin(),
                                                                node.revoked_certificates().end()));
  CHECK(status.ignored_reports == node.ignored_reports());
  REQUIRE(status.maintenance.has_value());
  CHECK(Differences(*status.maintenance, node.maintenance()) == "");
  REQUIRE(status.agent_maintenance.has_value());
  CHECK(Differences(*status.agent_maintenance, node.agent_maintenance()) == "");

  const v1::Node back = ToProto(status);
  INFO(Differences(node, back));
  CHECK(Differences(node, back) == "");
  // The persisted blob reads the same: what a store wrote before reads back to the same bytes.
  CHECK(DeterministicBytes(back) == DeterministicBytes(node));
}

TEST_CASE("a node's unset times and durations are the epoch and zero, and map back unset") {
  v1::Node node;
  node.set_state(v1::NODE_STATE_READY);
  const NodeStatus status = NodeStatusFromProto(node);
  CHECK(status.state_time == absl::UnixEpoch());
  CHECK(status.certificate_expire_time == absl::UnixEpoch());
  CHECK(status.drain_deadline == absl::ZeroDuration());
  CHECK_FALSE(status.maintenance.has_value());
  CHECK_FALSE(status.agent_maintenance.has_value());
  const v1::Node back = ToProto(status);
  CHECK_FALSE(back.has_state_time());
  CHECK_FALSE(back.has_certificate_expire_time());
  CHECK_FALSE(back.has_drain_deadline());
  CHECK_FALSE(back.has_maintenance());
  CHECK_FALSE(back.has_agent_maintenance());
  CHECK(DeterministicBytes(back) == DeterministicBytes(node));
}

}  // namespace
}  // namespace trainctl::sched
