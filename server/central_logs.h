// CentralLogs: trainctld's copy of every replica's log, so that it outlives its host. The agents
// ship their runs' log files to it (AgentService.ShipLogs, a stream apart from Connect); it keeps
// them in a storage::LogStore (segment files with SQLite, rows with PostgreSQL), deletes a job's
// with the job, and keeps the store under its cap (--log-store-max-gb) by evicting the logs of
// the jobs that ended longest ago, with a LogsEvicted event. Api::ReadLogs reads the copy when the
// agent cannot serve the bytes (docs/developers/architecture.md, "Central logs").
//
//   CentralLogs logs(store, {.max_bytes = 5 << 30}, &snapshots, archive, &loop);
//   logs.Serve(node, stream);                       // AgentService.ShipLogs, on the call's thread
//   loop.set_jobs_deleted_listener([&](auto ids) { logs.Forget(ids); });
//
// What the agent ships is taken only where the copy ends (offsets are the log file's), and
// answered only once durable, so nothing is lost or repeated across reconnects, restarts of
// either side and failovers. A run is taken only from the node that ran it (its run row says
// which).
//
// Thread-safety: every method may be called from any thread. Serve blocks its caller (a
// synchronous gRPC handler's thread) for the stream's life; the store's writes happen there, never
// on the reconcile loop.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "storage/job_archive.h"
#include "storage/log_store.h"
#include "trainctl/v1/agent.grpc.pb.h"

namespace trainctl::server {

class DaemonMetrics;
class JobSnapshots;
class ReconcileLoop;

class CentralLogs {
 public:
  struct Options {
    // The store's cap in bytes (--log-store-max-gb); 0: none.
    int64_t max_bytes = 0;
    // How often the cap and the logs of jobs deleted while no trainctld ran are looked at.
    absl::Duration sweep_interval = absl::Seconds(30);
  };

  // `store`, `snapshots`, `archive`, `loop` and `metrics` (null: none) are not owned and must
  // outlive this. Starts the sweeper's thread.
  CentralLogs(storage::LogStore* store, Options options, const JobSnapshots* snapshots,
              storage::JobArchive* archive, ReconcileLoop* loop, DaemonMetrics* metrics);
  ~CentralLogs();
  CentralLogs(const CentralLogs&) = delete;
  CentralLogs& operator=(const CentralLogs&) = delete;

  storage::LogStore* store() const { return store_; }

  // Serves one ShipLogs stream of agent `node` (its identity checked by the caller) until the
  // agent ends it or trainctld stops.
  void Serve(const std::string& node,
             grpc::ServerReaderWriter<v1::ShipLogsResponse, v1::ShipLogsRequest>* stream,
             std::set<std::string> checked = {});

  // Runs a stream's request: a LogShipped per piece's run, in order. `checked` holds the runs of
  // this stream already found to be `node`'s (Serve keeps it per stream).
  v1::ShipLogsResponse Take(const std::string& node, const v1::ShipLogsRequest& request,
                            std::set<std::string>* checked) ABSL_LOCKS_EXCLUDED(mu_);

  // These jobs were deleted: their logs are deleted too, on the sweeper's thread.
  void Forget(const std::vector<std::string>& job_ids) ABSL_LOCKS_EXCLUDED(mu_);

  // Looks at the cap and the deleted jobs now (the sweeper does it every sweep_interval).
  void Sweep() ABSL_LOCKS_EXCLUDED(mu_, sweep_mu_);

 private:
  // OK when run `run_id` is `node`'s to ship; else why not (the job is gone, another node ran it).
  absl::Status CheckRun(const std::string& node, const std::string& run_id,
                        const std::string& job_id);
  // Whether the job ended (or was deleted): its logs may be evicted.
  bool Ended(const std::string& job_id) const;
  // Evicts the logs of ended jobs, oldest first, until the store is under the cap; recounts the
  // store's size. Holds sweep_mu_.
  void KeepUnderCap() ABSL_EXCLUSIVE_LOCKS_REQUIRED(sweep_mu_);
  void RecordEvent(const std::string& job_id, const std::string& type, const std::string& reason);
  void RunSweeper();

  storage::LogStore* const store_;
  const Options options_;
  const JobSnapshots* const snapshots_;
  storage::JobArchive* const archive_;
  ReconcileLoop* const loop_;
  DaemonMetrics* const metrics_;

  mutable absl::Mutex mu_;
  // The store's size as last counted plus what was taken since.
  int64_t stored_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<std::string> deleted_ ABSL_GUARDED_BY(mu_);
  bool sweep_due_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Serializes sweeps (the sweeper's and Take's when over the cap).
  absl::Mutex sweep_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  absl::Time last_full_sweep_ ABSL_GUARDED_BY(sweep_mu_) = absl::InfinitePast();
  // The store is over its cap with nothing left to evict (said once).
  bool warned_full_ ABSL_GUARDED_BY(sweep_mu_) = false;
  std::thread sweeper_;
};

}  // namespace trainctl::server
