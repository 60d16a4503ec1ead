#include "tests/integration/campaign.h"

#include <filesystem>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"

namespace trainctl::testing {
namespace {

// A pool `name` whose one replica runs `args` of the workload after the campaign's locks.
std::string Pool(const std::string& name, const std::string& dir, const std::string& args,
                 int memory_mb) {
  // Through sh for the environment: one --exclusive lock per replica of the job.
  return absl::StrCat(
      "- name: ", name, "\n  replicaCount: 1\n  command: [/bin/sh, -c, 'exec WORKLOAD --run-once ",
      dir, " --exclusive ", dir, "/$TRAINCTL_JOB_ID.$TRAINCTL_REPLICA_NAME.exclusive ", args,
      "']\n  resources: {cpu: 0.1, memoryMb: ", memory_mb, "}\n");
}

bool Terminal(v1::JobState s) {
  return s == v1::JOB_STATE_SUCCEEDED || s == v1::JOB_STATE_FAILED || s == v1::JOB_STATE_CANCELLED;
}

// The job's events, a line each, for a report of its problems: what trainctl decided and when,
// to read beside the faults' log (whose lines carry the same UTC clock).
std::string EventLines(MiniCluster& cluster, const std::string& job_id) {
  std::string out;
  for (const v1::Event& e : cluster.ListEvents(job_id, "", "")) {
    const absl::Time t =
        absl::FromUnixSeconds(e.time().seconds()) + absl::Nanoseconds(e.time().nanos());
    absl::StrAppend(&out, "\n    ", absl::FormatTime("%H:%M:%E3S", t, absl::UTCTimeZone()), " ",
                    e.type(), e.node().empty() ? "" : " on " + e.node(),
                    e.replica().empty() ? "" : " " + e.replica(), ": ", e.reason());
  }
  return out;
}

int TotalUsed(const v1::Budgets& b) {
  return b.job_retries() + b.internal_retries() + b.capacity_retries() + b.redispatches();
}

}  // namespace

const char* Campaign::OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kSucceed:
      return "succeed";
    case Outcome::kUserError:
      return "user error";
    case Outcome::kCrash:
      return "crash";
    case Outcome::kTransient:
      return "transient crash";
    case Outcome::kOom:
      return "OOM";
    case Outcome::kHang:
      return "hang";
    case Outcome::kGang:
      return "gang";
  }
  return "?";
}

Campaign::Campaign(MiniCluster& cluster, uint32_t seed)
    : cluster_(cluster), rng_(seed), dir_(cluster.dir() + "/campaign") {
  std::filesystem::create_directories(dir_);
}

std::string Campaign::Spec(Outcome o) {
  const double seconds = std::uniform_int_distribution<int>(50, 1500)(rng_) / 1000.0;
  const std::string work = absl::StrCat("--sleep ", seconds);
  std::string pools;
  // Restarts in place only where the outcome needs one; no job retries, so the job's end is
  // decided by what its workload did.
  std::string scheduling = "  maxReplicaRestarts: 0\n  maxJobRetries: 0\n";
  switch (o) {
    case Outcome::kSucceed:
      pools = Pool("chief", dir_, work + " --exit 0", 16);
      break;
    case Outcome::kUserError:
      pools = Pool("chief", dir_, work + " --exit 3", 16);
      break;
    case Outcome::kCrash:
      pools = Pool("chief", dir_, work + " --exit 134", 16);
      break;
    case Outcome::kTransient:
      pools = Pool("chief", dir_, work + " --fail-times 1 --fail-code 134 --exit 0", 16);
      scheduling = "  maxReplicaRestarts: 3\n  maxJobRetries: 0\n";
      break;
    case Outcome::kOom:
      pools = Pool("chief", dir_, work + " --alloc-until-killed", 64);
      break;
    case Outcome::kHang:
      pools = Pool("chief", dir_, "--trap-term --sleep 600", 16);
      scheduling += "  timeout: 3s\n";
      break;
    case Outcome::kGang:
      pools = Pool("chief", dir_, work + " --exit 0", 16) +
              Pool("worker", dir_, work + " --exit 0", 16);
      scheduling += "  restartScope: GANG\n";
      break;
  }
  return cluster_.Spec(absl::StrCat("displayName: campaign-", OutcomeName(o), "\nworkerPools:\n",
                                    pools, "scheduling:\n", scheduling,
                                    "  retryBackoff: {initial: 100ms}\n"));
}

void Campaign::Add(const std::string& id, Outcome o) { jobs_.push_back({id, o}); }

std::string Campaign::Submit() {
  static constexpr Outcome kCycle[] = {Outcome::kSucceed, Outcome::kUserError, Outcome::kCrash};
  const Outcome o = kCycle[jobs_.size() % 3];
  const std::string id = cluster_.Submit(Spec(o));
  Add(id, o);
  return id;
}

bool Campaign::WaitForAll(std::chrono::milliseconds timeout) {
  return Eventually(
      [&] {
        for (const Job& job : jobs_) {
          if (!Terminal(cluster_.GetJob(job.id).state())) return false;
        }
        return true;
      },
      timeout);
}

void Campaign::CheckJob(const Job& job, const v1::Job& got, std::vector<std::string>* problems) {
  const std::string what = absl::StrCat(job.id, " (", OutcomeName(job.outcome), "): ");
  auto problem = [&](const std::string& text) { problems->push_back(what + text); };
  const std::string ended =
      absl::StrCat("ended ", v1::JobState_Name(got.state()), ": ", got.error().message());
  switch (job.outcome) {
    case Outcome::kSucceed:
    case Outcome::kTransient:
    case Outcome::kGang:
      if (got.state() != v1::JOB_STATE_SUCCEEDED) problem(ended);
      break;
    case Outcome::kUserError:
    case Outcome::kCrash: {
      const int code = job.outcome == Outcome::kUserError ? 3 : 134;
      if (got.state() != v1::JOB_STATE_FAILED || got.replicas_size() != 1 ||
          got.replicas(0).exit_code() != code ||
          !absl::StrContains(got.error().message(), absl::StrCat("non-zero status of ", code))) {
        problem(absl::StrCat(ended, " (exit code ",
                             got.replicas_size() > 0 && got.replicas(0).has_exit_code()
                                 ? absl::StrCat(got.replicas(0).exit_code())
                                 : std::string("none"),
                             ")"));
      }
      break;
    }
    case Outcome::kOom:
      if (got.state() != v1::JOB_STATE_FAILED || got.error().reason() != "OUT_OF_MEMORY") {
        problem(ended);
      }
      break;
    case Outcome::kHang:
      if (got.state() != v1::JOB_STATE_FAILED ||
          !absl::StrContains(got.error().message(), "timeout")) {
        problem(ended);
      }
      break;
  }
  // No exit code lost: an attempt that ended INTERNAL would be a run whose end trainctl missed.
  for (const v1::Attempt& a : got.attempts()) {
    if (a.failure_class() == "INTERNAL") {
      problem(absl::StrCat("attempt ", a.number(), " ended INTERNAL: ", a.reason()));
    }
  }
  // Budgets: every attempt but the last was retried (a charged retry or an uncharged
  // re-dispatch), so the retries charged are at most the attempts less one; no replica used
  // more restarts than its budget; with maxJobRetries 0 no job retry was charged.
  const int used = TotalUsed(got.budgets_used());
  if (used > got.attempts_size() - 1) {
    problem(absl::StrCat(used, " retries charged for ", got.attempts_size(), " attempts"));
  }
  for (int i = 0; i + 1 < got.attempts_size(); ++i) {
    if (absl::StrContains(got.attempts(i).decision(), "FAIL")) {
      problem(absl::StrCat("attempt ", i + 1, " decided ", got.attempts(i).decision(),
                           " yet attempt ", i + 2, " exists"));
    }
  }
  if (got.budgets_used().job_retries() > 0) {
    problem(absl::StrCat(got.budgets_used().job_retries(), " job retries charged, budget 0"));
  }
  const int max_restarts = got.spec().scheduling().max_replica_restarts();
  for (const v1::Replica& r : got.replicas()) {
    if (r.charged_restarts() > max_restarts) {
      problem(absl::StrCat(r.name(), " charged ", r.charged_restarts(), " restarts, budget ",
                           max_restarts));
    }
  }
}

std::vector<std::string> Campaign::Check() {
  std::vector<std::string> problems;
  std::set<std::string> ran_jobs;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    const std::string name = entry.path().filename().string();
    if (name == "violations" || absl::EndsWith(name, ".violations")) {
      for (absl::string_view line :
           absl::StrSplit(ReadTextFile(entry.path().string()), '\n', absl::SkipEmpty())) {
        problems.push_back(absl::StrCat("ran twice or overlapped: ", line));
      }
    }
    if (absl::EndsWith(name, ".ran")) ran_jobs.insert(name.substr(0, name.find('.')));
  }
  for (const Job& job : jobs_) {
    if (ran_jobs.count(job.id) == 0) {
      problems.push_back(
          absl::StrCat(job.id, " (", OutcomeName(job.outcome), "): its workload never ran"));
    }
    const size_t before = problems.size();
    CheckJob(job, cluster_.GetJob(job.id), &problems);
    if (problems.size() > before) {
      problems.push_back(
          absl::StrCat("  the events of ", job.id, ":", EventLines(cluster_, job.id)));
    }
  }
  return problems;
}

}  // namespace trainctl::testing
