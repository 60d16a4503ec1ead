#include "cli/describe_view.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/time_util.h"
#include "tests/cli/view_clock.h"

namespace trainctl::cli {
namespace {

// A job whose first attempt failed on a killed worker and whose second attempt runs.
v1::Job RetriedJob() {
  v1::Job job;
  job.set_id("j-1");
  job.set_display_name("train");
  job.set_project("vision");
  job.set_priority(5);
  job.set_state(v1::JOB_STATE_RUNNING);
  *job.mutable_create_time() = MsToTimestamp(kNowMs - 10 * kMinuteMs);
  *job.mutable_start_time() = MsToTimestamp(kNowMs - 9 * kMinuteMs);
  job.set_checkpoint_dir("/ckpt/j-1");
  v1::Replica* chief = job.add_replicas();
  chief->set_name("chief-0");
  chief->set_node("node-a");
  chief->set_state(v1::REPLICA_STATE_RUNNING);
  chief->set_message("started");
  v1::Replica* worker = job.add_replicas();
  worker->set_name("worker-0");
  worker->set_rank(1);
  worker->set_node("node-b");
  worker->set_state(v1::REPLICA_STATE_RUNNING);
  worker->set_restart_count(1);
  worker->set_charged_restarts(1);
  worker->set_signal(9);
  worker->set_message("restarted after signal 9");
  v1::Attempt* first = job.add_attempts();
  first->set_number(1);
  first->set_state(v1::JOB_STATE_FAILED);
  first->add_nodes("node-a");
  first->add_nodes("node-c");
  *first->mutable_start_time() = MsToTimestamp(kNowMs - 9 * kMinuteMs);
  *first->mutable_end_time() = MsToTimestamp(kNowMs - 5 * kMinuteMs);
  first->set_reason("node node-c disconnected");
  v1::Attempt* second = job.add_attempts();
  second->set_number(2);
  second->set_state(v1::JOB_STATE_RUNNING);
  second->add_nodes("node-a");
  second->add_nodes("node-b");
  *second->mutable_start_time() = MsToTimestamp(kNowMs - 4 * kMinuteMs);
  return job;
}

TEST_CASE("RenderJobDescription shows the summary, replicas and attempts", "[describe_view]") {
  CHECK(RenderJobDescription(RetriedJob(), kNowMs) ==
        "ID:             j-1\n"
        "Name:           train\n"
        "Project:        vision\n"
        "Priority:       5\n"
        "State:          RUNNING\n"
        "Created:        2025-12-31T23:50:00Z (10m ago)\n"
        "Started:        2025-12-31T23:51:00Z (9m ago)\n"
        "Checkpoints:    /ckpt/j-1\n"
        "Retry budgets:  redispatches 0/3 used\n"
        "Host faults:    re-dispatch the job to other hosts, up to 3 times "
        "(faultTolerance.jobRetryNum 3, the default)\n"
        "\n"
        "Replicas:\n"
        "  NAME       RANK   NODE     STATE     RESTARTS   EXIT                 MESSAGE\n"
        "  chief-0    0      node-a   RUNNING   0          -                    started\n"
        "  worker-0   1      node-b   RUNNING   1          signal 9 (SIGKILL)   restarted after "
        "signal 9\n"
        "\n"
        "Attempts:\n"
        "  NUMBER   STATE     STARTED                ENDED                  REASON\n"
        "  1        FAILED    2025-12-31T23:51:00Z   2025-12-31T23:55:00Z   node node-c "
        "disconnected\n"
        "  2        RUNNING   2025-12-31T23:56:00Z   -\n");
}

// A job that ran out of memory on its second attempt, after a lost replica cost it an internal
// retry; worker-0 was restarted twice in place, once without charge.
v1::Job OomJob() {
  v1::Job job;
  job.set_id("j-oom");
  job.set_state(v1::JOB_STATE_FAILED);
  v1::Scheduling* s = job.mutable_spec()->mutable_scheduling();
  s->set_max_replica_restarts(5);
  s->set_max_job_retries(3);
  s->set_max_internal_retries(2);
  s->set_max_capacity_retries(3);
  job.mutable_budgets_used()->set_internal_retries(1);
  v1::JobError* error = job.mutable_error();
  error->set_code(8);
  error->set_reason("OUT_OF_MEMORY");
  error->set_message(
      "Replica worker-0 ran out of memory and exited with a non-zero status of 137.");
  error->set_replica("worker-0");
  error->set_node("node-b");
  error->set_output_tail("step 1200 loss 0.41\ntorch.cuda.OutOfMemoryError: CUDA out of memory\n");
  v1::Replica* worker = job.add_replicas();
  worker->set_name("worker-0");
  worker->set_node("node-b");
  worker->set_state(v1::REPLICA_STATE_FAILED);
  worker->set_restart_count(2);
  worker->set_charged_restarts(1);
  worker->set_exit_code(137);
  worker->set_oom_killed(true);
  worker->set_message("ran out of memory (OUT_OF_MEMORY)");
  for (int number : {1, 2}) {
    v1::Attempt* a = job.add_attempts();
    a->set_number(number);
    a->set_state(v1::JOB_STATE_FAILED);
    *a->mutable_start_time() = MsToTimestamp(kNowMs - (30 - 10 * number) * kMinuteMs);
    *a->mutable_end_time() = MsToTimestamp(kNowMs - (25 - 10 * number) * kMinuteMs);
    a->set_failure_class(number == 1 ? "INTERNAL" : "OUT_OF_MEMORY");
    a->set_matched_rule(number == 1 ? "default: internal error" : "default: out of memory");
    a->set_replica("worker-0");
    a->set_node(number == 1 ? "node-c" : "node-b");
    a->set_decision(number == 1 ? "RETRY_JOB" : "FAIL_JOB");
    a->mutable_budgets_left()->set_job_retries(3);
    a->mutable_budgets_left()->set_internal_retries(1);
    a->mutable_budgets_left()->set_capacity_retries(3);
    a->mutable_budgets_left()->set_redispatches(3);
    a->set_reason(number == 1 ? "Internal error occurred for the current attempt."
                              : "Replica worker-0 ran out of memory.");
  }
  return job;
}

TEST_CASE("RenderJobDescription tells why a job failed and what was decided", "[describe_view]") {
  CHECK(RenderJobDescription(OomJob(), kNowMs) ==
        "ID:             j-oom\n"
        "Priority:       0\n"
        "State:          FAILED\n"
        "Error:          Replica worker-0 ran out of memory and exited with a non-zero status "
        "of 137. (code 8)\n"
        "Reason:         OUT_OF_MEMORY\n"
        "Error replica:  worker-0\n"
        "Error node:     node-b\n"
        "Retry budgets:  job retries 0/3 used, internal retries 1/2, capacity retries 0/3, "
        "redispatches 0/3; replica restarts up to 5 per attempt\n"
        "Host faults:    re-dispatch the job to other hosts, up to 3 times "
        "(faultTolerance.jobRetryNum 3, the default)\n"
        "\n"
        "Last output:\n"
        "  step 1200 loss 0.41\n"
        "  torch.cuda.OutOfMemoryError: CUDA out of memory\n"
        "\n"
        "Replicas:\n"
        "  NAME       RANK   NODE     STATE    RESTARTS        EXIT        MESSAGE\n"
        "  worker-0   0      node-b   FAILED   2 (1 charged)   OOM (137)   ran out of memory "
        "(OUT_OF_MEMORY)\n"
        "\n"
        "Attempts:\n"
        "  NUMBER   STATE    STARTED                ENDED                  CLASS           "
        "RULE                      REPLICA    NODE     DECISION    BUDGETS-LEFT"
        "                                        REASON\n"
        "  1        FAILED   2025-12-31T23:40:00Z   2025-12-31T23:45:00Z   INTERNAL        "
        "default: internal error   worker-0   node-c   RETRY_JOB   retries 3, internal 1, "
        "capacity 3, redispatches 3   Internal error occurred for the current attempt.\n"
        "  2        FAILED   2025-12-31T23:50:00Z   2025-12-31T23:55:00Z   OUT_OF_MEMORY   "
        "default: out of memory    worker-0   node-b   FAIL_JOB    retries 3, internal 1, "
        "capacity 3, redispatches 3   Replica worker-0 ran out of memory.\n");
}

TEST_CASE("RenderJobDescription of a job queued for a retry says when it starts",
          "[describe_view]") {
  v1::Job job;
  job.set_id("j-r");
  job.set_state(v1::JOB_STATE_QUEUED);
  job.set_queue_reason("RETRY: attempt 2 starts once its backoff ends");
  *job.mutable_next_attempt_time() = MsToTimestamp(kNowMs + 5000);
  job.mutable_spec()->mutable_scheduling()->set_max_job_retries(3);
  job.mutable_budgets_used()->set_job_retries(1);
  v1::Attempt* first = job.add_attempts();
  first->set_number(1);
  first->set_state(v1::JOB_STATE_FAILED);
  first->set_failure_class("TRANSIENT");
  first->set_decision("RETRY_JOB");
  first->set_reason("worker-0 used up its restarts");
  CHECK(RenderJobDescription(job, kNowMs) ==
        "ID:             j-r\n"
        "Priority:       0\n"
        "State:          QUEUED\n"
        "Queue reason:   RETRY: attempt 2 starts once its backoff ends\n"
        "Next attempt:   in 5s (2026-01-01T00:00:05Z)\n"
        "Retry budgets:  job retries 1/3 used, redispatches 0/3\n"
        "Host faults:    re-dispatch the job to other hosts, up to 3 times "
        "(faultTolerance.jobRetryNum 3, the default)\n"
        "\n"
        "Attempts:\n"
        "  NUMBER   STATE    STARTED   ENDED   CLASS       DECISION    REASON\n"
        "  1        FAILED   -         -       TRANSIENT   RETRY_JOB   worker-0 used up its "
        "restarts\n");
}

TEST_CASE("RenderJobDescription of a GANG job lists its gang restarts and their consequences",
          "[describe_view]") {
  v1::Job job;
  job.set_id("j-g");
  job.set_state(v1::JOB_STATE_FAILED);
  job.mutable_spec()->mutable_scheduling()->set_restart_scope(v1::RESTART_SCOPE_GANG);
  job.set_gang_generation(1);
  job.mutable_error()->set_code(3);
  job.mutable_error()->set_message("Replica chief-0 exited with a non-zero status of 1.");
  job.mutable_error()->set_replica("chief-0");
  job.mutable_error()->add_consequences("worker-0 exited with status 134");
  v1::Attempt* a = job.add_attempts();
  a->set_number(1);
  a->set_state(v1::JOB_STATE_FAILED);
  a->set_failure_class("USER_ERROR");
  a->set_decision("FAIL_JOB");
  a->add_consequences("worker-0 exited with status 134");
  v1::GangRestart* g = a->add_gang_restarts();
  g->set_generation(1);
  g->mutable_cause()->set_replica("worker-0");
  g->mutable_cause()->set_summary("exited with status 134");
  g->mutable_cause()->set_failure_class("TRANSIENT");
  g->mutable_cause()->add_consequences("chief-0 exited with status 1");
  g->set_matched_rule("default: transient exit code 134");
  g->set_charged(true);
  const std::string out = RenderJobDescription(job, kNowMs);
  INFO(out);
  CHECK(out.find("Restart scope:  GANG: a restartable failure restarts every replica together "
                 "(generation 1 now)\n") != std::string::npos);
  CHECK(out.find("Consequences:   worker-0 exited with status 134\n") != std::string::npos);
  CHECK(out.find("CONSEQUENCES") != std::string::npos);
  CHECK(out.find("Gang restarts:\n") != std::string::npos);
  CHECK(out.find("worker-0 exited with status 134   TRANSIENT   default: transient exit code 134"
                 "   yes       chief-0 exited with status 1") != std::string::npos);
}

TEST_CASE("RenderJobDescription of a queued job shows why it waits and no tables",
          "[describe_view]") {
  v1::Job job;
  job.set_id("j-q");
  job.set_state(v1::JOB_STATE_QUEUED);
  job.set_queue_reason("waiting for 4 GPUs");
  job.mutable_error()->set_message("");
  CHECK(RenderJobDescription(job, kNowMs) ==
        "ID:             j-q\n"
        "Priority:       0\n"
        "State:          QUEUED\n"
        "Queue reason:   waiting for 4 GPUs\n"
        "Retry budgets:  redispatches 0/3 used\n"
        "Host faults:    re-dispatch the job to other hosts, up to 3 times "
        "(faultTolerance.jobRetryNum 3, the default)\n");
}

TEST_CASE("RenderJobDescription of a queued job lists what it waits for", "[describe_view]") {
  v1::Job job;
  job.set_id("j-q");
  job.set_project("team-a");
  job.set_state(v1::JOB_STATE_QUEUED);
  job.mutable_queue_status()->set_position(1);
  job.mutable_queue_status()->add_blockers()->set_message("NO_NODES: no node is connected");
  CHECK(RenderJobDescription(job, kNowMs) ==
        "ID:             j-q\n"
        "Project:        team-a\n"
        "Priority:       0\n"
        "State:          QUEUED\n"
        "Position:       1 in team-a (first in line)\n"
        "Retry budgets:  redispatches 0/3 used\n"
        "Host faults:    re-dispatch the job to other hosts, up to 3 times "
        "(faultTolerance.jobRetryNum 3, the default)\n"
        "\n"
        "Waiting for:\n"
        "  NO_NODES: no node is connected\n");
}

TEST_CASE("RetryBudgetsText shows what is used of each budget the spec limits", "[describe_view]") {
  struct Row {
    const char* scheduling;  // what the spec sets
    v1::Budgets used;
    const char* want;
  };
  v1::Budgets none;
  v1::Budgets some;
  some.set_job_retries(1);
  some.set_capacity_retries(2);
  v1::Budgets redispatched;
  redispatched.set_redispatches(2);
  for (const Row& row : std::vector<Row>{
           {"all", none,
            "job retries 0/3 used, internal retries 0/2, capacity retries 0/3, redispatches 0/1; "
            "replica restarts up to 5 per attempt"},
           {"all", some,
            "job retries 1/3 used, internal retries 0/2, capacity retries 2/3, redispatches 0/1; "
            "replica restarts up to 5 per attempt"},
           {"never", none,
            "job retries 0/3 used, internal retries 0/2, capacity retries 0/3, redispatches 0/1; "
            "no replica restarts (restartPolicy NEVER)"},
           {"restarts", none, "redispatches 0/3 used; replica restarts up to 5 per attempt"},
           // An unset limit shows only what is used of it; jobRetryNum defaults to 3.
           {"none", some, "job retries 1 used, capacity retries 2, redispatches 0/3"},
           {"none", none, "redispatches 0/3 used"},
           {"none", redispatched, "redispatches 2/3 used"},
           {"no redispatch", none, "redispatches 0/0 used"},
       }) {
    INFO(row.scheduling);
    v1::Job job;
    v1::Scheduling* s = job.mutable_spec()->mutable_scheduling();
    const std::string which = row.scheduling;
    if (which == "all" || which == "never") {
      s->set_max_job_retries(3);
      s->set_max_internal_retries(2);
      s->set_max_capacity_retries(3);
      job.mutable_spec()->mutable_fault_tolerance()->set_job_retry_num(1);
    }
    if (which == "no redispatch")
      job.mutable_spec()->mutable_fault_tolerance()->set_job_retry_num(0);
    if (which != "none" && which != "no redispatch") s->set_max_replica_restarts(5);
    if (which == "never") s->set_restart_policy(v1::RESTART_POLICY_NEVER);
    *job.mutable_budgets_used() = row.used;
    CHECK(RetryBudgetsText(job) == row.want);
  }
}

TEST_CASE("RenderJobDescription shows each replica's port, and the primary's rendezvous port",
          "[describe_view]") {
  v1::Job job = RetriedJob();
  job.mutable_replicas(0)->set_port(20001);
  job.mutable_replicas(0)->set_rendezvous_port(20000);
  job.mutable_replicas(1)->set_port(20417);
  v1::Replica* pending = job.add_replicas();  // not placed: no node, no port
  pending->set_name("worker-1");
  pending->set_rank(2);
  pending->set_state(v1::REPLICA_STATE_PENDING);
  CHECK_THAT(
      RenderJobDescription(job, kNowMs),
      Catch::Contains(
          "Replicas:\n"
          "  NAME       RANK   NODE     PORT                       STATE     RESTARTS   EXIT    "
          "             MESSAGE\n"
          "  chief-0    0      node-a   20001 (rendezvous 20000)   RUNNING   0          -       "
          "             started\n"
          "  worker-0   1      node-b   20417                      RUNNING   1          signal 9 "
          "(SIGKILL)   restarted after signal 9\n"
          "  worker-1   2      -        -                          PENDING   0          -\n"));
}

TEST_CASE("ReplicaPortText", "[describe_view]") {
  v1::Replica r;
  CHECK(ReplicaPortText(r).empty());
  r.set_port(20417);
  CHECK(ReplicaPortText(r) == "20417");
  r.set_rendezvous_port(20416);
  CHECK(ReplicaPortText(r) == "20417 (rendezvous 20416)");
}

TEST_CASE("FaultToleranceText says what a host fault does and why", "[describe_view]") {
  v1::Job job;
  CHECK(JobRetryNum(job) == 3);
  CHECK(FaultToleranceText(job) ==
        "re-dispatch the job to other hosts, up to 3 times (faultTolerance.jobRetryNum 3, the "
        "default)");
  job.mutable_spec()->mutable_fault_tolerance()->set_job_retry_num(1);
  CHECK(FaultToleranceText(job) ==
        "re-dispatch the job to other hosts, up to 1 time (faultTolerance.jobRetryNum 1)");
  job.mutable_spec()->mutable_fault_tolerance()->set_job_retry_num(0);
  CHECK(JobRetryNum(job) == 0);
  CHECK(FaultToleranceText(job) == "fail the job (faultTolerance.jobRetryNum 0)");
}

TEST_CASE("RenderJobDescription shows how often replicas moved and why one moves",
          "[describe_view]") {
  v1::Job job = RetriedJob();
  job.mutable_spec()->mutable_fault_tolerance()->set_job_retry_num(2);
  job.mutable_budgets_used()->set_redispatches(1);
  job.mutable_attempts(0)->mutable_budgets_left()->set_redispatches(1);
  v1::Replica* chief = job.mutable_replicas(0);
  chief->set_moves(2);
  chief->set_restart_count(2);
  v1::Replica* worker = job.mutable_replicas(1);
  worker->set_state(v1::REPLICA_STATE_STOPPING);
  worker->set_message("stopping");
  worker->set_move_reason("node-b drained: kernel upgrade");
  worker->set_moves(1);
  worker->set_restart_count(2);
  const std::string text = RenderJobDescription(job, kNowMs);
  CHECK_THAT(text, Catch::Contains("Retry budgets:  redispatches 1/2 used\n"
                                   "Host faults:    re-dispatch the job to other hosts, up to 2 "
                                   "times (faultTolerance.jobRetryNum 2)\n"));
  // Moves are restarts that were never charged.
  CHECK_THAT(
      text, Catch::Contains(
                "Replicas:\n"
                "  NAME       RANK   NODE     STATE      RESTARTS        MOVES   EXIT              "
                "   MESSAGE\n"
                "  chief-0    0      node-a   RUNNING    2 (0 charged)   2       -                 "
                "   started\n"
                "  worker-0   1      node-b   STOPPING   2 (1 charged)   1       signal 9 (SIGKILL)"
                "   stopping; moving to another node: node-b drained: kernel upgrade\n"));
  CHECK_THAT(text, Catch::Contains("retries 0, internal 0, capacity 0, redispatches 1"));
}

TEST_CASE("BudgetsLeftText is empty until the attempt was charged", "[describe_view]") {
  v1::Attempt attempt;
  CHECK(BudgetsLeftText(attempt) == "");
  attempt.mutable_budgets_left()->set_job_retries(2);
  CHECK(BudgetsLeftText(attempt) == "retries 2, internal 0, capacity 0, redispatches 0");
  attempt.mutable_budgets_left()->set_redispatches(3);
  CHECK(BudgetsLeftText(attempt) == "retries 2, internal 0, capacity 0, redispatches 3");
}

TEST_CASE("ReplicaRestartsText notes restarts that were not charged", "[describe_view]") {
  struct Row {
    int restarts;
    int charged;
    const char* want;
  };
  for (const Row& row : std::vector<Row>{
           {0, 0, "0"}, {3, 3, "3"}, {3, 2, "3 (2 charged)"}, {4, 0, "4 (0 charged)"}}) {
    v1::Replica replica;
    replica.set_restart_count(row.restarts);
    replica.set_charged_restarts(row.charged);
    CHECK(ReplicaRestartsText(replica) == row.want);
  }
}

TEST_CASE("ReplicaNoteText says when a restarting replica restarts, why one moves, and a straggler",
          "[describe_view]") {
  struct Row {
    v1::ReplicaState state;
    const char* message;
    int64_t next_start_ms;  // 0: unset
    const char* want;
    const char* move_reason = "";
  };
  for (const Row& row : std::vector<Row>{
           {v1::REPLICA_STATE_RUNNING, "running on node-a", 0, "running on node-a"},
           // Only a RESTARTING replica has a restart to wait for.
           {v1::REPLICA_STATE_RUNNING, "running on node-a", kNowMs + 4000, "running on node-a"},
           {v1::REPLICA_STATE_RESTARTING, "exited with status 6 (TRANSIENT)", kNowMs + 4000,
            "exited with status 6 (TRANSIENT); restarts in 4s"},
           // Rounded up: never "in 0s".
           {v1::REPLICA_STATE_RESTARTING, "", kNowMs + 1, "restarts in 1s"},
           {v1::REPLICA_STATE_RESTARTING, "", kNowMs + 3 * kMinuteMs, "restarts in 3m"},
           {v1::REPLICA_STATE_RESTARTING, "hung", kNowMs - 1000, "hung; restarts now"},
           {v1::REPLICA_STATE_RESTARTING, "exited", 0, "exited"},
           {v1::REPLICA_STATE_STOPPING, "", 0, "moving to another node: node-a lost",
            "node-a lost"},
           {v1::REPLICA_STATE_STOPPING, "stopping", 0,
            "stopping; moving to another node: node-a drained", "node-a drained"},
           // The server's note may say it already.
           {v1::REPLICA_STATE_STOPPING, "stopping to move: node-a drained", 0,
            "stopping to move: node-a drained", "node-a drained"},
       }) {
    v1::Replica replica;
    replica.set_state(row.state);
    replica.set_message(row.message);
    replica.set_move_reason(row.move_reason);
    if (row.next_start_ms > 0)
      *replica.mutable_next_start_time() = MsToTimestamp(row.next_start_ms);
    CHECK(ReplicaNoteText(replica, kNowMs) == row.want);
  }
  v1::Replica slow;
  slow.set_state(v1::REPLICA_STATE_RUNNING);
  slow.set_message("running on node-c");
  slow.set_straggler("2 steps/s over the last 5m, the gang's median 8 steps/s (below 0.7 of it)");
  CHECK(ReplicaNoteText(slow, kNowMs) ==
        "running on node-c; straggler: 2 steps/s over the last 5m, the gang's median 8 steps/s "
        "(below 0.7 of it)");
}

TEST_CASE("OutputTailText shows output as a terminal would", "[describe_view]") {
  struct Row {
    const char* tail;
    const char* want;
  };
  for (const Row& row : std::vector<Row>{
           {"", ""},
           {"a\nb\n\n", "a\nb"},
           {"a\r\nb\r\n", "a\nb"},
           // Progress bars redraw the line: the last state shows.
           {"10%\r50%\r100%\ndone\n", "100%\ndone"},
           {"\x1b[31mred\x1b[0m\tok\n", " [31mred [0m\tok"},
       }) {
    INFO(row.tail);
    CHECK(OutputTailText(row.tail) == row.want);
  }
}

TEST_CASE("RenderEventsSection shows ages, oldest first", "[describe_view]") {
  google::protobuf::RepeatedPtrField<v1::Event> events;
  CHECK(RenderEventsSection(events, kNowMs) == "Events:  <none>\n");

  v1::Event* queued = events.Add();
  *queued->mutable_time() = MsToTimestamp(kNowMs - 10 * kMinuteMs);
  queued->set_type("JobQueued");
  queued->set_reason("submitted");
  v1::Event* started = events.Add();
  *started->mutable_time() = MsToTimestamp(kNowMs - 42000);
  started->set_type("ReplicaStarted");
  started->set_replica("worker-0");
  started->set_node("node-b");
  started->set_reason("pid 4321");
  CHECK(RenderEventsSection(events, kNowMs) ==
        "Events:\n"
        "  AGE   TYPE             REPLICA    NODE     REASON\n"
        "  10m   JobQueued        -          -        submitted\n"
        "  42s   ReplicaStarted   worker-0   node-b   pid 4321\n");

  events.RemoveLast();
  CHECK(RenderEventsSection(events, kNowMs) ==
        "Events:\n"
        "  AGE   TYPE        REASON\n"
        "  10m   JobQueued   submitted\n");
}

}  // namespace
}  // namespace trainctl::cli
