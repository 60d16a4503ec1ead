// The fault campaign (docs/developers/fault-campaign.md): trainctld and three agents, the third in
// a network namespace of its own, run a mixed workload (successes, user errors, crashes, transient
// crashes, OOMs, hangs, gangs; campaign.h) while faults come at moments drawn from a seed
// (chaos_faults.h). Afterwards every acknowledged job exists and has ended as its workload did, no
// run of a replica overlapped another, no exit code was lost, and the budgets used are accounted
// for by the attempts.
//
// Settings come from the environment: TRAINCTL_CHAOS_SEED (default: drawn, and printed),
// TRAINCTL_CHAOS_MINUTES (how long faults are injected; default 2) and TRAINCTL_CHAOS_JOBS
// (default 150 per minute). ctest runs it with seed 20261126 for 2 minutes. It needs root (a
// namespace and a tmpfs) and passes with a warning without it.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tests/chaos/chaos_faults.h"
#include "tests/integration/campaign.h"
#include "tests/integration/mini_cluster.h"
#include "tests/integration/netns_link.h"

namespace trainctl::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using Outcome = Campaign::Outcome;

constexpr milliseconds kLost(4000);
// What trainctld derives from a 4 s lost timeout (docs/operators/host-health.md, "Network
// partitions and fencing: no replica runs twice").
constexpr milliseconds kMargin(800);

int64_t EnvNumber(const char* name, int64_t fallback) {
  const char* text = std::getenv(name);
  int64_t value = 0;
  return text != nullptr && absl::SimpleAtoi(text, &value) ? value : fallback;
}

// Outcomes in the campaign's proportions (of 20).
Outcome DrawOutcome(std::mt19937& rng) {
  static constexpr Outcome kMix[] = {
      Outcome::kSucceed,   Outcome::kSucceed,   Outcome::kSucceed,   Outcome::kSucceed,
      Outcome::kSucceed,   Outcome::kSucceed,   Outcome::kUserError, Outcome::kUserError,
      Outcome::kUserError, Outcome::kCrash,     Outcome::kCrash,     Outcome::kTransient,
      Outcome::kTransient, Outcome::kTransient, Outcome::kOom,       Outcome::kOom,
      Outcome::kHang,      Outcome::kGang,      Outcome::kGang,      Outcome::kGang};
  return kMix[std::uniform_int_distribution<int>(0, 19)(rng)];
}

// One job's submission: `trainctl submit` with its request id, run again (same id) until it is
// acknowledged, so a submit cut short by a fault never makes a second job.
struct Submission {
  Outcome outcome;
  std::string spec_path;
  std::string request_id;
  std::unique_ptr<Process> cli;
  Clock::time_point retry_at;
  int tries = 0;
};

class Submitter {
 public:
  Submitter(MiniCluster& c, Campaign& campaign) : c_(c), campaign_(campaign) {}

  void Start(Outcome outcome) {
    Submission s;
    s.outcome = outcome;
    const int n = static_cast<int>(pending_.size() + acknowledged_);
    s.spec_path = c_.WriteFile(absl::StrCat("chaos-", n, ".yaml"), campaign_.Spec(outcome));
    s.request_id = absl::StrCat("chaos-", n);
    s.retry_at = Clock::now();
    pending_.push_back(std::move(s));
  }

  // Starts due submits, collects finished ones; acknowledged jobs go to the campaign.
  void Step() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      Submission& s = *it;
      if (s.cli == nullptr) {
        if (Clock::now() >= s.retry_at) {
          s.cli = std::make_unique<Process>(
              std::vector<std::string>{BinDir() + "/trainctl", "--server", c_.address(), "submit",
                                       "-f", s.spec_path, "--request-id", s.request_id},
              absl::StrCat(s.spec_path, ".", ++s.tries, ".log"));
        }
        ++it;
        continue;
      }
      const int status = s.cli->Wait(milliseconds(0));
      if (status == -1) {
        ++it;
        continue;
      }
      const std::string out = ReadTextFile(s.cli->log_path());
      std::string id;
      for (absl::string_view line : absl::StrSplit(out, '\n')) {
        if (absl::StartsWith(line, "j-")) id = std::string(absl::StripAsciiWhitespace(line));
      }
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && !id.empty()) {
        campaign_.Add(id, s.outcome);
        ++acknowledged_;
        it = pending_.erase(it);
        continue;
      }
      // Refused (a full disk) or cut short (trainctld stopped for longer than the CLI waits):
      // the same request id again shortly.
      ++refused_;
      s.cli.reset();
      s.retry_at = Clock::now() + milliseconds(500);
      ++it;
    }
  }

  bool Done() const { return pending_.empty(); }
  int refused() const { return refused_; }

 private:
  MiniCluster& c_;
  Campaign& campaign_;
  std::vector<Submission> pending_;
  int acknowledged_ = 0;
  int refused_ = 0;
};

TEST_CASE("the fault campaign: nothing acknowledged is lost, nothing runs twice",
          "[chaos][campaign]") {
  if (std::string why = NetnsLink::Unavailable(); !why.empty()) {
    WARN("skipped: " << why);
    return;
  }
  if (!CanMountTmpfs()) {
    WARN("skipped: mounting a tmpfs needs root");
    return;
  }
  const uint32_t seed = static_cast<uint32_t>(
      EnvNumber("TRAINCTL_CHAOS_SEED", static_cast<int64_t>(std::random_device{}())));
  const int64_t minutes = EnvNumber("TRAINCTL_CHAOS_MINUTES", 2);
  const int64_t jobs = EnvNumber("TRAINCTL_CHAOS_JOBS", 150 * minutes);
  std::cout << "chaos: seed " << seed << ", " << minutes << " min of faults, " << jobs
            << " jobs (replay: TRAINCTL_CHAOS_SEED=" << seed << ")" << std::endl;
  INFO("seed " << seed);

  NetnsLink link;
  const std::string no_nft = NetnsLink::NftUnavailable();
  const bool one_way = no_nft.empty();
  if (!one_way) std::cout << "chaos: no one-way cuts: " << no_nft << std::endl;
  ClusterOptions o;
  o.agents = 3;
  o.agent.cpus = 8;
  o.agent.memory_mb = 8192;
  o.data_dir_tmpfs_mb = 32;
  // A restart keeps the port: the agents, the namespace's among them, dial it again.
  o.listen_host = link.host_address();
  o.daemon_args = {"--insecure-allow-plaintext", "--node-lost-timeout",
                   absl::StrCat(kLost.count(), "ms"), "--heartbeat-interval", "200ms"};
  // The data dir fills up now and then; the checkpoints (which the workload writes) live on a
  // file system of their own, as they would on a real cluster.
  const std::string checkpoints = absl::StrCat("/tmp/trainctl-chaos-checkpoints-", getpid());
  o.daemon_args.insert(o.daemon_args.end(), {"--checkpoint-root", checkpoints});
  o.agent.extra_args = {"--insecure-allow-plaintext"};
  o.agent_prefix[2] = link.Exec();
  o.agent_args[2] = {"--address", link.ns_address()};
  MiniCluster c(o);
  Campaign campaign(c, seed);
  Submitter submitter(c, campaign);
  FaultInjector faults(c, &link, one_way, /*netns_agent=*/2, seed + 1, {kLost, kMargin});
  std::mt19937 rng(seed + 2);

  // Jobs are started evenly over the campaign; faults come at their own drawn moments. The loop
  // paces the schedule (20 ms steps); nothing here waits for an outcome.
  const Clock::time_point start = Clock::now();
  const milliseconds length(minutes * 60'000);
  int64_t started = 0;
  while (Clock::now() - start < length || started < jobs) {
    const auto elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
    while (started < jobs && started * length.count() <= elapsed.count() * jobs) {
      submitter.Start(DrawOutcome(rng));
      ++started;
    }
    if (Clock::now() - start < length) faults.Step();
    submitter.Step();
    std::this_thread::sleep_for(milliseconds(20));
  }
  faults.EndAll();
  // Every agent finds trainctld again once the faults stop, whichever fault came last.
  c.WaitForConnectedNodes(3);
  REQUIRE(Eventually(
      [&] {
        submitter.Step();
        return submitter.Done();
      },
      std::chrono::minutes(3)));
  const bool ended = campaign.WaitForAll(std::chrono::minutes(5));
  std::vector<std::string> problems = campaign.Check();

  std::vector<std::string> counts;
  int injected = 0;
  for (const auto& [kind, n] : faults.Counts()) {
    counts.push_back(absl::StrCat(kind, ": ", n));
    injected += n;
  }
  std::cout << "chaos: seed " << seed << ": " << injected << " faults ("
            << absl::StrJoin(counts, ", ") << "), " << campaign.size() << " jobs acknowledged, "
            << submitter.refused()
            << " submits refused or cut short and sent again, problems: " << problems.size() << "\n"
            << faults.Log() << std::flush;
  INFO(faults.Log());
  INFO(absl::StrJoin(problems, "\n"));
  CHECK(ended);
  CHECK(campaign.size() == static_cast<size_t>(jobs));
  CHECK(problems.empty());
  std::filesystem::remove_all(checkpoints);
}

}  // namespace
}  // namespace trainctl::testing
