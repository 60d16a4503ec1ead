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

}  // namespace trainctl::server
