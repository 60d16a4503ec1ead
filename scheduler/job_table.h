// JobTable: every job the core holds, with the indexes the core needs — by id, the active set
// (jobs admitted or with replicas still holding resources), and the node of every run ever
// launched (for logs of earlier runs). Listing is served from the published snapshots
// (server/job_snapshots.h), not from here.
//
// It changes no job by itself: the job lifecycle does, and keeps the active set in step through
// RefreshActive.
//
// Thread-safety: none; owned by the core.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "model/model.h"

namespace trainctl::sched {

class JobTable {
 public:
  // `id_seed` seeds job ids; 0 picks a random seed.
  explicit JobTable(uint64_t id_seed);

  JobTable(const JobTable&) = delete;
  JobTable& operator=(const JobTable&) = delete;

  // Loads persisted jobs and the nodes of their runs. REQUIRES: the table is empty.
  void Restore(std::vector<Job> jobs, const std::vector<ReplicaRun>& runs);

  // A fresh id: "j-" and 10 lowercase characters or digits. The first 8 are the creation time
  // (milliseconds since 2020 in base 36), so ids sort by creation, and the database's indexes
  // by job id take new and live jobs at their ends, a few pages, not all over; 2 are drawn.
  std::string NewId(absl::Time create_time);
  // A creation time at or after `now`, later than every earlier one: submission order is exact
  // even for jobs submitted within one millisecond.
  absl::Time NextCreateTime(absl::Time now);
  // A job created at `t` exists (in the database, perhaps not here): later creation times, and
  // so later ids, come after it even if the clock stepped back.
  void NoteCreated(absl::Time t) { last_create_ = std::max(last_create_, t); }
  // REQUIRES: job.id is new.
  Job* Insert(Job job);

  // Forgets a job, its place in the active set and where its runs were launched.
  void Erase(const std::string& id);

  Job* Find(const std::string& id);
  const Job* Find(const std::string& id) const;
  // The job and replica of `run_id` if it is the replica's current run; else nullptrs.
  std::pair<Job*, Replica*> CurrentRun(const std::string& run_id);

  // Keeps the active set in step with the job's state and its replicas.
  void RefreshActive(const Job& job);
  // Marks the job active (a replica of it holds resources now).
  void MarkActive(const Job& job) { SetActive(job, true); }
  // The ids of active jobs, copied (for loops that may change the set).
  std::vector<std::string> ActiveIds() const;
  const std::set<std::string>& active() const { return active_; }
  // The active jobs of one project, by id (preemption's victims are searched among a few
  // projects' jobs, every pass).
  const std::map<std::string, const Job*>& ActiveOf(const std::string& project) const;
  // Every active job, by project and id, without a lookup per job.
  const std::map<std::string, std::map<std::string, const Job*>>& active_by_project() const {
    return active_by_project_;
  }

  // Remembers where a run was launched.
  void NoteRun(const std::string& run_id, const std::string& node) { run_nodes_[run_id] = node; }
  // The node a run was launched on; nullptr for a run this table does not know.
  const std::string* NodeOfRun(const std::string& run_id) const {
    auto it = run_nodes_.find(run_id);
    return it == run_nodes_.end() ? nullptr : &it->second;
  }

  // Where the log of (job, replica, attempt, restart) lives: its node and run id. attempt 0 means
  // the current attempt; restart < 0 the latest run of that attempt.
  absl::Status LocateRun(const std::string& job_id, const std::string& replica, int32_t attempt,
                         int32_t restart, std::string* node, std::string* run_id,
                         bool* finished) const;

  size_t size() const { return jobs_.size(); }
  const std::map<std::string, Job>& all() const { return jobs_; }

 private:
  // Adds the job to, or removes it from, the active set and its project's.
  void SetActive(const Job& job, bool active);

  std::mt19937_64 rng_;
  std::map<std::string, Job> jobs_;
  std::set<std::string> active_;
  std::map<std::string, std::map<std::string, const Job*>> active_by_project_;
  std::map<std::string, std::string> run_nodes_;
  absl::Time last_create_ = absl::InfinitePast();
};

// Marks the job's row changed at `now`.
void Touch(Job* job, absl::Time now, Effects* fx);
// Appends the replica's current run row to `fx`.
void RecordRun(const Job& job, const Replica& r, Effects* fx);

}  // namespace trainctl::sched
