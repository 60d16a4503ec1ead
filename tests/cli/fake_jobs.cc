#include "tests/cli/fake_jobs.h"

#include "absl/strings/str_cat.h"
#include "common/array_ids.h"
#include "common/time_util.h"
#include "tests/cli/view_clock.h"

namespace trainctl::cli {
namespace {}  // namespace

v1::Job DescribedJob() {
  v1::Job job;
  job.set_id("j-described");
  job.set_display_name("resnet");
  job.set_project("vision");
  job.set_priority(10);
  job.set_state(v1::JOB_STATE_FAILED);
  v1::Scheduling* scheduling = job.mutable_spec()->mutable_scheduling();
  scheduling->set_max_replica_restarts(5);
  scheduling->set_max_job_retries(3);
  scheduling->set_max_internal_retries(2);
  scheduling->set_max_capacity_retries(3);
  job.mutable_budgets_used()->set_internal_retries(1);
  v1::JobError* error = job.mutable_error();
  error->set_code(8);
  error->set_reason("OUT_OF_MEMORY");
  error->set_message(
      "Replica worker-0 ran out of memory and exited with a non-zero status of 137.");
  error->set_replica("worker-0");
  error->set_node("node-b");
  error->set_output_tail("step 1200 loss 0.41\ntorch.cuda.OutOfMemoryError: CUDA out of memory\n");
  job.set_checkpoint_dir("/ckpt/j-described");
  v1::Replica* chief = job.add_replicas();
  chief->set_name("chief-0");
  chief->set_node("node-a");
  chief->set_state(v1::REPLICA_STATE_STOPPED);
  chief->set_signal(15);
  chief->set_message("stopped: job ended");
  v1::Replica* worker = job.add_replicas();
  worker->set_name("worker-0");
  worker->set_rank(1);
  worker->set_node("node-b");
  worker->set_state(v1::REPLICA_STATE_FAILED);
  worker->set_restart_count(2);
  worker->set_charged_restarts(1);
  worker->set_signal(9);
  worker->set_oom_killed(true);
  worker->set_message("ran out of memory (OUT_OF_MEMORY)");
  const int64_t start_ms = 1767225600000;  // 2026-01-01T00:00:00Z
  for (int number : {1, 2}) {
    v1::Attempt* attempt = job.add_attempts();
    attempt->set_number(number);
    attempt->set_state(v1::JOB_STATE_FAILED);
    attempt->add_nodes("node-a");
    attempt->add_nodes(number == 1 ? "node-c" : "node-b");
    *attempt->mutable_start_time() = MsToTimestamp(start_ms + (number - 1) * 10 * kMinuteMs);
    *attempt->mutable_end_time() = MsToTimestamp(start_ms + (number * 10 - 5) * kMinuteMs);
    attempt->set_reason(number == 1 ? "node-c disconnected" : "worker-0 ran out of memory");
    attempt->set_failure_class(number == 1 ? "INTERNAL" : "OUT_OF_MEMORY");
    attempt->set_matched_rule(number == 1 ? "default: internal error" : "default: out of memory");
    attempt->set_replica("worker-0");
    attempt->set_node(number == 1 ? "node-c" : "node-b");
    attempt->set_decision(number == 1 ? "RETRY_JOB" : "FAIL_JOB");
    attempt->mutable_budgets_left()->set_job_retries(3);
    attempt->mutable_budgets_left()->set_internal_retries(1);
    attempt->mutable_budgets_left()->set_capacity_retries(3);
    attempt->mutable_budgets_left()->set_redispatches(3);
  }
  *job.mutable_create_time() = MsToTimestamp(start_ms - kMinuteMs);
  return job;
}

v1::Job RetryingJob(int64_t now_ms) {
  v1::Job job;
  job.set_id("j-retrying");
  job.set_state(v1::JOB_STATE_QUEUED);
  job.set_queue_reason(
      "RETRY: attempt 2 starts once attempt 1's replicas have stopped and its backoff ends");
  *job.mutable_next_attempt_time() = MsToTimestamp(now_ms + 5000);
  job.mutable_spec()->mutable_scheduling()->set_max_job_retries(3);
  job.mutable_budgets_used()->set_job_retries(1);
  v1::Replica* worker = job.add_replicas();
  worker->set_name("worker-0");
  worker->set_node("node-a");
  worker->set_state(v1::REPLICA_STATE_RESTARTING);
  worker->set_restart_count(1);
  worker->set_charged_restarts(1);
  worker->set_exit_code(6);
  worker->set_message("exited with status 6 (TRANSIENT)");
  *worker->mutable_next_start_time() = MsToTimestamp(now_ms + 4000);
  return job;
}

v1::Job WaitingJob(int64_t now_ms) {
  v1::Job job;
  job.set_id("j-waiting");
  job.set_display_name("llm-finetune");
  job.set_project("team-a");
  job.set_state(v1::JOB_STATE_QUEUED);
  job.set_queue_reason("QUOTA: project team-a needs 8 gpus, 4 of 8 in use by 1 job");
  *job.mutable_create_time() = MsToTimestamp(now_ms - 90 * 1000);
  *job.mutable_queue_time() = MsToTimestamp(now_ms - 90 * 1000);
  v1::QueueStatus* qs = job.mutable_queue_status();
  qs->set_position(13);
  for (int i = 1; i <= 10; ++i) qs->add_jobs_ahead(absl::StrCat("j-a", i));
  qs->set_jobs_ahead_count(12);
  v1::Blocker* quota = qs->add_blockers();
  quota->set_kind("QUOTA");
  quota->set_resource("gpus");
  quota->set_message("QUOTA: project team-a needs 8 gpus, 4 of 8 in use by 1 job");
  v1::Blocker* priority = qs->add_blockers();
  priority->set_kind("PRIORITY");
  priority->set_jobs(12);
  priority->set_message("PRIORITY: 12 jobs ahead in team-a");
  v1::Replica* chief = job.add_replicas();
  chief->set_name("chief-0");
  chief->set_state(v1::REPLICA_STATE_PENDING);
  return job;
}

absl::StatusOr<std::vector<v1::Job>> FakeArrayElements(v1::Job* array) {
  absl::StatusOr<std::vector<int32_t>> indices = ParseArrayIndices(array->spec().array().indices());
  if (!indices.ok()) return indices.status();
  const int32_t count = static_cast<int32_t>(indices->size());
  const int32_t parallelism = array->spec().array().parallelism();
  array->clear_replicas();
  array->mutable_array()->set_count(count);
  array->mutable_array()->set_waiting(count);
  std::vector<v1::Job> elements;
  for (int32_t index : *indices) {
    v1::Job& element = elements.emplace_back();
    element.set_id(ElementIdOf(array->id(), index));
    element.set_display_name(absl::StrCat(array->display_name(), "-", index));
    element.set_project(array->project());
    element.set_state(v1::JOB_STATE_QUEUED);
    *element.mutable_spec() = array->spec();
    element.mutable_spec()->clear_array();
    element.mutable_element()->set_array(array->id());
    element.mutable_element()->set_index(index);
    element.mutable_element()->set_count(count);
    const std::string reason =
        parallelism > 0 ? absl::StrCat("ARRAY_LIMIT: 0 of ", parallelism,
                                       " elements admitted (parallelism ", parallelism, ")")
                        : "ARRAY_LIMIT: waiting for the array to start it";
    element.set_queue_reason(reason);
    v1::Blocker* blocker = element.mutable_queue_status()->add_blockers();
    blocker->set_kind("ARRAY_LIMIT");
    blocker->set_message(reason);
  }
  return elements;
}

}  // namespace trainctl::cli
