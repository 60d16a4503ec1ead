// The queue operations' pure helpers (cli/queue_flags.h, cli/queue_view.h): --depends-on in
// Slurm's words, --dependency-policy, update's flags as an UpdateJobRequest, and how `get` and
// `describe` show a held job and a job's dependencies.
#include <catch2/catch.hpp>
#include <string>

#include "absl/strings/match.h"
#include "cli/describe_view.h"
#include "cli/job_view.h"
#include "cli/queue_flags.h"
#include "cli/queue_view.h"
#include "common/time_util.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {
namespace {

TEST_CASE("submit --depends-on maps Slurm's words to conditions and adds to the spec's dependsOn") {
  v1::JobSpec spec;
  spec.add_depends_on()->set_job("j-file");
  REQUIRE(AddDependsOn({"afterok:j-1, AFTERNOTOK:j-2", "afterany:j-3"}, &spec).ok());
  REQUIRE(spec.depends_on_size() == 4);
  CHECK(spec.depends_on(0).job() == "j-file");
  CHECK(spec.depends_on(1).job() == "j-1");
  CHECK(spec.depends_on(1).condition() == v1::DEPENDENCY_CONDITION_SUCCEEDED);
  CHECK(spec.depends_on(2).job() == "j-2");
  CHECK(spec.depends_on(2).condition() == v1::DEPENDENCY_CONDITION_FAILED);
  CHECK(spec.depends_on(3).condition() == v1::DEPENDENCY_CONDITION_ENDED);

  absl::StatusOr<v1::Dependency> word = ParseDependency("afterwards:j-1");
  CHECK(word.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(word.status().message() ==
        "--depends-on takes CONDITION:JOB, CONDITION one of afterok (the job SUCCEEDED), "
        "afternotok (it FAILED) or afterany (it ended), got \"afterwards:j-1\"");
  CHECK(ParseDependency("j-1").status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(ParseDependency("afterok:").status().message() ==
        "--depends-on afterok:: name the job after the colon, e.g. afterok:j-1");
}

TEST_CASE("submit --dependency-policy takes fail or keep-waiting") {
  CHECK(*ParseDependencyPolicy("fail") == v1::DEPENDENCY_POLICY_FAIL);
  CHECK(*ParseDependencyPolicy("Keep_Waiting") == v1::DEPENDENCY_POLICY_KEEP_WAITING);
  absl::StatusOr<v1::DependencyPolicy> bad = ParseDependencyPolicy("wait");
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(bad.status().message(), "--dependency-policy must be fail"));
}

TEST_CASE("update's flags make an UpdateJobRequest with only the changes given") {
  UpdateFlags flags;
  flags.id = "j-1";
  absl::StatusOr<v1::UpdateJobRequest> none = BuildUpdateRequest(flags);
  CHECK(none.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StartsWith(none.status().message(), "update needs at least one change"));

  flags.labels = {"team=vision", "empty="};
  absl::StatusOr<v1::UpdateJobRequest> labels = BuildUpdateRequest(flags);
  REQUIRE(labels.ok());
  CHECK_FALSE(labels->has_priority());
  CHECK_FALSE(labels->has_queue_timeout());
  CHECK(labels->labels().at("team") == "vision");
  CHECK(labels->labels().at("empty").empty());

  flags.priority = "-3";
  flags.queue_timeout = "90m";
  flags.remove_labels = {"old"};
  absl::StatusOr<v1::UpdateJobRequest> all = BuildUpdateRequest(flags);
  REQUIRE(all.ok());
  CHECK(all->has_priority());
  CHECK(all->priority() == -3);
  CHECK(all->queue_timeout().seconds() == 5400);
  CHECK(all->remove_labels(0) == "old");

  UpdateFlags bad;
  bad.id = "j-1";
  bad.labels = {"novalue"};
  CHECK(BuildUpdateRequest(bad).status().message() ==
        "--label must be KEY=VALUE (e.g. team=vision), got \"novalue\"");
  bad.labels.clear();
  bad.remove_labels = {"k=v"};
  CHECK(absl::StartsWith(BuildUpdateRequest(bad).status().message(), "--remove-label must be"));
  bad.remove_labels.clear();
  bad.queue_timeout = "0s";
  CHECK(absl::StartsWith(BuildUpdateRequest(bad).status().message(), "--queue-timeout must be"));
  bad.queue_timeout.clear();
  bad.priority = "1001";
  CHECK(BuildUpdateRequest(bad).status().message() ==
        "--priority must be a whole number from -1000 to 1000, got \"1001\"");
}

v1::Job HeldJob(int64_t held_ms) {
  v1::Job job;
  job.set_id("j-1");
  job.set_state(v1::JOB_STATE_QUEUED);
  job.set_held(true);
  job.set_held_by("alice");
  job.set_hold_reason("dataset not ready");
  *job.mutable_hold_time() = MsToTimestamp(held_ms);
  return job;
}

TEST_CASE("a held job shows who held it, since when and why") {
  const int64_t held = 1'790'000'000'000;
  v1::Job job = HeldJob(held);
  const std::string since = FormatRfc3339(held);
  CHECK(HeldText(job, held + 300'000) ==
        "by alice since " + since + " (5m ago): dataset not ready");
  job.clear_held_by();
  job.clear_hold_reason();
  CHECK(HeldText(job, held + 300'000) == "since " + since + " (5m ago)");
  job.set_held(false);
  CHECK(HeldText(job, held).empty());

  const std::string described = RenderJobDescription(HeldJob(held), held + 60'000);
  INFO(described);
  CHECK(absl::StrContains(described, "\nHeld:"));
  CHECK(absl::StrContains(described, "by alice since " + since + " (60s ago): dataset not ready"));
  CHECK(absl::StrContains(RenderJobSummary(HeldJob(held), held), "dataset not ready"));
  CHECK(HeldLine(HeldJob(held)) == "job j-1 held: dataset not ready");
}

TEST_CASE("a job's dependencies show their condition, their end and whether it was met") {
  v1::Job job;
  job.set_id("j-9");
  v1::Dependency* spec_dep = job.mutable_spec()->add_depends_on();
  spec_dep->set_job("j-1");
  spec_dep->set_condition(v1::DEPENDENCY_CONDITION_FAILED);
  // Before the server sends a status: from the spec.
  CHECK(DependenciesText(job) == "afternotok j-1: waiting");

  v1::DependencyStatus* met = job.add_dependencies();
  met->set_job("j-1");
  met->set_condition(v1::DEPENDENCY_CONDITION_SUCCEEDED);
  met->set_ended(v1::JOB_STATE_SUCCEEDED);
  met->set_met(true);
  v1::DependencyStatus* waiting = job.add_dependencies();
  waiting->set_job("j-2");
  waiting->set_condition(v1::DEPENDENCY_CONDITION_ENDED);
  v1::DependencyStatus* never = job.add_dependencies();
  never->set_job("j-3");
  never->set_ended(v1::JOB_STATE_FAILED);
  never->set_unmet_forever(true);
  const std::string text =
      "afterok j-1: ended SUCCEEDED, met; afterany j-2: waiting; afterok j-3: ended FAILED, "
      "never met";
  CHECK(DependenciesText(job) == text);
  CHECK(absl::StrContains(RenderJobDescription(job, 0), "Dependencies:"));
  CHECK(absl::StrContains(RenderJobDescription(job, 0), text));
  CHECK(DependenciesText(v1::Job()).empty());
  CHECK_FALSE(absl::StrContains(RenderJobSummary(v1::Job(), 0), "Dependencies"));
}

}  // namespace
}  // namespace trainctl::cli
