#include "server/reconcile_loop.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>

#include "scheduler/model_proto.h"
#include "server/agent_registry.h"
#include "server/watch_hub.h"

namespace trainctl::server {
namespace {

// How often the core's time limits are checked when nothing else happens.
constexpr int64_t kTickIntervalMs = 500;

}  // namespace

ReconcileLoop::ReconcileLoop(std::unique_ptr<sched::Core> core,
                             std::unique_ptr<storage::Store> store, AgentRegistry* registry,
                             WatchHub* hub, Clock clock)
    : core_(std::move(core)),
      store_(std::move(store)),
      registry_(registry),
      hub_(hub),
      clock_(std::move(clock)) {}

ReconcileLoop::~ReconcileLoop() { Stop(); }

void ReconcileLoop::Start() {
  thread_ = std::thread([this] { Run(); });
}

void ReconcileLoop::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ReconcileLoop::Post(Work work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(work));
  }
  cv_.notify_one();
}

void ReconcileLoop::Run() {
  for (;;) {
    std::vector<Work> items;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(kTickIntervalMs),
                   [this] { return stopping_ || !queue_.empty(); });
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
  Turn turn{*core_, *store_, clock_(), &fx, &after};
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
  batch.events = std::move(fx.events);
  for (const std::string& project : fx.quotas) {
    if (const v1::Quota* quota = core_->FindQuota(project)) batch.quotas.push_back(*quota);
  }
  absl::Status committed = store_->Commit(batch);
  if (!committed.ok()) {
    spdlog::critical("cannot commit scheduler state: {}; exiting so a restart reloads it",
                     committed.ToString());
    std::abort();
  }
  for (const sched::Event& e : batch.events) {
    spdlog::info("event {} job={} replica={} node={}: {}", e.type, e.job_id, e.replica, e.node,
                 e.reason);
  }
  for (auto& [node, msg] : fx.commands) registry_->Send(node, msg);
  for (const v1::Job& job : batch.jobs) hub_->Publish(job);
  for (auto& f : after) f();
  registry_->ExpireLogRequests();
}

}  // namespace trainctl::server
