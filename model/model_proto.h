// The one mapping between the core's model (model/model.h) and the API's messages
// (trainctl.v1). The services answer callers with these, the reconcile loop hands the store the
// messages it persists, and a restart maps the stored messages back.
//
// The names of failure classes and decisions appear as strings here only; they are the words the
// API and the database have always used ("TRANSIENT", "RETRY_JOB", ...), so existing databases
// and outputs read the same.
//
//   v1::Job proto = ToProto(job);                     // for a reply, a snapshot or a row
//   absl::StatusOr<Job> back = JobFromProto(proto);    // after a restart
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "model/model.h"

namespace trainctl::sched {

// The job with every attempt. Job.queue_status is computed when read and left unset here.
v1::Job ToProto(const Job& job);
v1::Attempt ToProto(const Attempt& attempt);
v1::Replica ToProto(const Replica& replica);
v1::JobError ToProto(const JobError& error);
v1::Budgets ToProto(const Budgets& budgets);
v1::Resources ToProto(const Res& res);
v1::RootCause ToProto(const RootCause& cause);

// Maps a stored job back and derives what is not stored (the resolved policy, each replica's
// need). DATA_LOSS when a stored name (failure class, decision) is not one this build knows.
absl::StatusOr<Job> JobFromProto(const v1::Job& proto);
absl::StatusOr<Attempt> AttemptFromProto(const v1::Attempt& proto);
absl::StatusOr<JobError> ErrorFromProto(const v1::JobError& proto);
Budgets BudgetsFromProto(const v1::Budgets& proto);
absl::StatusOr<RootCause> RootCauseFromProto(const v1::RootCause& proto);

// "TRANSIENT", "USER_ERROR", ... ("" for kNone).
std::string FailureClassName(FailureClass c);
// "RETRY_JOB", "REDISPATCH", "FAIL_JOB", ... ("" for kNone).
std::string DecisionName(Decision d);
absl::StatusOr<FailureClass> ParseFailureClass(const std::string& name);
absl::StatusOr<Decision> ParseDecision(const std::string& name);

// A node's status as the API's Node, the form it is persisted in (the nodes table's status
// blob): only the fields from `state` on are set. An unset Timestamp or Duration is the epoch or
// zero in NodeStatus, and maps back unset.
v1::Node ToProto(const NodeStatus& status);
NodeStatus NodeStatusFromProto(const v1::Node& proto);
// The node's own facts (name, address, connection, sizes, labels, registration and heartbeat
// times to the millisecond) with its status. What its replicas hold (free, replicas, the GPUs'
// holders) is the node book's to add.
v1::Node ToProto(const Node& node);

google::protobuf::Timestamp ToProtoTime(absl::Time t);
absl::Time FromProtoTime(const google::protobuf::Timestamp& t);

// A quota and back: QuotaToProto(QuotaFromProto(q)) equals q, field by field, for every quota
// ValidateQuota accepts (a starvation limit is kept as an absl::Duration).
Quota QuotaFromProto(const v1::Quota& proto);
v1::Quota QuotaToProto(const Quota& quota);

}  // namespace trainctl::sched
