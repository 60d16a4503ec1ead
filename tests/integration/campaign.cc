#include "tests/integration/campaign.h"

#include <filesystem>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace trainctl::testing {

Campaign::Campaign(MiniCluster& cluster, uint32_t seed)
    : cluster_(cluster), rng_(seed), dir_(cluster.dir() + "/campaign") {
  std::filesystem::create_directories(dir_);
}

std::string Campaign::Submit() {
  static constexpr int kCodes[] = {0, 3, 134};
  const int code = kCodes[jobs_.size() % 3];
  const double seconds = std::uniform_int_distribution<int>(50, 1500)(rng_) / 1000.0;
  const std::string id = cluster_.Submit(
      cluster_.Spec(absl::StrCat(R"(
displayName: campaign
workerPools:
- name: chief
  replicaCount: 1
  command: [WORKLOAD, --run-once, )",
                                 dir_, ", --sleep, '", seconds, "', --exit, '", code, R"(']
  resources: {cpu: 0.1, memoryMb: 16}
scheduling:
  maxReplicaRestarts: 0
  maxJobRetries: 0
  retryBackoff: {initial: 100ms}
)")));
  jobs_.push_back({id, code});
  return id;
}

bool Campaign::WaitForAll(std::chrono::milliseconds timeout) {
  return Eventually(
      [&] {
        for (const Job& job : jobs_) {
          v1::JobState s = cluster_.GetJob(job.id).state();
          if (s != v1::JOB_STATE_SUCCEEDED && s != v1::JOB_STATE_FAILED &&
              s != v1::JOB_STATE_CANCELLED) {
            return false;
          }
        }
        return true;
      },
      timeout);
}

std::vector<std::string> Campaign::Check() {
  std::vector<std::string> problems;
  const std::string violations = ReadTextFile(dir_ + "/violations");
  for (absl::string_view line : absl::StrSplit(violations, '\n', absl::SkipEmpty())) {
    problems.push_back(absl::StrCat("ran twice: ", line));
  }
  for (const Job& job : jobs_) {
    const v1::Job got = cluster_.GetJob(job.id);
    const std::string what = absl::StrCat(job.id, " (workload exits ", job.exit_code, "): ");
    bool ran = false;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      const std::string name = entry.path().filename().string();
      ran = ran || (absl::StartsWith(name, job.id + ".") && absl::EndsWith(name, ".ran"));
    }
    if (!ran) problems.push_back(what + "its workload never ran");
    if (job.exit_code == 0) {
      if (got.state() != v1::JOB_STATE_SUCCEEDED) {
        problems.push_back(absl::StrCat(what, "ended ", v1::JobState_Name(got.state()), ": ",
                                        got.error().message()));
      }
      continue;
    }
    if (got.state() != v1::JOB_STATE_FAILED || got.replicas_size() != 1 ||
        got.replicas(0).exit_code() != job.exit_code ||
        !absl::StrContains(got.error().message(),
                           absl::StrCat("non-zero status of ", job.exit_code))) {
      problems.push_back(absl::StrCat(what, "ended ", v1::JobState_Name(got.state()),
                                      " with exit code ",
                                      got.replicas_size() > 0 && got.replicas(0).has_exit_code()
                                          ? absl::StrCat(got.replicas(0).exit_code())
                                          : std::string("none"),
                                      ": ", got.error().message()));
    }
  }
  return problems;
}

}  // namespace trainctl::testing
