#include "scheduler/job_table.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/enum_names.h"

namespace trainctl::sched {

JobTable::JobTable(uint64_t id_seed) { rng_.seed(id_seed != 0 ? id_seed : std::random_device{}()); }

void JobTable::Restore(std::vector<Job> jobs, const std::vector<ReplicaRun>& runs) {
  for (Job& job : jobs) {
    last_create_ = std::max(last_create_, job.create_time);
    Insert(std::move(job));
  }
  for (const ReplicaRun& run : runs) run_nodes_[run.run_id] = run.node;
}

std::string JobTable::NewId(absl::Time create_time) {
  // Digits before letters, as in ASCII: the ids sort as their times do.
  static constexpr char kAlphabet[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  static const absl::Time kEpoch = absl::FromUnixSeconds(1577836800);  // 2020-01-01
  // Milliseconds since then, 8 digits of base 36 (until 2109), then 2 drawn ones.
  uint64_t ms = static_cast<uint64_t>(std::max<int64_t>(0, ToMs(create_time) - ToMs(kEpoch)));
  std::string time(8, '0');
  for (int i = 7; i >= 0; --i, ms /= 36) time[i] = kAlphabet[ms % 36];
  // Create times never repeat (NextCreateTime), so the drawn characters seldom matter; but a
  // clock before 2020 puts every id in millisecond 0, where 2 characters run out after 1,296
  // jobs: every 64 draws that found only ids in use add a character.
  for (int draws = 0;; ++draws) {
    std::string id = absl::StrCat("j-", time);
    for (int i = 0; i < 2 + draws / 64; ++i) id += kAlphabet[rng_() % 36];
    if (jobs_.find(id) == jobs_.end()) return id;
  }
}

absl::Time JobTable::NextCreateTime(absl::Time now) {
  last_create_ = std::max(now, last_create_ + absl::Milliseconds(1));
  return last_create_;
}

Job* JobTable::Insert(Job job) {
  const std::string id = job.id;
  Job& stored = jobs_[id] = std::move(job);
  RefreshActive(stored);
  return &stored;
}

Job* JobTable::Find(const std::string& id) {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

const Job* JobTable::Find(const std::string& id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

std::pair<Job*, Replica*> JobTable::CurrentRun(const std::string& run_id) {
  std::string job_id, replica;
  int32_t attempt = 0, restart = 0;
  if (!ParseRunId(run_id, &job_id, &attempt, &replica, &restart)) return {nullptr, nullptr};
  Job* job = Find(job_id);
  if (job == nullptr || job->current_attempt() != attempt) return {nullptr, nullptr};
  Replica* r = job->FindReplica(replica);
  if (r == nullptr || r->restart_count != restart) return {nullptr, nullptr};
  return {job, r};
}

void JobTable::Erase(const std::string& id) {
  if (auto it = jobs_.find(id); it != jobs_.end()) SetActive(it->second, false);
  jobs_.erase(id);
  // Run ids start "<job id>/".
  const std::string stem = id + "/";
  auto it = run_nodes_.lower_bound(stem);
  while (it != run_nodes_.end() && it->first.compare(0, stem.size(), stem) == 0) {
    it = run_nodes_.erase(it);
  }
}

void JobTable::RefreshActive(const Job& job) {
  bool holds = IsAdmitted(job.state);
  for (const Replica& r : job.replicas) holds |= HoldsResources(r.state);
  SetActive(job, holds);
}

void JobTable::SetActive(const Job& job, bool active) {
  if (active) {
    // The table's own Job, whatever `job` is a reference to.
    const Job* stored = Find(job.id);
    if (stored == nullptr) return;
    active_.insert(job.id);
    active_by_project_[job.project][job.id] = stored;
    return;
  }
  active_.erase(job.id);
  auto it = active_by_project_.find(job.project);
  if (it == active_by_project_.end()) return;
  it->second.erase(job.id);
  if (it->second.empty()) active_by_project_.erase(it);
}

const std::map<std::string, const Job*>& JobTable::ActiveOf(const std::string& project) const {
  static const auto* const kNone = new std::map<std::string, const Job*>();
  auto it = active_by_project_.find(project);
  return it == active_by_project_.end() ? *kNone : it->second;
}

std::vector<std::string> JobTable::ActiveIds() const {
  return std::vector<std::string>(active_.begin(), active_.end());
}

absl::Status JobTable::LocateRun(const std::string& job_id, const std::string& replica,
                                 int32_t attempt, int32_t restart, std::string* node,
                                 std::string* run_id, bool* finished) const {
  const Job* job = Find(job_id);
  if (job == nullptr) return absl::NotFoundError(absl::StrCat("job ", job_id, " not found"));
  const Replica* r = job->FindReplica(replica);
  if (r == nullptr) {
    std::vector<std::string> names;
    for (const Replica& x : job->replicas) names.push_back(x.name);
    return absl::NotFoundError(absl::StrCat("job ", job_id, " has no replica \"", replica,
                                            "\"; its replicas are ", absl::StrJoin(names, ", ")));
  }
  const int32_t current = job->current_attempt();
  if (current == 0) {
    return absl::FailedPreconditionError(absl::StrCat("job ", job_id, " has not started yet (",
                                                      EnumShortName(job->state), "): no logs"));
  }
  const int32_t a = attempt == 0 ? current : attempt;
  int32_t n = restart;
  if (n < 0 && a == current) n = r->restart_count;
  if (n < 0) {
    // The latest run of an earlier attempt: the highest restart launched.
    n = 0;
    const std::string prefix = MakeRunId(job_id, a, replica, 0);
    const std::string stem = prefix.substr(0, prefix.size() - 1);  // "<job>/<a>/<replica>/"
    for (auto it = run_nodes_.lower_bound(stem); it != run_nodes_.end(); ++it) {
      if (it->first.compare(0, stem.size(), stem) != 0) break;
      std::string ignored_job, ignored_replica;
      int32_t ignored_attempt = 0, launched = 0;
      if (ParseRunId(it->first, &ignored_job, &ignored_attempt, &ignored_replica, &launched)) {
        n = std::max(n, launched);
      }
    }
  }
  *run_id = MakeRunId(job_id, a, replica, n);
  auto it = run_nodes_.find(*run_id);
  if (it == run_nodes_.end()) {
    return absl::NotFoundError(absl::StrCat("no run ", *run_id, " (attempt ", a, ", restart ", n,
                                            ") of replica ", replica));
  }
  *node = it->second;
  *finished = !(a == current && n == r->restart_count && !IsTerminal(r->state));
  return absl::OkStatus();
}

void Touch(Job* job, absl::Time now, Effects* fx) {
  job->update_time = now;
  fx->jobs.insert(job->id);
}

void RecordRun(const Job& job, const Replica& r, Effects* fx) {
  ReplicaRun run;
  run.run_id = job.RunIdOf(r);
  run.job_id = job.id;
  run.attempt = job.current_attempt();
  run.replica = r.name;
  run.restart = r.restart_count;
  run.node = r.node;
  run.state = r.state;
  run.pid = r.pid;
  run.exit_code = r.exit_code;
  run.signal = r.signal;
  run.oom_killed = r.oom_killed;
  run.message = r.message;
  run.start_ms = r.start_time ? ToMs(*r.start_time) : 0;
  run.end_ms = r.end_time ? ToMs(*r.end_time) : 0;
  fx->runs.push_back(std::move(run));
}

}  // namespace trainctl::sched
