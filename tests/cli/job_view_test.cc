#include "cli/job_view.h"

#include <catch2/catch.hpp>
#include <optional>

#include "common/spec_parse.h"
#include "common/time_util.h"
#include "tests/cli/view_clock.h"

namespace trainctl::cli {
namespace {

v1::Job MakeJob(const std::string& id, v1::JobState state, int replicas, int running,
                int64_t age_ms) {
  v1::Job job;
  job.set_id(id);
  job.set_display_name("job " + id);
  job.set_project("default");
  job.set_state(state);
  *job.mutable_create_time() = MsToTimestamp(kNowMs - age_ms);
  for (int i = 0; i < replicas; ++i) {
    v1::Replica* r = job.add_replicas();
    r->set_name("worker-" + std::to_string(i));
    r->set_rank(i);
    r->set_state(i < running ? v1::REPLICA_STATE_RUNNING : v1::REPLICA_STATE_PENDING);
  }
  return job;
}

TEST_CASE("RenderJobList shows one row per job", "[job_view]") {
  std::vector<v1::Job> jobs = {MakeJob("j-aaaaaaaaaa", v1::JOB_STATE_RUNNING, 4, 3, 42000),
                               MakeJob("j-b", v1::JOB_STATE_QUEUED, 1, 0, 3 * 3600 * 1000)};
  CHECK(RenderJobList(jobs, kNowMs) ==
        "ID             NAME               PROJECT   STATE     AGE   REPLICAS\n"
        "j-aaaaaaaaaa   job j-aaaaaaaaaa   default   RUNNING   42s   3/4\n"
        "j-b            job j-b            default   QUEUED    3h    0/1\n");
}

TEST_CASE("ReplicaSummary counts running replicas", "[job_view]") {
  CHECK(ReplicaSummary(MakeJob("j", v1::JOB_STATE_RUNNING, 4, 3, 0)) == "3/4");
  CHECK(ReplicaSummary(v1::Job()) == "0/0");
}

TEST_CASE("RenderJobDetails shows fields, replicas and attempts", "[job_view]") {
  v1::Job job = MakeJob("j-1", v1::JOB_STATE_FAILED, 2, 0, 300000);
  job.mutable_error()->set_code(3);
  job.mutable_error()->set_message("Replica worker-1 exited with a non-zero status of 3.");
  *job.mutable_end_time() = MsToTimestamp(kNowMs - 60000);
  job.mutable_replicas(0)->set_node("node-a");
  job.mutable_replicas(0)->set_state(v1::REPLICA_STATE_STOPPED);
  job.mutable_replicas(0)->set_signal(15);
  job.mutable_replicas(1)->set_node("node-b");
  job.mutable_replicas(1)->set_state(v1::REPLICA_STATE_FAILED);
  job.mutable_replicas(1)->set_exit_code(3);
  job.mutable_replicas(1)->set_restart_count(2);
  job.mutable_replicas(1)->set_pid(4321);
  v1::Attempt* attempt = job.add_attempts();
  attempt->set_number(1);
  attempt->set_state(v1::JOB_STATE_FAILED);
  attempt->set_reason("worker-1 failed");

  CHECK(RenderJobDetails(job, kNowMs) ==
        "ID:        j-1\n"
        "Name:      job j-1\n"
        "Project:   default\n"
        "Priority:  0\n"
        "State:     FAILED\n"
        "Error:     Replica worker-1 exited with a non-zero status of 3. (code 3)\n"
        "Created:   2025-12-31T23:55:00Z (5m ago)\n"
        "Ended:     2025-12-31T23:59:00Z (60s ago)\n"
        "\n"
        "Replicas:\n"
        "NAME       RANK   NODE     STATE     RESTARTS   EXIT                  PID\n"
        "worker-0   0      node-a   STOPPED   0          signal 15 (SIGTERM)   -\n"
        "worker-1   1      node-b   FAILED    2          3                     4321\n"
        "\n"
        "Attempts:\n"
        "NUMBER   STATE    REASON\n"
        "1        FAILED   worker-1 failed\n");
}

TEST_CASE("RenderJobDetails shows the queue reason of a queued job", "[job_view]") {
  v1::Job job = MakeJob("j-q", v1::JOB_STATE_QUEUED, 0, 0, 1000);
  job.set_queue_reason("waiting for 4 GPUs");
  std::string text = RenderJobDetails(job, kNowMs);
  CHECK_THAT(text, Catch::Contains("Queue reason:  waiting for 4 GPUs\n"));
  CHECK_THAT(text, !Catch::Contains("Replicas:"));
}

TEST_CASE("RenderJobDetails shows each pool's image, and ALWAYS as its pull policy", "[job_view]") {
  v1::Job job = MakeJob("j-i", v1::JOB_STATE_RUNNING, 0, 0, 1000);
  v1::WorkerPool* chief = job.mutable_spec()->add_worker_pools();
  chief->set_name("chief");
  chief->set_image("registry:5000/team/train:1.4");
  chief->set_image_pull_policy(v1::IMAGE_PULL_POLICY_ALWAYS);
  chief->set_image_pull_secret("registry-creds");
  job.mutable_spec()->add_worker_pools()->set_name("host");  // runs on the host: not listed
  v1::WorkerPool* worker = job.mutable_spec()->add_worker_pools();
  worker->set_name("worker");
  const std::string pinned = "team/train@sha256:" + std::string(64, 'f');
  worker->set_image(pinned);
  worker->set_image_pull_policy(v1::IMAGE_PULL_POLICY_IF_NOT_PRESENT);
  CHECK(ImagesText(job.spec()) ==
        "chief: registry:5000/team/train:1.4 (pull ALWAYS), worker: " + pinned);
  CHECK_THAT(RenderJobDetails(job, kNowMs),
             Catch::Contains("\nImages:    chief: registry:5000/team/train:1.4 (pull ALWAYS), "));
  // Without images, no line at all.
  job.mutable_spec()->clear_worker_pools();
  CHECK(ImagesText(job.spec()).empty());
  CHECK_THAT(RenderJobDetails(job, kNowMs), !Catch::Contains("Images"));
}

TEST_CASE("PositionText says where a queued job stands in its project", "[job_view]") {
  v1::Job job = MakeJob("j-q", v1::JOB_STATE_QUEUED, 0, 0, 1000);
  job.set_project("team-a");
  CHECK(PositionText(job) == "");  // no queue status: an older server
  v1::QueueStatus* qs = job.mutable_queue_status();
  qs->set_position(1);
  CHECK(PositionText(job) == "1 in team-a (first in line)");
  qs->set_position(2);
  qs->add_jobs_ahead("j-a");
  qs->set_jobs_ahead_count(1);
  CHECK(PositionText(job) == "2 in team-a (1 job ahead: j-a)");
  qs->set_position(3);
  qs->add_jobs_ahead("j-b");
  qs->set_jobs_ahead_count(2);
  CHECK(PositionText(job) == "3 in team-a (2 jobs ahead: j-a, j-b)");
  qs->set_position(15);
  qs->set_jobs_ahead_count(14);
  CHECK(PositionText(job) == "15 in team-a (14 jobs ahead: j-a, j-b and 12 more)");
  job.set_state(v1::JOB_STATE_RUNNING);
  CHECK(PositionText(job) == "");
}

TEST_CASE("RenderJobDetails lists every blocker of a queued job", "[job_view]") {
  v1::Job job = MakeJob("j-q", v1::JOB_STATE_QUEUED, 1, 0, 1000);
  v1::QueueStatus* qs = job.mutable_queue_status();
  qs->set_position(2);
  qs->add_jobs_ahead("j-a");
  qs->set_jobs_ahead_count(1);
  qs->add_blockers()->set_message("QUOTA: project default needs 8 gpus, 4 of 8 in use by 1 job");
  qs->add_blockers()->set_message("PRIORITY: 1 job ahead in default");
  CHECK(RenderJobDetails(job, kNowMs) ==
        "ID:        j-q\n"
        "Name:      job j-q\n"
        "Project:   default\n"
        "Priority:  0\n"
        "State:     QUEUED\n"
        "Position:  2 in default (1 job ahead: j-a)\n"
        "Created:   2025-12-31T23:59:59Z (1s ago)\n"
        "\n"
        "Waiting for:\n"
        "  QUOTA: project default needs 8 gpus, 4 of 8 in use by 1 job\n"
        "  PRIORITY: 1 job ahead in default\n"
        "\n"
        "Replicas:\n"
        "NAME       RANK   NODE   STATE     RESTARTS   EXIT   PID\n"
        "worker-0   0      -      PENDING   0          -      -\n");
  CHECK(RenderWaitingFor(MakeJob("j-r", v1::JOB_STATE_RUNNING, 0, 0, 0)) == "");
  qs->clear_blockers();
  CHECK(RenderWaitingFor(job) == "");
}

TEST_CASE("RenderJobSummary names the replica and node an error comes from", "[job_view]") {
  v1::Job job = MakeJob("j-1", v1::JOB_STATE_FAILED, 0, 0, 1000);
  job.mutable_error()->set_message("worker-1 was killed");
  job.mutable_error()->set_replica("worker-1");
  job.mutable_error()->set_node("node-b");
  job.set_checkpoint_dir("/ckpt/j-1");
  CHECK(RenderJobSummary(job, kNowMs) ==
        "ID:             j-1\n"
        "Name:           job j-1\n"
        "Project:        default\n"
        "Priority:       0\n"
        "State:          FAILED\n"
        "Error:          worker-1 was killed\n"
        "Error replica:  worker-1\n"
        "Error node:     node-b\n"
        "Created:        2025-12-31T23:59:59Z (1s ago)\n"
        "Checkpoints:    /ckpt/j-1\n");
}

TEST_CASE("get shows an error's reason, replica and node, but not the output", "[job_view]") {
  v1::Job job = MakeJob("j-1", v1::JOB_STATE_FAILED, 1, 0, 1000);
  job.mutable_error()->set_code(8);
  job.mutable_error()->set_reason("OUT_OF_MEMORY");
  job.mutable_error()->set_message("Replica worker-0 ran out of memory.");
  job.mutable_error()->set_replica("worker-0");
  job.mutable_error()->set_node("node-b");
  job.mutable_error()->set_output_tail("CUDA out of memory\n");
  job.mutable_replicas(0)->set_state(v1::REPLICA_STATE_FAILED);
  job.mutable_replicas(0)->set_signal(9);
  job.mutable_replicas(0)->set_oom_killed(true);
  CHECK(RenderJobDetails(job, kNowMs) ==
        "ID:             j-1\n"
        "Name:           job j-1\n"
        "Project:        default\n"
        "Priority:       0\n"
        "State:          FAILED\n"
        "Error:          Replica worker-0 ran out of memory. (code 8)\n"
        "Reason:         OUT_OF_MEMORY\n"
        "Error replica:  worker-0\n"
        "Error node:     node-b\n"
        "Created:        2025-12-31T23:59:59Z (1s ago)\n"
        "\n"
        "Replicas:\n"
        "NAME       RANK   NODE   STATE    RESTARTS   EXIT            PID\n"
        "worker-0   0      -      FAILED   0          OOM (SIGKILL)   -\n");
}

TEST_CASE("RenderJobSummary says when a job queued for a retry starts its next attempt",
          "[job_view]") {
  v1::Job job = MakeJob("j-r", v1::JOB_STATE_QUEUED, 0, 0, 1000);
  job.set_queue_reason("RETRY: attempt 2 starts once its backoff ends");
  *job.mutable_next_attempt_time() = MsToTimestamp(kNowMs + 5000);
  CHECK_THAT(RenderJobSummary(job, kNowMs),
             Catch::Contains("Queue reason:  RETRY: attempt 2 starts once its backoff ends\n"
                             "Next attempt:  in 5s (2026-01-01T00:00:05Z)\n"));
  // Once the backoff is over the job waits for something else; the queue reason says what.
  *job.mutable_next_attempt_time() = MsToTimestamp(kNowMs - 5000);
  CHECK_THAT(RenderJobSummary(job, kNowMs),
             Catch::Contains("Next attempt:  now (2025-12-31T23:59:55Z)\n"));
  // A job that left the queue has no next attempt to wait for.
  job.set_state(v1::JOB_STATE_RUNNING);
  CHECK_THAT(RenderJobSummary(job, kNowMs), !Catch::Contains("Next attempt"));
}

TEST_CASE("ReplicaExitText prefers the signal, named where known", "[job_view]") {
  struct Row {
    std::optional<int> exit_code;
    std::optional<int> signal;
    std::string want;
  };
  for (const Row& row : std::vector<Row>{{std::nullopt, std::nullopt, "-"},
                                         {0, std::nullopt, "0"},
                                         {3, std::nullopt, "3"},
                                         {std::nullopt, 9, "signal 9 (SIGKILL)"},
                                         {137, 9, "signal 9 (SIGKILL)"},
                                         {std::nullopt, 11, "signal 11 (SIGSEGV)"},
                                         {std::nullopt, 99, "signal 99"}}) {
    v1::Replica replica;
    if (row.exit_code) replica.set_exit_code(*row.exit_code);
    if (row.signal) replica.set_signal(*row.signal);
    CHECK(ReplicaExitText(replica) == row.want);
  }
}

TEST_CASE("ReplicaExitText names a process killed for running out of memory", "[job_view]") {
  struct Row {
    std::optional<int> exit_code;
    std::optional<int> signal;
    std::string want;
  };
  for (const Row& row : std::vector<Row>{{137, std::nullopt, "OOM (137)"},
                                         {std::nullopt, 9, "OOM (SIGKILL)"},
                                         {std::nullopt, 99, "OOM (signal 99)"},
                                         {std::nullopt, std::nullopt, "OOM"}}) {
    v1::Replica replica;
    replica.set_oom_killed(true);
    if (row.exit_code) replica.set_exit_code(*row.exit_code);
    if (row.signal) replica.set_signal(*row.signal);
    CHECK(ReplicaExitText(replica) == row.want);
  }
}

TEST_CASE("FormatCountdown rounds up to whole seconds", "[job_view]") {
  struct Row {
    int64_t at_ms;  // 0: unset
    std::string want;
  };
  for (const Row& row : std::vector<Row>{{0, ""},
                                         {kNowMs - 1, "now"},
                                         {kNowMs, "now"},
                                         {kNowMs + 1, "in 1s"},
                                         {kNowMs + 5000, "in 5s"},
                                         {kNowMs + 5001, "in 6s"},
                                         {kNowMs + 10 * 60 * 1000, "in 10m"}}) {
    INFO(row.at_ms - kNowMs);
    CHECK(FormatCountdown(MsToTimestamp(row.at_ms), kNowMs) == row.want);
  }
}

TEST_CASE("FormatTimestamp shows unset times as a dash", "[job_view]") {
  CHECK(FormatTimestamp(MsToTimestamp(kNowMs)) == "2026-01-01T00:00:00Z");
  CHECK(FormatTimestamp(google::protobuf::Timestamp()) == "-");
}

TEST_CASE("JobsToJson wraps the jobs in a jobs list", "[job_view]") {
  CHECK(JobsToJson({}).value() == "{\n \"jobs\": []\n}\n");
  std::string json = JobsToJson({MakeJob("j-1", v1::JOB_STATE_RUNNING, 1, 1, 0),
                                 MakeJob("j-2", v1::JOB_STATE_QUEUED, 0, 0, 0)})
                         .value();
  // It parses back (JSON is YAML) into a ListJobsResponse with both jobs.
  v1::ListJobsResponse response;
  REQUIRE(ParseYamlToMessage(json, &response).ok());
  REQUIRE(response.jobs_size() == 2);
  CHECK(response.jobs(0).id() == "j-1");
  CHECK(response.jobs(0).replicas(0).state() == v1::REPLICA_STATE_RUNNING);
  CHECK(response.jobs(1).state() == v1::JOB_STATE_QUEUED);
  CHECK_THAT(json, Catch::StartsWith("{\n \"jobs\": [\n  {\n   \"id\": \"j-1\",\n"));
  CHECK_THAT(json, Catch::EndsWith("  }\n ]\n}\n"));
}

TEST_CASE("FormatJobList renders yaml as a jobs list", "[job_view]") {
  std::string yaml =
      FormatJobList({MakeJob("j-1", v1::JOB_STATE_RUNNING, 0, 0, 0)}, OutputFormat::kYaml, kNowMs)
          .value();
  CHECK_THAT(yaml, Catch::StartsWith("jobs:\n  - id: j-1\n"));
  CHECK_THAT(yaml, Catch::Contains("    state: JOB_STATE_RUNNING\n"));
}

TEST_CASE("JobStatusLine adds the error message when there is one", "[job_view]") {
  v1::Job job;
  job.set_id("j-1");
  job.set_state(v1::JOB_STATE_SUCCEEDED);
  CHECK(JobStatusLine(job) == "j-1 SUCCEEDED");
  job.set_state(v1::JOB_STATE_FAILED);
  job.mutable_error()->set_message("worker-1 exited with 3");
  CHECK(JobStatusLine(job) == "j-1 FAILED: worker-1 exited with 3");
}

}  // namespace
}  // namespace trainctl::cli
