#include "server/reconcile_loop.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "scheduler/model_proto.h"
#include "server/agent_registry.h"
#include "server/job_snapshots.h"

namespace trainctl::server {
namespace {

// How often the core's time limits are checked when nothing else happens.
constexpr int64_t kTickIntervalMs = 500;

void AbortOnCommitFailure(const absl::Status& status) {
  spdlog::critical("cannot commit scheduler state: {}; exiting so a restart reloads it",
                   status.ToString());
  std::abort();
}

}  // namespace

ReconcileLoop::ReconcileLoop(std::unique_ptr<sched::Core> core,
                             std::unique_ptr<storage::Store> store, AgentRegistry* registry,
                             JobSnapshots* snapshots, Clock clock,
                             CommitFailureHandler on_commit_failure)
    : core_(std::move(core)),
      store_(std::move(store)),
      registry_(registry),
      snapshots_(snapshots),
      clock_(std::move(clock)),
      on_commit_failure_(on_commit_failure ? std::move(on_commit_failure)
                                           : CommitFailureHandler(AbortOnCommitFailure)) {}

ReconcileLoop::~ReconcileLoop() { Stop(); }

void ReconcileLoop::Start() {
  std::vector<v1::Job> all;
  all.reserve(core_->jobs().size());
  for (const auto& [id, job] : core_->jobs()) all.push_back(sched::ToProto(job));
  published_queue_version_ = core_->QueueVersion() + 1;  // publish the queue too
  Publish(all);
  thread_ = std::thread([this] { Run(); });
}

void ReconcileLoop::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void ReconcileLoop::Post(Work work) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(work));
}

void ReconcileLoop::Run() {
  for (;;) {
    std::vector<Work> items;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !queue_.empty(); };
      mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(kTickIntervalMs));
      if (stopping_ && queue_.empty()) return;
      items.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
      queue_.clear();
    }
    RunTurn(std::move(items));
  }
}

void ReconcileLoop::RunTurn(std::vector<Work> items) {
  sched::Effects fx;
  std::vector<std::function<void()>> after;
  std::vector<storage::TokenRow> tokens;
  Turn turn{*core_, *store_, clock_(), &fx, &after, &tokens};
  for (Work& w : items) w(turn);
  if (turn.now - last_tick_ms_ >= kTickIntervalMs) {
    core_->Tick(turn.now, &fx);
    last_tick_ms_ = turn.now;
  }
  core_->Schedule(turn.now, &fx);

  storage::Batch batch;
  for (const std::string& id : fx.jobs) batch.jobs.push_back(sched::ToProto(*core_->FindJob(id)));
  for (const auto& [job_id, number] : fx.attempts) {
    const sched::Job* job = core_->FindJob(job_id);
    for (const sched::Attempt& a : job->attempts) {
      if (a.number == number) batch.attempts.push_back({job_id, sched::ToProto(a)});
    }
  }
  batch.runs = std::move(fx.runs);
  for (const std::string& name : fx.nodes) batch.nodes.push_back(*core_->FindNode(name));
  batch.deleted_nodes = std::move(fx.deleted_nodes);
  batch.events = std::move(fx.events);
  for (const std::string& project : fx.quotas) {
    if (const v1::Quota* quota = core_->FindQuota(project)) batch.quotas.push_back(*quota);
  }
  batch.tokens = std::move(tokens);
  absl::Status committed = store_->Commit(batch);
  if (!committed.ok()) {
    // Nothing of this turn may be seen, sent or acknowledged.
    on_commit_failure_(committed);
    return;
  }
  for (const sched::Event& e : batch.events) {
    spdlog::info("event {} job={} replica={} node={}: {}", e.type, e.job_id, e.replica, e.node,
                 e.reason);
  }
  for (sched::Command& c : fx.commands) {
    if (replica_tokens_ != nullptr && c.message.has_launch()) {
      v1::LaunchReplica* launch = c.message.mutable_launch();
      (*launch->mutable_env())["TRAINCTL_TOKEN"] = replica_tokens_->Mint(launch->job_id());
    }
    registry_->Send(std::move(c));
  }
  Publish(batch.jobs);
  for (auto& f : after) f();
  registry_->ExpireLogRequests();
}

void ReconcileLoop::Publish(const std::vector<v1::Job>& jobs) {
  std::vector<JobSnapshots::JobPtr> ptrs;
  ptrs.reserve(jobs.size());
  for (const v1::Job& job : jobs) {
    auto shown = std::make_shared<v1::Job>(job);
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
