// CentralLogs (server/central_logs.h): taking the agents' log pieces, deleting the logs of
// deleted jobs, and keeping the store under its cap.
#include "server/central_logs.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/byte_size.h"
#include "common/job_states.h"
#include "common/run_id.h"
#include "common/time_util.h"
#include "model/model.h"
#include "server/job_snapshots.h"
#include "server/metrics_daemon.h"
#include "server/reconcile_loop.h"

namespace trainctl::server {
namespace central_logs_internal {

// Eviction frees room down to this share of the cap, so that not every piece over it evicts.
constexpr double kEvictTo = 0.9;
// How often the store's jobs are compared with the database's (logs of jobs deleted while no
// trainctld ran, or whose deletion was cut short by a crash).
constexpr absl::Duration kOrphanSweep = absl::Hours(1);

std::string Gb(int64_t bytes) {
  return absl::StrFormat("%.6g", static_cast<double>(bytes) / (int64_t{1} << 30));
}

}  // namespace central_logs_internal

using central_logs_internal::Gb;

CentralLogs::CentralLogs(storage::LogStore* store, Options options, const JobSnapshots* snapshots,
                         storage::JobArchive* archive, ReconcileLoop* loop, DaemonMetrics* metrics)
    : store_(store),
      options_(options),
      snapshots_(snapshots),
      archive_(archive),
      loop_(loop),
      metrics_(metrics) {
  {
    absl::MutexLock lock(&mu_);
    sweep_due_ = true;  // the first sweep counts the store's size
  }
  sweeper_ = std::thread([this] { RunSweeper(); });
}

CentralLogs::~CentralLogs() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  sweeper_.join();
}

void CentralLogs::Serve(const std::string& node,
                        grpc::ServerReaderWriter<v1::ShipLogsResponse, v1::ShipLogsRequest>* stream,
                        std::set<std::string> checked) {
  spdlog::info("node {}: log shipping stream open", node);
  v1::ShipLogsRequest request;
  int64_t requests = 0;
  while (stream->Read(&request)) {
    ++requests;
    if (!stream->Write(Take(node, request, &checked))) break;
  }
  spdlog::info("node {}: log shipping stream ended after {} requests", node, requests);
}

v1::ShipLogsResponse CentralLogs::Take(const std::string& node, const v1::ShipLogsRequest& request,
                                       std::set<std::string>* checked) {
  v1::ShipLogsResponse response;
  for (const v1::LogPiece& piece : request.pieces()) {
    v1::LogShipped& out = *response.add_runs();
    out.set_run_id(piece.run_id());
    out.set_offset(piece.offset());
    const std::optional<RunIdParts> parts = SplitRunId(piece.run_id());
    if (!parts.has_value()) {
      out.set_refused(absl::StrCat("\"", piece.run_id(), "\" is not a run id"));
      continue;
    }
    if (checked->count(piece.run_id()) == 0) {
      absl::Status mine = CheckRun(node, piece.run_id(), parts->job_id);
      if (absl::IsUnavailable(mine) || absl::IsInternal(mine)) {
        out.set_retry(std::string(mine.message()));
        continue;
      }
      if (!mine.ok()) {
        out.set_refused(std::string(mine.message()));
        continue;
      }
      checked->insert(piece.run_id());
    }
    const bool carries = !piece.data().empty() || piece.gap();
    bool full = false;
    if (carries && options_.max_bytes > 0) {
      {
        absl::MutexLock lock(&mu_);
        full = stored_bytes_ > options_.max_bytes;
      }
      if (full) {
        absl::MutexLock sweep(&sweep_mu_);
        KeepUnderCap();
        absl::MutexLock lock(&mu_);
        full = stored_bytes_ > options_.max_bytes;
      }
    }
    if (full) {
      out.set_retry(absl::StrCat("trainctld's log store is full (--log-store-max-gb ",
                                 Gb(options_.max_bytes),
                                 ") and holds no ended job's logs to evict"));
      continue;
    }
    absl::StatusOr<storage::LogRunState> state = store_->Append(node, parts->job_id, piece);
    if (!state.ok()) {
      const bool refused = absl::IsInvalidArgument(state.status()) ||
                           absl::IsFailedPrecondition(state.status()) ||
                           absl::IsPermissionDenied(state.status());
      if (refused) {
        out.set_refused(std::string(state.status().message()));
      } else {
        spdlog::warn("node {}: cannot keep a log piece of run {}: {}", node, piece.run_id(),
                     state.status().ToString());
        out.set_retry(std::string(state.status().message()));
      }
      continue;
    }
    out.set_offset(state->stored);
    out.set_final(state->final);
    if (carries && state->stored == piece.next_offset() && state->stored > piece.offset()) {
      const int64_t taken = static_cast<int64_t>(piece.data().size());
      absl::MutexLock lock(&mu_);
      stored_bytes_ += taken;
      // Past the cap: the sweeper evicts now, not at its next round.
      if (options_.max_bytes > 0 && stored_bytes_ > options_.max_bytes) sweep_due_ = true;
      if (metrics_ != nullptr) metrics_->OnLogsReceived(taken);
    }
  }
  return response;
}

absl::Status CentralLogs::CheckRun(const std::string& node, const std::string& run_id,
                                   const std::string& job_id) {
  if (archive_ == nullptr) return absl::OkStatus();
  const std::optional<RunIdParts> parts = SplitRunId(run_id);
  absl::StatusOr<storage::RunLocation> run =
      archive_->LocateRun(job_id, parts->replica_name, parts->attempt, parts->restart);
  if (absl::IsNotFound(run.status())) {
    return absl::FailedPreconditionError(
        absl::StrCat("trainctld keeps no log of run ", run_id, ": ", run.status().message(),
                     " (the job was deleted, or the run is not one trainctld launched)"));
  }
  if (!run.ok()) return run.status();
  if (run->run_id != run_id) {
    return absl::FailedPreconditionError(
        absl::StrCat("trainctld keeps no log of run ", run_id, ": the job has no such run"));
  }
  if (run->node != node) {
    return absl::PermissionDeniedError(
        absl::StrCat("run ", run_id, " ran on node ", run->node, ", not on node ", node));
  }
  return absl::OkStatus();
}

void CentralLogs::Forget(const std::vector<std::string>& job_ids) {
  absl::MutexLock lock(&mu_);
  deleted_.insert(deleted_.end(), job_ids.begin(), job_ids.end());
}

bool CentralLogs::Ended(const std::string& job_id) const {
  if (snapshots_ == nullptr || !snapshots_->Holds(job_id)) return true;
  absl::StatusOr<v1::Job> job = snapshots_->Get(job_id, WallNowMs());
  return !job.ok() || IsTerminal(job->state());
}

void CentralLogs::KeepUnderCap() {
  absl::StatusOr<std::vector<storage::LogJobUsage>> jobs = store_->Jobs();
  if (!jobs.ok()) {
    spdlog::warn("cannot list the log store's jobs: {}", jobs.status().ToString());
    return;
  }
  int64_t total = 0;
  for (const storage::LogJobUsage& job : *jobs) total += job.bytes;
  if (options_.max_bytes > 0 && total > options_.max_bytes) {
    std::vector<const storage::LogJobUsage*> ended;
    for (const storage::LogJobUsage& job : *jobs) {
      if (job.all_final && Ended(job.job_id)) ended.push_back(&job);
    }
    std::sort(ended.begin(), ended.end(), [](const auto* a, const auto* b) {
      return std::tie(a->last_ms, a->job_id) < std::tie(b->last_ms, b->job_id);
    });
    const auto goal = static_cast<int64_t>(static_cast<double>(options_.max_bytes) *
                                           central_logs_internal::kEvictTo);
    for (const storage::LogJobUsage* job : ended) {
      if (total <= goal) break;
      if (absl::Status s = store_->DeleteJob(job->job_id); !s.ok()) {
        spdlog::warn("job {}: cannot evict its logs: {}", job->job_id, s.ToString());
        continue;
      }
      total -= job->bytes;
      if (metrics_ != nullptr) metrics_->OnLogsEvicted(job->bytes);
      const std::string reason = absl::StrCat(
          "its replicas' logs (", FormatDecimalBytes(job->bytes),
          ") were deleted from trainctld's log store, which passed --log-store-max-gb ",
          Gb(options_.max_bytes), ": the logs of the jobs that ended longest ago go first");
      spdlog::info("job {}: {}", job->job_id, reason);
      RecordEvent(job->job_id, "LogsEvicted", reason);
    }
    if (total > options_.max_bytes && !warned_full_) {
      spdlog::warn(
          "trainctld's log store holds {} over --log-store-max-gb {} and no ended job's logs are "
          "left to evict: agents keep the rest on their disks until there is room",
          FormatDecimalBytes(total - options_.max_bytes), Gb(options_.max_bytes));
    }
  }
  // Said once each time the store fills up.
  warned_full_ = options_.max_bytes > 0 && total > options_.max_bytes;
  absl::MutexLock lock(&mu_);
  stored_bytes_ = total;
}

void CentralLogs::RecordEvent(const std::string& job_id, const std::string& type,
                              const std::string& reason) {
  if (loop_ == nullptr) return;
  loop_->Post([job_id, type, reason](Turn& t) {
    sched::AddEvent(t.fx, t.now, nullptr, "", "", type, reason);
    t.fx->events.back().job_id = job_id;
  });
}

void CentralLogs::Sweep() {
  std::vector<std::string> deleted;
  {
    absl::MutexLock lock(&mu_);
    deleted.assign(deleted_.begin(), deleted_.end());
    deleted_.clear();
    sweep_due_ = false;
  }
  for (const std::string& job_id : deleted) {
    if (absl::Status s = store_->DeleteJob(job_id); !s.ok()) {
      spdlog::warn("job {}: cannot delete its logs: {}", job_id, s.ToString());
    }
  }
  absl::MutexLock sweep(&sweep_mu_);
  if (archive_ != nullptr &&
      absl::Now() - last_full_sweep_ >= central_logs_internal::kOrphanSweep) {
    last_full_sweep_ = absl::Now();
    absl::StatusOr<std::vector<storage::LogJobUsage>> jobs = store_->Jobs();
    for (const storage::LogJobUsage& job :
         jobs.ok() ? *jobs : std::vector<storage::LogJobUsage>{}) {
      if (snapshots_ != nullptr && snapshots_->Holds(job.job_id)) continue;
      absl::StatusOr<std::optional<v1::Job>> row = archive_->Get(job.job_id);
      if (!row.ok() || row->has_value()) continue;
      spdlog::info("job {}: deleting its logs: the job was deleted", job.job_id);
      if (absl::Status s = store_->DeleteJob(job.job_id); !s.ok()) {
        spdlog::warn("job {}: cannot delete its logs: {}", job.job_id, s.ToString());
      }
    }
  }
  KeepUnderCap();
}

void CentralLogs::RunSweeper() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      auto due = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || sweep_due_ || !deleted_.empty();
      };
      mu_.AwaitWithTimeout(absl::Condition(&due), options_.sweep_interval);
      if (stopping_) return;
    }
    Sweep();
  }
}

}  // namespace trainctl::server
