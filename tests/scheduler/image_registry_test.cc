// A launch whose image registry could not be reached (ReplicaExited.registry_unavailable): class
// CAPACITY, a new attempt after the retry backoff charged to maxCapacityRetries only (never to
// maxJobRetries, maxReplicaRestarts or maxInternalRetries), events that name the registry, and
// the final error once the budget is used up.
#include <catch2/catch.hpp>
#include <string>

#include "absl/strings/match.h"
#include "common/time_util.h"
#include "model/model_proto.h"
#include "scheduler/failure_classifier.h"
#include "scheduler/job_validation.h"
#include "scheduler/retry_engine.h"
#include "tests/scheduler/core_fixture.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace image_registry_test {

using namespace testing;

constexpr char kPullError[] =
    "pulling 127.0.0.1:5000/x:1: registry 127.0.0.1:5000 unreachable: connection refused";

v1::ReplicaExited Unreachable(const std::string& run_id = "") {
  v1::ReplicaExited e;
  e.set_run_id(run_id);
  e.set_launch_failed(true);
  e.set_registry_unavailable(true);
  e.set_launch_error(kPullError);
  return e;
}

// A validated job with defaults (REPLICA scope, chief-0 and worker-0) and its worker-0 on node-a,
// with the budgets used that `edit` sets.
struct Situation {
  v1::Job job;

  Situation() {
    v1::JobSpec spec = ReplicaScope(Spec(1));
    REQUIRE(ValidateJobSpec(spec).ok());
    ApplyDefaults(&spec);
    *job.mutable_spec() = spec;
    const char* names[] = {"chief-0", "worker-0"};
    for (int i = 0; i < 2; ++i) {
      v1::Replica* r = job.add_replicas();
      r->set_name(names[i]);
      r->set_pool(i == 0 ? "chief" : "worker");
      r->set_rank(i);
      r->set_node("node-a");
    }
    job.add_attempts()->set_number(1);
  }
  RetryDecision Decide(const v1::ReplicaExited& exited) {
    const Job domain = *JobFromProto(job);
    Failure f;
    f.report = exited;
    return DecideOnFailure(RetryPolicy::FromSpec(job.spec().scheduling()), domain,
                           domain.replicas[1], f, FromMs(1'000'000));
  }
};

TEST_CASE("registry unavailable: classed CAPACITY, a capacity retry, naming the registry") {
  Situation s;
  const Job domain = *JobFromProto(s.job);
  Failure f;
  f.report = Unreachable();
  const Classification c = Classify(domain.policy, domain.replicas[1], f);
  CHECK(c.failure_class == FailureClass::kCapacity);
  CHECK(c.rule == "default: image registry unavailable");
  CHECK(c.remedy == Remedy::kCapacityRetry);
  CHECK(c.event_type == "ReplicaExited");
  CHECK(c.error.code == absl::StatusCode::kUnavailable);
  CHECK(c.error.message ==
        absl::StrCat("Replica worker-0 could not start: its image registry could not be reached (",
                     kPullError, ")."));
  CHECK(c.explanation == absl::StrCat("Replica worker-0 on node-a could not start: ", kPullError,
                                      " (class CAPACITY, image registry unavailable)"));
  CHECK(c.replica_message ==
        absl::StrCat("could not start: ", kPullError, " (registry unavailable)"));

  // registry_unavailable implies launch_failed; a report without it is no success either.
  Failure alone;
  alone.report.set_registry_unavailable(true);
  alone.report.set_exit_code(0);
  alone.report.set_launch_error(kPullError);
  CHECK(Classify(domain.policy, domain.replicas[1], alone).remedy == Remedy::kCapacityRetry);
  CHECK_FALSE(IsCleanExit(alone.report));
  CHECK(DescribeExit(alone.report) == absl::StrCat("could not start: ", kPullError));
}

TEST_CASE("registry unavailable: retried under maxCapacityRetries, charged to no other budget") {
  Situation s;
  // Every other budget is used up: a registry outage still retries.
  s.job.mutable_budgets_used()->set_job_retries(3);
  s.job.mutable_budgets_used()->set_internal_retries(2);
  s.job.mutable_replicas(1)->set_charged_restarts(5);
  RetryDecision d = s.Decide(Unreachable());
  CHECK(d.action == Decision::kRetryJob);
  CHECK(d.failure_class == FailureClass::kCapacity);
  CHECK(d.budgets_used.capacity_retries == 1);
  CHECK(d.budgets_used.job_retries == 3);
  CHECK(d.budgets_used.internal_retries == 2);
  CHECK(d.charged_restarts == 0);
  CHECK_FALSE(d.charged);
  CHECK(d.delay == absl::Seconds(5));  // retryBackoff's first step
  CHECK(d.job_event_type == "CapacityRetry");
  CHECK(absl::StrContains(d.job_event, "registry 127.0.0.1:5000 unreachable"));
  CHECK(absl::StrContains(d.job_event, "Capacity retry 1 of 3 (maxCapacityRetries) in 5s."));
  CHECK(absl::StrContains(d.explanation,
                          "its image registry could not be reached: retrying the job as attempt 2 "
                          "(maxCapacityRetries 1 of 3 used) in 5s"));

  // The backoff grows with the capacity retries used (stockouts count too: one budget).
  s.job.mutable_budgets_used()->set_capacity_retries(2);
  d = s.Decide(Unreachable());
  CHECK(d.action == Decision::kRetryJob);
  CHECK(d.budgets_used.capacity_retries == 3);
  CHECK(d.delay == absl::Seconds(20));

  // Used up: the job fails, and the error says the registry could not be reached.
  s.job.mutable_budgets_used()->set_capacity_retries(3);
  d = s.Decide(Unreachable());
  CHECK(d.action == Decision::kFailJob);
  CHECK(d.error.code == absl::StatusCode::kUnavailable);
  CHECK(d.error.reason == FailureClass::kCapacity);
  CHECK(d.error.message ==
        absl::StrCat("Replica worker-0 could not start: its image registry could not be reached (",
                     kPullError,
                     "). It could not be reached through 3 capacity retries (maxCapacityRetries "
                     "3)."));
  CHECK(d.job_event_type == "CapacityExhausted");
  CHECK(d.job_event == d.error.message);
  CHECK(absl::StrContains(d.explanation, "and maxCapacityRetries (3) is used up: failing the job"));
}

TEST_CASE("registry unavailable in the core: a new attempt after the backoff, then the end") {
  Fixture f;
  v1::JobSpec spec = Spec(0);
  spec.mutable_scheduling()->set_max_capacity_retries(1);
  std::string id;
  std::vector<v1::LaunchReplica> launches = f.SubmitAndPlace(spec, &id);
  REQUIRE(launches.size() == 1);

  Effects failed;
  f.core.ReplicaExited(f.NodeOf(launches[0]), Unreachable(launches[0].run_id()), FromMs(++f.now),
                       &failed);
  v1::Job job = f.Job(id);
  CHECK(job.state() == v1::JOB_STATE_QUEUED);
  CHECK(job.budgets_used().capacity_retries() == 1);
  CHECK(job.budgets_used().job_retries() == 0);
  CHECK(job.budgets_used().internal_retries() == 0);
  CHECK(job.attempts(0).failure_class() == "CAPACITY");
  CHECK(HasEvent(failed, "CapacityRetry", "registry 127.0.0.1:5000 unreachable"));
  CHECK(HasEvent(failed, "ReplicaExited", "image registry unavailable"));

  // Not before the backoff (5s) ends.
  Effects early;
  f.core.Tick(FromMs(f.now + 1'000), &early);
  f.core.Schedule(FromMs(f.now + 1'000), &early);
  CHECK(Launches(early).empty());
  f.now += 6'000;
  Effects again;
  f.core.Tick(FromMs(f.now), &again);
  f.core.Schedule(FromMs(f.now), &again);
  launches = Launches(again);
  REQUIRE(launches.size() == 1);
  CHECK(f.Job(id).attempts_size() == 2);

  // The registry is still down and the budget (1) is used up: the job fails, saying so.
  Effects last;
  f.core.ReplicaExited(f.NodeOf(launches[0]), Unreachable(launches[0].run_id()), FromMs(++f.now),
                       &last);
  job = f.Job(id);
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK(absl::StrContains(job.error().message(), "its image registry could not be reached"));
  CHECK(absl::StrContains(job.error().message(), "maxCapacityRetries 1"));
  CHECK(HasEvent(last, "CapacityExhausted", "registry 127.0.0.1:5000 unreachable"));
}

}  // namespace image_registry_test
}  // namespace trainctl::sched
