#include "tests/chaos/chaos_faults.h"

#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace trainctl::testing {
namespace {

std::string Seconds(std::chrono::milliseconds d) {
  return absl::StrFormat("%.1fs", static_cast<double>(d.count()) / 1000.0);
}

}  // namespace

FaultInjector::FaultInjector(MiniCluster& cluster, NetnsLink* link, bool one_way, int netns_agent,
                             uint32_t seed, FaultTiming timing)
    : cluster_(cluster),
      link_(link),
      one_way_(one_way),
      netns_agent_(netns_agent),
      timing_(timing),
      rng_(seed),
      start_(Clock::now()),
      next_(Clock::now() + Draw(timing.min_gap, timing.max_gap)) {}

std::chrono::milliseconds FaultInjector::Draw(std::chrono::milliseconds lo,
                                              std::chrono::milliseconds hi) {
  return std::chrono::milliseconds(
      std::uniform_int_distribution<int64_t>(lo.count(), hi.count())(rng_));
}

void FaultInjector::Note(const std::string& what) {
  const auto at = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_);
  // The UTC clock too, to read beside the events of a job with a problem (Campaign::Check).
  absl::StrAppend(&log_, Seconds(at), " (",
                  absl::FormatTime("%H:%M:%E3S", absl::Now(), absl::UTCTimeZone()), ") ", what,
                  "\n");
}

void FaultInjector::Step() {
  if (Clock::now() < next_) return;
  if (current_.empty()) {
    Begin();
  } else {
    End();
  }
}

void FaultInjector::Begin() {
  using std::chrono::milliseconds;
  std::vector<std::string> kinds = {"trainctld SIGKILL", "trainctld SIGSTOP", "agent SIGKILL",
                                    "full disk"};
  if (link_ != nullptr) {
    kinds.insert(kinds.end(), {"partition (short)", "partition (long)"});
    if (one_way_) kinds.insert(kinds.end(), {"one-way cut (outgoing)", "one-way cut (incoming)"});
  }
  const std::string kind = kinds[std::uniform_int_distribution<size_t>(0, kinds.size() - 1)(rng_)];
  counts_[kind]++;
  // The fence acts after lost - margin without a word from the scheduler: short faults stay
  // below it, long ones go past lost + margin, so the node is LOST and its replicas move.
  const milliseconds fence = timing_.lost - timing_.margin;
  const milliseconds past_move = timing_.lost + timing_.margin + milliseconds(1500);
  milliseconds lasts(0);
  if (kind == "trainctld SIGKILL") {
    cluster_.KillDaemon(SIGKILL);
    cluster_.StartDaemon();
  } else if (kind == "trainctld SIGSTOP") {
    lasts = Draw(milliseconds(300), fence / 2);
    cluster_.daemon().Signal(SIGSTOP);
  } else if (kind == "agent SIGKILL") {
    const int victim = std::uniform_int_distribution<int>(0, netns_agent_)(rng_);
    cluster_.KillAgent(victim, SIGKILL);
    cluster_.StartAgent(victim);
    Note(absl::StrCat(kind, " of ", NodeName(victim)));
  } else if (kind == "full disk") {
    lasts = Draw(milliseconds(500), fence / 2);
    FillUp(cluster_.DataDir() + "/filler");
  } else if (kind == "partition (short)") {
    lasts = Draw(milliseconds(300), fence / 2);
    link_->Down();
  } else if (kind == "partition (long)") {
    lasts = Draw(past_move, past_move + milliseconds(2000));
    link_->Down();
  } else if (kind == "one-way cut (outgoing)") {
    lasts = Draw(milliseconds(300), past_move);
    link_->DropOutgoing();
  } else {
    lasts = Draw(milliseconds(300), past_move);
    link_->DropIncoming();
  }
  if (kind != "agent SIGKILL") {
    Note(lasts.count() > 0 ? absl::StrCat(kind, " for ", Seconds(lasts)) : kind);
  }
  if (lasts.count() > 0) {
    current_ = kind;
    next_ = Clock::now() + lasts;
  } else {
    current_.clear();
    next_ = Clock::now() + Draw(timing_.min_gap, timing_.max_gap);
  }
}

void FaultInjector::End() {
  if (current_ == "trainctld SIGSTOP") {
    cluster_.daemon().Signal(SIGCONT);
  } else if (current_ == "full disk") {
    std::filesystem::remove(cluster_.DataDir() + "/filler");
  } else if (current_ == "partition (short)" || current_ == "partition (long)") {
    link_->Up();
  } else if (!current_.empty()) {
    link_->Heal();
  }
  current_.clear();
  next_ = Clock::now() + Draw(timing_.min_gap, timing_.max_gap);
}

void FaultInjector::EndAll() {
  if (!current_.empty()) End();
  next_ = Clock::time_point::max();
}

}  // namespace trainctl::testing
