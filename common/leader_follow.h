// LeaderFollow: which trainctld a client given several addresses (trainctl --server a,b;
// trainctl-agent --scheduler a,b) tries next, from what its attempts so far said. Pure logic:
// the caller makes the calls, reads the leader a standby names (leader_hint.h), and sleeps.
//
//   LeaderFollow follow(addresses);
//   while (true) {
//     Outcome o = Call(follow.current());
//     if (o.served) { follow.Served(); break; }
//     LeaderFollow::Next next = o.leader ? follow.Redirected(*o.leader) : follow.Failed();
//     if (next == LeaderFollow::Next::kBackoff) Sleep(backoff);
//   }
//
// The rules:
// - A standby that names a leader sends the client there at once (kNow), also to an address
//   not in the list. More than max_redirects redirects in a row (standbys naming each other
//   while a failover settles) ask for a backoff first; the redirect is still followed.
// - An address that is down, or a standby that names no leader yet, moves the client to the
//   next address of the list (after the last list address it tried), at once while that round
//   has addresses left; once every address of the list failed in a row, kBackoff.
// - With one address, every failure asks for a backoff: exactly the single-server behaviour.
//
// Thread-compatible.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace trainctl {

class LeaderFollow {
 public:
  // Redirects in a row that are followed without a backoff.
  static constexpr int kMaxRedirects = 3;

  enum class Next {
    kNow,      // try current() at once
    kBackoff,  // sleep a backoff first
  };

  // REQUIRES: `addresses` is not empty (ParseAddressList's result).
  explicit LeaderFollow(std::vector<std::string> addresses, int max_redirects = kMaxRedirects);

  // The address to try now.
  const std::string& current() const { return current_; }
  const std::vector<std::string>& addresses() const { return addresses_; }
  // More than one address was given.
  bool several() const { return addresses_.size() > 1; }

  // current() served (it leads, or it is the only server): later failures start a new round
  // from it, and the redirect count starts again.
  void Served();
  // current() is a standby that names `leader` as the leader. An empty `leader` (none leads
  // yet) or current() itself counts as Failed().
  Next Redirected(const std::string& leader);
  // current() could not be reached, or did not serve and named no leader.
  Next Failed();

 private:
  const std::vector<std::string> addresses_;
  const int max_redirects_;
  std::string current_;
  // The index in addresses_ of the list address tried last (current_, unless a redirect took
  // the client off the list).
  size_t list_pos_ = 0;
  // Redirects followed in a row, since the last failure, backoff or Served().
  int redirects_ = 0;
  // Failures in a row since the last Served() or backoff.
  size_t failures_ = 0;
};

}  // namespace trainctl
