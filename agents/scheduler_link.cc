// SchedulerLink (scheduler_link.h): the address of the agent's next stream.
#include "agents/scheduler_link.h"

#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/leader_hint.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {
namespace {

std::vector<std::string> Addresses(const std::string& scheduler) {
  if (scheduler.find(',') == std::string::npos) return {scheduler};
  absl::StatusOr<std::vector<std::string>> list = ParseAddressList(scheduler, "--scheduler");
  if (list.ok()) return *std::move(list);
  return {scheduler};
}

}  // namespace

SchedulerLink::SchedulerLink(const std::string& scheduler, MakeChannel make_channel)
    : make_channel_(std::move(make_channel)), follow_(Addresses(scheduler)) {}

v1::AgentService::Stub& SchedulerLink::stub() {
  Link& link = links_[address()];
  if (link.stub == nullptr) {
    link.channel = make_channel_(address());
    link.stub = v1::AgentService::NewStub(link.channel);
  }
  return *link.stub;
}

SchedulerLink::Dial SchedulerLink::Next(const StreamEnd& end) {
  const std::string from = address();
  // Never connected and not answered by a standby: a fresh channel tries at once next time,
  // instead of waiting out the old one's own backoff, which would add to ours.
  if (!end.connected && !end.leader) links_.erase(from);
  if (end.registered) follow_.Served();
  if (end.leader && !end.leader->address().empty() && end.leader->address() != from) {
    const bool now = follow_.Redirected(end.leader->address()) == LeaderFollow::Next::kNow;
    if (now) {
      spdlog::info(
          "the scheduler at {} is a standby; the leader is at {} (epoch {}): connecting there",
          from, address(), end.leader->epoch());
    } else {
      spdlog::warn(
          "the scheduler at {} is a standby naming {} as the leader, after {} redirects in a row; "
          "connecting there after a backoff",
          from, address(), LeaderFollow::kMaxRedirects);
    }
    return now ? Dial::kLeader : Dial::kAfterBackoff;
  }
  return follow_.Failed() == LeaderFollow::Next::kNow ? Dial::kNext : Dial::kAfterBackoff;
}

}  // namespace trainctl::agent
