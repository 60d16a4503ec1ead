#include "cli/describe_view.h"

#include <catch2/catch.hpp>

#include "common/time_util.h"

namespace trainctl::cli {
namespace {

constexpr int64_t kNowMs = 1767225600000;  // 2026-01-01T00:00:00Z
constexpr int64_t kMinuteMs = 60 * 1000;

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
        "ID:           j-1\n"
        "Name:         train\n"
        "Project:      vision\n"
        "Priority:     5\n"
        "State:        RUNNING\n"
        "Created:      2025-12-31T23:50:00Z (10m ago)\n"
        "Started:      2025-12-31T23:51:00Z (9m ago)\n"
        "Checkpoints:  /ckpt/j-1\n"
        "\n"
        "Replicas:\n"
        "  NAME       RANK   NODE     STATE     RESTARTS   EXIT                 MESSAGE\n"
        "  chief-0    0      node-a   RUNNING   0          -                    started\n"
        "  worker-0   1      node-b   RUNNING   1          signal 9 (SIGKILL)   restarted after "
        "signal 9\n"
        "\n"
        "Attempts:\n"
        "  NUMBER   STATE     NODES           STARTED                ENDED                  "
        "REASON\n"
        "  1        FAILED    node-a,node-c   2025-12-31T23:51:00Z   2025-12-31T23:55:00Z   "
        "node node-c disconnected\n"
        "  2        RUNNING   node-a,node-b   2025-12-31T23:56:00Z   -\n");
}

TEST_CASE("RenderJobDescription of a queued job shows why it waits and no tables",
          "[describe_view]") {
  v1::Job job;
  job.set_id("j-q");
  job.set_state(v1::JOB_STATE_QUEUED);
  job.set_queue_reason("waiting for 4 GPUs");
  job.mutable_error()->set_message("");
  CHECK(RenderJobDescription(job, kNowMs) ==
        "ID:            j-q\n"
        "Priority:      0\n"
        "State:         QUEUED\n"
        "Queue reason:  waiting for 4 GPUs\n");
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
