// Every validation rule of the job spec, one row each, with the exact message a user sees.
#include "scheduler/job_validation.h"

#include <catch2/catch.hpp>
#include <csignal>
#include <functional>
#include <string>
#include <vector>

#include "common/time_util.h"
#include "model/job_policy.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

struct Row {
  const char* what;
  std::function<void(v1::JobSpec*)> mutate;
  const char* message;  // empty: valid
};

TEST_CASE("ValidateJobSpec names the field and the rule") {
  const Row rows[] = {
      {"a valid spec", [](v1::JobSpec*) {}, ""},
      {"no pools", [](v1::JobSpec* s) { s->clear_worker_pools(); },
       "workerPools must hold at least one pool (pool 0 is the primary replica)"},
      {"zero replicas", [](v1::JobSpec* s) { s->mutable_worker_pools(1)->set_replica_count(0); },
       "workerPools[1].replicaCount must be 1..4096, got 0"},
      {"huge replicas",
       [](v1::JobSpec* s) { s->mutable_worker_pools(1)->set_replica_count(100000); },
       "workerPools[1].replicaCount must be 1..4096, got 100000"},
      {"primary pool with 2",
       [](v1::JobSpec* s) { s->mutable_worker_pools(0)->set_replica_count(2); },
       "workerPools[0].replicaCount must be 1: pool 0 holds the primary replica, got 2"},
      {"empty command", [](v1::JobSpec* s) { s->mutable_worker_pools(1)->clear_command(); },
       "workerPools[1].command must name the program to run, e.g. [python3, train.py]"},
      {"negative cpu",
       [](v1::JobSpec* s) { s->mutable_worker_pools(1)->mutable_resources()->set_cpu(-1); },
       "workerPools[1].resources.cpu must be 0..4096 cores, got -1"},
      {"negative memory",
       [](v1::JobSpec* s) { s->mutable_worker_pools(0)->mutable_resources()->set_memory_mb(-5); },
       "workerPools[0].resources.memoryMb must be 0..1073741824, got -5"},
      {"negative gpus",
       [](v1::JobSpec* s) { s->mutable_worker_pools(0)->mutable_resources()->set_gpus(-1); },
       "workerPools[0].resources.gpus must be 0..1024, got -1"},
      {"bad pool name", [](v1::JobSpec* s) { s->mutable_worker_pools(1)->set_name("Work_er"); },
       "workerPools[1].name must be 1..40 characters of a-z, 0-9 and '-', starting and ending "
       "with a letter or digit; got \"Work_er\""},
      {"duplicate pool name", [](v1::JobSpec* s) { s->mutable_worker_pools(1)->set_name("chief"); },
       "workerPools[1].name \"chief\" is used by another pool"},
      {"reserved env",
       [](v1::JobSpec* s) { (*s->mutable_worker_pools(0)->mutable_env())["TRAINCTL_X"] = "1"; },
       "workerPools[0].env[\"TRAINCTL_X\"] uses the reserved prefix TRAINCTL_; trainctl sets "
       "these itself"},
      {"bad env name",
       [](v1::JobSpec* s) { (*s->mutable_worker_pools(0)->mutable_env())["1X"] = "1"; },
       "workerPools[0].env[\"1X\"] is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)"},
      {"secret not in env",
       [](v1::JobSpec* s) {
         (*s->mutable_worker_pools(0)->mutable_env())["DB_PASS"] = "x";
         s->mutable_worker_pools(0)->add_secret_env("DB_PASS");
         s->mutable_worker_pools(0)->add_secret_env("API_KEY");
       },
       "workerPools[0].secretEnv[1] \"API_KEY\" is not a key of workerPools[0].env"},
      {"secret ref",
       [](v1::JobSpec* s) {
         (*s->mutable_worker_pools(0)->mutable_secret_refs())["WANDB_API_KEY"] = "wandb.token-1";
       },
       ""},
      {"secret ref with a bad variable",
       [](v1::JobSpec* s) { (*s->mutable_worker_pools(1)->mutable_secret_refs())["1X"] = "w"; },
       "workerPools[1].secretRefs[\"1X\"] is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)"},
      {"secret ref to a reserved variable",
       [](v1::JobSpec* s) {
         (*s->mutable_worker_pools(0)->mutable_secret_refs())["TRAINCTL_TOKEN"] = "w";
       },
       "workerPools[0].secretRefs[\"TRAINCTL_TOKEN\"] uses the reserved prefix TRAINCTL_; "
       "trainctl sets these itself"},
      {"secret ref also in env",
       [](v1::JobSpec* s) {
         (*s->mutable_worker_pools(0)->mutable_env())["API_KEY"] = "x";
         (*s->mutable_worker_pools(0)->mutable_secret_refs())["API_KEY"] = "api";
       },
       "workerPools[0].secretRefs[\"API_KEY\"] is also set by workerPools[0].env; set it in one "
       "place"},
      {"secret ref with a bad name",
       [](v1::JobSpec* s) { (*s->mutable_worker_pools(0)->mutable_secret_refs())["K"] = "-x"; },
       "workerPools[0].secretRefs[\"K\"] must name a secret: 1 to 253 characters of A-Z, a-z, "
       "0-9, '_', '.' and '-', starting with a letter or digit; got \"-x\""},
      {"a workdir digest", [](v1::JobSpec* s) { s->set_workdir("sha256:" + std::string(64, 'a')); },
       ""},
      {"a workdir that is not a digest", [](v1::JobSpec* s) { s->set_workdir("./src"); },
       "workdir must be an upload's digest, \"sha256:\" and 64 lowercase hex digits (trainctl "
       "submit --workdir DIR uploads one); got \"./src\""},
      {"bad project", [](v1::JobSpec* s) { s->set_project("Team A"); },
       "project must be 1..63 characters of a-z, 0-9 and '-'; got \"Team A\""},
      {"priority", [](v1::JobSpec* s) { s->set_priority(5000); },
       "priority must be -1000..1000, got 5000"},
      {"relative checkpoint dir", [](v1::JobSpec* s) { s->set_checkpoint_dir("ckpt"); },
       "checkpointDir must be an absolute path, got \"ckpt\""},
      {"progress pattern without a step group",
       [](v1::JobSpec* s) { s->mutable_scheduling()->set_progress_pattern("step (\\d+)"); },
       "scheduling.progressPattern must have a group named step, e.g. 'step (?P<step>\\d+)'"},
      {"progress pattern that is no regular expression",
       [](v1::JobSpec* s) { s->mutable_scheduling()->set_progress_pattern("step (?P<step>"); },
       "scheduling.progressPattern must be a regular expression (RE2 syntax), e.g. 'step "
       "(?P<step>\\d+)': missing ): step (?P<step>"},
      {"progress pattern of two lines",
       [](v1::JobSpec* s) { s->mutable_scheduling()->set_progress_pattern("a\n(?P<step>\\d)"); },
       "scheduling.progressPattern must be one line of at most 256 characters, got 14"},
      {"negative timeout",
       [](v1::JobSpec* s) { s->mutable_scheduling()->mutable_timeout()->set_seconds(-1); },
       "scheduling.timeout must be between 0s and 31622400s, got -1s and 0ns"},
      {"expected duration past a year",
       [](v1::JobSpec* s) {
         s->mutable_scheduling()->mutable_expected_duration()->set_seconds(400LL * 86400);
       },
       "scheduling.expectedDuration must be between 0s and 31622400s, got 34560000s and 0ns"},
      {"nanos out of range",
       [](v1::JobSpec* s) { s->mutable_scheduling()->mutable_hang_timeout()->set_nanos(2e9); },
       "scheduling.hangTimeout must be between 0s and 31622400s, got 0s and 2000000000ns"},
      {"preemption grace of two hours",
       [](v1::JobSpec* s) {
         s->mutable_scheduling()->mutable_preemption_grace_period()->set_seconds(7200);
       },
       "scheduling.preemptionGracePeriod must be 0s..1h, got 2h"},
      {"negative preemption grace",
       [](v1::JobSpec* s) {
         s->mutable_scheduling()->mutable_preemption_grace_period()->set_seconds(-5);
       },
       "scheduling.preemptionGracePeriod must be 0s..1h, got -5s and 0ns"},
      {"preemption grace of exactly one hour",
       [](v1::JobSpec* s) {
         s->mutable_scheduling()->mutable_preemption_grace_period()->set_seconds(3600);
       },
       ""},
      {"preemption grace of 0s",
       [](v1::JobSpec* s) { s->mutable_scheduling()->mutable_preemption_grace_period(); }, ""},
      {"unknown preemption signal",
       [](v1::JobSpec* s) { s->mutable_scheduling()->set_preemption_signal("SIGNOPE"); },
       "scheduling.preemptionSignal is not a signal: \"SIGNOPE\"; use a name like SIGTERM or a "
       "number like 15"},
      {"preemption signal by short name",
       [](v1::JobSpec* s) { s->mutable_scheduling()->set_preemption_signal("usr1"); }, ""},
      {"min runtime past a year",
       [](v1::JobSpec* s) {
         s->mutable_scheduling()->mutable_min_runtime()->set_seconds(400LL * 86400);
       },
       "scheduling.minRuntime must be between 0s and 31622400s, got 34560000s and 0ns"},
      {"queue timeout past a year",
       [](v1::JobSpec* s) {
         s->mutable_scheduling()->mutable_queue_timeout()->set_seconds(400LL * 86400);
       },
       "scheduling.queueTimeout must be between 0s and 31622400s, got 34560000s and 0ns"},
      {"backoff nanos out of range",
       [](v1::JobSpec* s) {
         s->mutable_scheduling()->mutable_restart_backoff()->mutable_initial()->set_nanos(-5);
       },
       "scheduling.restartBackoff.initial must be between 0s and 3600s, got 0s and -5ns"},
      {"no display name", [](v1::JobSpec* s) { s->set_display_name(" "); },
       "displayName is required: a name people know the job by, e.g. resnet50-lr3"},
      {"long display name", [](v1::JobSpec* s) { s->set_display_name(std::string(200, 'x')); },
       "displayName must be at most 128 characters, got 200"},
  };
  for (const Row& row : rows) {
    SECTION(row.what) {
      v1::JobSpec spec = testing::Spec(2);
      row.mutate(&spec);
      absl::Status s = ValidateJobSpec(spec);
      if (std::string(row.message).empty()) {
        CHECK(s.ok());
      } else {
        CHECK(s.code() == absl::StatusCode::kInvalidArgument);
        CHECK(s.message() == row.message);
      }
    }
  }
}

TEST_CASE("ApplyDefaults fills project and stop grace period") {
  v1::JobSpec spec = testing::Spec(0);
  ApplyDefaults(&spec);
  CHECK(spec.project() == "default");
  CHECK(spec.scheduling().stop_grace_period().seconds() == 10);
}

TEST_CASE("ApplyDefaults fills the preemption fields", "[job_validation]") {
  v1::JobSpec spec = testing::Spec(0);
  ApplyDefaults(&spec);
  const v1::Scheduling& s = spec.scheduling();
  CHECK(s.has_preemptible());
  CHECK(s.preemptible());
  CHECK(s.has_min_runtime());
  CHECK(DurationToMs(s.min_runtime()) == 0);
  CHECK(s.preemption_signal() == "SIGTERM");
  CHECK(DurationToMs(s.preemption_grace_period()) == 300'000);

  v1::JobSpec mine = testing::Spec(0);
  mine.mutable_scheduling()->set_preemptible(false);
  mine.mutable_scheduling()->set_preemption_signal("SIGUSR1");
  *mine.mutable_scheduling()->mutable_preemption_grace_period() = MsToDuration(30'000);
  *mine.mutable_scheduling()->mutable_min_runtime() = MsToDuration(600'000);
  REQUIRE(ValidateJobSpec(mine).ok());
  ApplyDefaults(&mine);
  CHECK_FALSE(mine.scheduling().preemptible());
  CHECK(mine.scheduling().preemption_signal() == "SIGUSR1");
  CHECK(DurationToMs(mine.scheduling().preemption_grace_period()) == 30'000);
  CHECK(DurationToMs(mine.scheduling().min_runtime()) == 600'000);
}

TEST_CASE("the job policy resolves the preemption fields", "[job_validation]") {
  v1::JobSpec spec = testing::Spec(0);
  ApplyDefaults(&spec);
  RetryPolicy p = RetryPolicy::ForJob(spec);
  CHECK(p.preemptible);
  CHECK(p.min_runtime_ms == 0);
  CHECK(p.preemption_signal == SIGTERM);
  CHECK(p.preemption_grace_ms == 300'000);

  spec.mutable_scheduling()->set_preemptible(false);
  spec.mutable_scheduling()->set_preemption_signal("10");
  *spec.mutable_scheduling()->mutable_preemption_grace_period() = MsToDuration(0);
  *spec.mutable_scheduling()->mutable_min_runtime() = MsToDuration(90'000);
  p = RetryPolicy::ForJob(spec);
  CHECK_FALSE(p.preemptible);
  CHECK(p.preemption_signal == 10);
  CHECK(p.preemption_grace_ms == 0);
  CHECK(p.min_runtime_ms == 90'000);

  // A spec stored before the fields existed (no defaults filled for them).
  v1::Scheduling old;
  RetryPolicy from_old = RetryPolicy::FromSpec(old);
  CHECK(from_old.preemptible);
  CHECK(from_old.preemption_signal == SIGTERM);
  CHECK(from_old.preemption_grace_ms == 300'000);
}

TEST_CASE("a NUL byte anywhere in a spec is refused naming the field", "[job_validation]") {
  struct Row {
    const char* what;
    std::function<void(v1::JobSpec*)> mutate;
    const char* message;
  };
  const std::string nul("a\0b", 3);
  const Row rows[] = {
      {"display name", [&](v1::JobSpec* s) { s->set_display_name(nul); },
       "displayName must not contain NUL bytes"},
      {"an argument", [&](v1::JobSpec* s) { s->mutable_worker_pools(1)->add_args(nul); },
       "workerPools[1].args[0] must not contain NUL bytes"},
      {"an env value",
       [&](v1::JobSpec* s) { (*s->mutable_worker_pools(0)->mutable_env())["MODE"] = nul; },
       "workerPools[0].env[\"MODE\"] must not contain NUL bytes"},
      {"a label key", [&](v1::JobSpec* s) { (*s->mutable_labels())[nul] = "x"; },
       "labels must not contain NUL bytes"},
  };
  for (const Row& row : rows) {
    SECTION(row.what) {
      v1::JobSpec spec = testing::Spec(2);
      row.mutate(&spec);
      absl::Status s = ValidateJobSpec(spec);
      CHECK(s.code() == absl::StatusCode::kInvalidArgument);
      CHECK(std::string(s.message()) == row.message);
    }
  }
}

TEST_CASE("a spec larger than 1 MiB is refused", "[job_validation]") {
  v1::JobSpec spec = testing::Spec(2);
  for (int i = 0; i < 20; ++i) spec.mutable_worker_pools(0)->add_args(std::string(60'000, 'x'));
  absl::Status s = ValidateJobSpec(spec);
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(s.message()),
             Catch::Matches("the job spec is [0-9]+ bytes, at most 1048576 are allowed .*"));
}

TEST_CASE("a job's checkpointDir is made normal and must lie under an allowed root",
          "[job_validation]") {
  const std::vector<std::string> roots = {"/ckpt", "/mnt/shared/"};
  CHECK(CheckpointDirUnder("/ckpt/resnet", roots).value() == "/ckpt/resnet");
  CHECK(CheckpointDirUnder("/ckpt//a/./b/../c/", roots).value() == "/ckpt/a/c");
  CHECK(CheckpointDirUnder("/mnt/shared/run-1", roots).value() == "/mnt/shared/run-1");
  for (const char* bad : {"/etc/x", "/ckpt/../etc/x", "/ckpt", "/ckpt/.", "/ckptx/a", "/"}) {
    INFO(bad);
    absl::StatusOr<std::string> dir = CheckpointDirUnder(bad, roots);
    REQUIRE_FALSE(dir.ok());
    CHECK(std::string(dir.status().message()) ==
          absl::StrCat("checkpointDir must be under one of the allowed roots (/ckpt, "
                       "/mnt/shared/; trainctld --checkpoint-allowed-roots), got \"",
                       bad, "\""));
  }
}

}  // namespace
}  // namespace trainctl::sched
