#include "server/reconcile_loop.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>

#include "common/log_context.h"
#include "common/time_util.h"
#include "model/model_proto.h"
#include "server/agent_registry.h"
#include "server/job_snapshots.h"
#include "server/launch_secrets.h"
#include "server/metrics_daemon.h"

namespace trainctl::server {
namespace {

// How often the core's time limits are checked when nothing else happens.
constexpr int64_t kTickIntervalMs = 500;
// How often a write is tried while writes are refused.
constexpr int64_t kProbeIntervalMs = 1000;

// The calling thread's CPU time so far, in seconds.
double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

ReconcileLoop::ReconcileLoop(std::unique_ptr<sched::Core> core,
                             std::unique_ptr<storage::Store> store, AgentRegistry* registry,
                             JobSnapshots* snapshots, Clock clock)
    : core_(std::move(core)),
      store_(std::move(store)),
      registry_(registry),
      snapshots_(snapshots),
      clock_(std::move(clock)),
      outbox_(registry) {}

ReconcileLoop::~ReconcileLoop() { Stop(); }

void ReconcileLoop::Start() {
  PublishAll();
  outbox_.Start();
  thread_ = std::thread([this] { Run(); });
}

void ReconcileLoop::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (!thread_.joinable()) return;
  thread_.join();
  outbox_.Stop();
  spdlog::info(
      "reconcile loop: {} turns, p50 {:.2f} ms, p90 {:.2f} ms, p99 {:.2f} ms, max {:.2f} ms",
      turns_.count(), turns_.Percentile(50), turns_.Percentile(90), turns_.Percentile(99),
      turns_.max_ms());
  if (admitted_ > 0) {
    const double admitting = deciding_seconds_ + starting_seconds_;
    spdlog::info(
        "admission: {} jobs admitted; the admission passes decided in {:.3f} s ({:.0f} decisions "
        "a second), starting what they admitted (attempts, replicas, launches, events) took "
        "{:.3f} s: {:.0f} jobs decided and started a second, {:.3f} s of the loop thread's CPU "
        "in the passes that admitted any ({:.0f} a CPU second)",
        admitted_, deciding_seconds_, admitted_ / std::max(deciding_seconds_, 1e-9),
        starting_seconds_, admitted_ / std::max(admitting, 1e-9), admitting_cpu_seconds_,
        admitted_ / std::max(admitting_cpu_seconds_, 1e-9));
  }
}

void ReconcileLoop::Post(Work work, Refuse refused) {
  absl::MutexLock lock(&mu_);
  queue_.push_back({std::move(work), std::move(refused), false});
}

void ReconcileLoop::PostRead(Work work, Refuse refused) {
  absl::MutexLock lock(&mu_);
  queue_.push_back({std::move(work), std::move(refused), true});
}

absl::Status ReconcileLoop::write_status() const {
  absl::MutexLock lock(&mu_);
  return write_status_;
}

void ReconcileLoop::SetWriteStatus(absl::Status status) {
  {
    absl::MutexLock lock(&mu_);
    write_status_ = status;
  }
  if (metrics_ != nullptr) metrics_->SetWritesRefused(!status.ok());
  if (write_listener_) write_listener_(status);
}

void ReconcileLoop::Run() {
  for (;;) {
    if (alive_) alive_();
    std::vector<Item> items;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !queue_.empty(); };
      mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(kTickIntervalMs));
      if (stopping_ && queue_.empty()) return;
      items.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
      queue_.clear();
    }
    const auto start = std::chrono::steady_clock::now();
    bool refused = false;
    if (absl::Status refusing = write_status(); !refusing.ok()) {
      ProbeWrites();
      refusing = write_status();
      if (!refusing.ok()) {
        RunRefusingTurn(std::move(items), refusing);
        refused = true;
      }
    }
    if (!refused) RunTurn(std::move(items));
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!refused) turns_.Record(ms);
    if (metrics_ != nullptr) metrics_->OnTurn(ms / 1000, WallNowMs());
  }
}

void ReconcileLoop::RunTurn(std::vector<Item> items) {
  sched::Effects fx;
  std::vector<std::function<void()>> after;
  TurnWrites writes;
  const int64_t now_ms = clock_();
  Turn turn{*core_, *store_, absl::FromUnixMillis(now_ms), &fx, &after, &writes};
  // Fair share: the time since the last turn is charged to what replicas held in it.
  core_->AccrueUsage(turn.now);
  for (Item& item : items) item.work(turn);
  if (retention_ms_ > 0 && now_ms >= next_retention_ms_) ExpireJobs(turn);
  if (now_ms - last_tick_ms_ >= kTickIntervalMs) {
    core_->Tick(turn.now, &fx);
    last_tick_ms_ = now_ms;
    if (metrics_ != nullptr) metrics_->OnStragglers(core_->StragglersByProject());
  }
  {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = ThreadCpuSeconds();
    core_->SettleDependencies(turn.now, &fx);
    const sched::AdmissionPlan plan = core_->PlanAdmissions(turn.now);
    const auto decided = std::chrono::steady_clock::now();
    const size_t admitted = core_->StartAdmitted(plan, turn.now, &fx);
    const double deciding = std::chrono::duration<double>(decided - start).count();
    deciding_seconds_ += deciding;
    if (metrics_ != nullptr) metrics_->OnAdmissionPass(deciding);
    if (admitted > 0) {
      admitted_ += admitted;
      starting_seconds_ +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - decided).count();
      admitting_cpu_seconds_ += ThreadCpuSeconds() - cpu_start;
    }
  }

  storage::Batch batch;
  for (const std::string& id : fx.jobs) batch.jobs.push_back(sched::ToProto(*core_->FindJob(id)));
  for (const auto& [job_id, number] : fx.attempts) {
    const sched::Job* job = core_->FindJob(job_id);
    for (const sched::Attempt& a : job->attempts) {
      if (a.number == number) batch.attempts.push_back({job_id, sched::ToProto(a)});
    }
  }
  batch.runs = std::move(fx.runs);
  batch.stacks = std::move(fx.stacks);
  for (const std::string& name : fx.nodes) batch.nodes.push_back(*core_->FindNode(name));
  batch.deleted_nodes = std::move(fx.deleted_nodes);
  batch.events = std::move(fx.events);
  for (const std::string& project : fx.quotas) {
    if (const sched::Quota* quota = core_->FindQuota(project)) {
      batch.quotas.push_back(sched::QuotaToProto(*quota));
    }
  }
  for (const std::string& project : fx.project_uids) {
    batch.project_uids.emplace_back(project, *core_->ProjectUid(project));
  }
  batch.project_usage = std::move(fx.usage_ledgers);
  batch.usage_hours = std::move(fx.usage_hours);
  if (usage_retention_ms_ > 0 && now_ms >= next_usage_retention_ms_) {
    // Usage outlives its jobs: its own retention deletes the oldest hours, a batch a minute.
    batch.expire_usage_before_ms = now_ms - usage_retention_ms_;
    next_usage_retention_ms_ = now_ms + 60'000;
  }
  batch.tokens = std::move(writes.tokens);
  batch.secrets = std::move(writes.secrets);
  batch.deleted_secrets = std::move(writes.deleted_secrets);
  batch.workdir_uses = std::move(writes.workdir_uses);
  batch.deleted_jobs = std::move(fx.deleted_jobs);
  const auto commit_start = std::chrono::steady_clock::now();
  absl::Status committed = store_->Commit(batch);
  if (!committed.ok()) {
    // Nothing of this turn may be seen, sent or acknowledged.
    RecoverFromFailedCommit(items, committed);
    return;
  }
  if (metrics_ != nullptr) {
    metrics_->OnCommit(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - commit_start).count());
    metrics_->OnCommitted(fx.tally, batch.events);
    if (!batch.nodes.empty() || !batch.deleted_nodes.empty()) metrics_->OnNodes(core_->nodes());
  }
  for (const sched::Event& e : batch.events) {
    LogScope scope(e.job_id, e.node, e.replica);
    spdlog::info("event {} job={} replica={} node={}: {}", e.type, e.job_id, e.replica, e.node,
                 e.reason);
  }
  for (sched::Command& c : fx.commands) {
    if (!c.message.has_launch()) continue;
    v1::LaunchReplica* launch = c.message.mutable_launch();
    if (replica_tokens_ != nullptr) {
      (*launch->mutable_env())["TRAINCTL_TOKEN"] = replica_tokens_->Mint(launch->job_id());
    }
    AddSecretValues(*core_, secrets_, launch);
  }
  if (!batch.deleted_jobs.empty()) snapshots_->Remove(batch.deleted_jobs);
  NoteEnded(batch.jobs, batch.deleted_jobs);
  // Readers see the turn before its callers hear of it.
  Publish(std::move(batch.jobs));
  outbox_.Deliver({std::move(fx.commands), std::move(after)});
  if (!batch.deleted_jobs.empty()) {
    // The agents remove the deleted jobs' logs.
    v1::SchedulerMessage forget;
    for (const std::string& id : batch.deleted_jobs) forget.mutable_forget_jobs()->add_job_ids(id);
    registry_->Broadcast(forget);
    if (jobs_deleted_) jobs_deleted_(batch.deleted_jobs);
  }
  registry_->ExpireRequests();
  ForgetEnded(now_ms);
}

void ReconcileLoop::NoteEnded(const std::vector<v1::Job>& jobs,
                              const std::vector<std::string>& deleted) {
  auto drop = [this](const std::string& id) {
    auto it = ended_at_.find(id);
    if (it == ended_at_.end()) return;
    ended_.erase({it->second, id});
    ended_at_.erase(it);
  };
  for (const v1::Job& job : jobs) {
    if (!IsTerminal(job.state())) continue;
    drop(job.id());
    const int64_t at = TimestampToMs(job.update_time());
    ended_.insert({at, job.id()});
    ended_at_[job.id()] = at;
  }
  for (const std::string& id : deleted) drop(id);
}

void ReconcileLoop::ForgetEnded(int64_t now) {
  std::vector<std::string> forgotten;
  std::vector<std::string> later;
  while (!ended_.empty() && forgotten.size() + later.size() < kForgetBatch) {
    auto first = ended_.begin();
    const bool too_many = static_cast<int64_t>(ended_.size() + later.size()) > finished_cache_jobs_;
    if (!too_many && first->first > now - finished_cache_ms_) break;
    std::string id = first->second;
    ended_.erase(first);
    ended_at_.erase(id);
    const absl::Status forgot = core_->ForgetJob(id);
    if (forgot.ok()) {
      forgotten.push_back(std::move(id));
    } else if (absl::IsFailedPrecondition(forgot)) {
      later.push_back(std::move(id));  // a replica of it is still stopping
    }
  }
  // Looked at again one cache time on (or when it changes).
  for (std::string& id : later) {
    ended_.insert({now, id});
    ended_at_[std::move(id)] = now;
  }
  if (!forgotten.empty()) snapshots_->Remove(forgotten);
}

void ReconcileLoop::ExpireJobs(Turn& t) {
  // A pass looks again at most ten times per retention, and at least every minute.
  const int64_t interval = std::clamp<int64_t>(retention_ms_ / 10, 100, 60'000);
  const int64_t now_ms = absl::ToUnixMillis(t.now);
  absl::StatusOr<std::vector<storage::EndedJob>> due =
      store_->EndedBefore(now_ms - retention_ms_, retention_cursor_, kRetentionBatch);
  if (!due.ok()) {
    spdlog::warn("retention: cannot read the jobs due for deletion: {}", due.status().ToString());
    next_retention_ms_ = now_ms + interval;
    return;
  }
  int deleted = 0;
  for (const storage::EndedJob& job : *due) {
    absl::Status gone = core_->DeleteJob(job.id, "", t.now, t.fx);
    if (gone.ok()) {
      ++deleted;
    } else if (absl::IsNotFound(gone)) {
      t.fx->deleted_jobs.push_back(job.id);  // a row the core does not hold
      ++deleted;
    }
    // Else a replica of it is still stopping: a later pass takes it.
  }
  if (deleted > 0) {
    spdlog::info("retention: deleting {} jobs that ended more than {} ago", deleted,
                 FormatDuration(retention_ms_));
  }
  if (static_cast<int32_t>(due->size()) == kRetentionBatch) {
    // More may be due: the next turn goes on, and one comes soon.
    retention_cursor_ = due->back();
    next_retention_ms_ = now_ms;
    Post([](Turn&) {});
  } else {
    retention_cursor_ = storage::EndedJob{};
    next_retention_ms_ = now_ms + interval;
  }
}

void ReconcileLoop::RunRefusingTurn(std::vector<Item> items, const absl::Status& why) {
  sched::Effects fx;
  std::vector<std::function<void()>> after;
  TurnWrites writes;
  Turn turn{*core_, *store_, absl::FromUnixMillis(clock_()), &fx, &after, &writes};
  for (Item& item : items) {
    if (item.read_only) {
      item.work(turn);
    } else if (item.refused) {
      item.refused(why);
    }
  }
  // Reads change nothing to commit; their replies go out now.
  for (auto& f : after) f();
  registry_->ExpireRequests();
}

void ReconcileLoop::RecoverFromFailedCommit(std::vector<Item>& items, const absl::Status& why) {
  spdlog::error("cannot commit scheduler state: {}; refusing changes until a write succeeds",
                why.ToString());
  if (!reloader_) {
    spdlog::critical("exiting so that a restart reloads the durable state");
    std::abort();
  }
  absl::StatusOr<std::unique_ptr<sched::Core>> rebuilt = reloader_(*store_);
  if (!rebuilt.ok()) {
    spdlog::critical("cannot reload the scheduler state after a failed commit: {}; exiting",
                     rebuilt.status().ToString());
    std::abort();
  }
  core_ = *std::move(rebuilt);
  last_tick_ms_ = 0;
  retention_cursor_ = storage::EndedJob{};  // the failed turn's deletions did not happen
  next_retention_ms_ = 0;
  last_probe_ms_ = clock_();
  PublishAll();
  SetWriteStatus(why);
  // Told last: a caller that tries again at once finds writes refused.
  for (Item& item : items) {
    if (item.refused) item.refused(why);
  }
}

void ReconcileLoop::ProbeWrites() {
  const int64_t now = clock_();
  if (now - last_probe_ms_ < kProbeIntervalMs) return;
  last_probe_ms_ = now;
  absl::Status probe = store_->ProbeWrite();
  if (!probe.ok()) {
    if (probe.message() != write_status().message()) {
      spdlog::warn("still refusing changes: {}", probe.ToString());
      SetWriteStatus(probe);
    }
    return;
  }
  spdlog::info(
      "writes to the database work again; accepting changes, and asking every agent to register "
      "again");
  SetWriteStatus(absl::OkStatus());
  // The rebuilt core knows no agent's stream: each registers again and resends its reports.
  registry_->DisconnectAll("trainctld reloaded its state after a failed write; register again");
}

void ReconcileLoop::PublishAll() {
  std::vector<v1::Job> all;
  all.reserve(core_->jobs().size());
  for (const auto& [id, job] : core_->jobs()) all.push_back(sched::ToProto(job));
  published_queue_version_ = core_->QueueVersion() + 1;  // publish the queue too
  ended_.clear();
  ended_at_.clear();
  NoteEnded(all, {});
  if (metrics_ != nullptr) metrics_->OnNodes(core_->nodes());
  Publish(std::move(all));
}

void ReconcileLoop::Publish(std::vector<v1::Job> jobs) {
  std::vector<JobSnapshots::JobPtr> ptrs;
  ptrs.reserve(jobs.size());
  for (v1::Job& job : jobs) {
    auto shown = std::make_shared<v1::Job>(std::move(job));
    redactor_.Redact(shown.get());
    ptrs.push_back(std::move(shown));
  }
  std::shared_ptr<const sched::QueueState> queue;
  if (core_->QueueVersion() != published_queue_version_) {
    queue = core_->QueueSnapshot();
    published_queue_version_ = core_->QueueVersion();
  }
  if (!ptrs.empty() || queue != nullptr) snapshots_->Publish(ptrs, std::move(queue));
}

}  // namespace trainctl::server
