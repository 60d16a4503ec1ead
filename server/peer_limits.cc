#include "server/peer_limits.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "common/net_address.h"

namespace trainctl::server {

std::string PeerHost(const std::string& peer) {
  // Some gRPC versions percent-encode the brackets of an IPv6 peer.
  const std::string decoded = absl::StrReplaceAll(peer, {{"%5B", "["}, {"%5D", "]"}});
  absl::string_view p = decoded;
  for (absl::string_view scheme : {"ipv4:", "ipv6:"}) {
    if (absl::ConsumePrefix(&p, scheme)) return HostOf(p);
  }
  return decoded;
}

absl::StatusOr<PeerStreamLimiter::Slot> PeerStreamLimiter::Acquire(const std::string& peer) {
  std::string host = PeerHost(peer);
  {
    absl::MutexLock lock(&mu_);
    int64_t& n = open_[host];
    if (max_ > 0 && n >= max_) {
      return absl::ResourceExhaustedError(absl::StrCat(host, " already holds ", n, " ", what_,
                                                       ", the most trainctld's ", flag_,
                                                       " allows; close some first"));
    }
    ++n;
  }
  // The pointer is only a token: the deleter gives the place back and frees nothing.
  return Slot(static_cast<void*>(this), [this, host](void*) { Release(host); });
}

int64_t PeerStreamLimiter::Count(const std::string& host) const {
  absl::MutexLock lock(&mu_);
  auto it = open_.find(host);
  return it == open_.end() ? 0 : it->second;
}

void PeerStreamLimiter::Release(const std::string& host) {
  absl::MutexLock lock(&mu_);
  auto it = open_.find(host);
  if (it != open_.end() && --it->second <= 0) open_.erase(it);
}

absl::Status NewNodeLimiter::Admit(const std::string& peer, absl::Time now) {
  if (max_ <= 0) return absl::OkStatus();
  const std::string host = PeerHost(peer);
  absl::MutexLock lock(&mu_);
  for (auto it = recent_.begin(); it != recent_.end();) {
    std::deque<absl::Time>& times = it->second;
    while (!times.empty() && times.front() <= now - kWindow) times.pop_front();
    it = times.empty() ? recent_.erase(it) : std::next(it);
  }
  std::deque<absl::Time>& times = recent_[host];
  if (static_cast<int64_t>(times.size()) >= max_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        host, " registered ", times.size(),
        " new nodes within the last hour, the most trainctld's --max-new-nodes-per-peer allows; "
        "an agent of a node trainctld knows may still register"));
  }
  if (recent_.size() > kMaxHosts) recent_.clear();
  recent_[host].push_back(now);
  return absl::OkStatus();
}

}  // namespace trainctl::server
