// LeaderFollow (leader_follow.h): the next trainctld address to try.
#include "common/leader_follow.h"

#include <algorithm>
#include <utility>

namespace trainctl {

LeaderFollow::LeaderFollow(std::vector<std::string> addresses, int max_redirects)
    : addresses_(std::move(addresses)),
      max_redirects_(max_redirects),
      current_(addresses_.empty() ? std::string() : addresses_.front()) {}

void LeaderFollow::Served() {
  redirects_ = 0;
  failures_ = 0;
}

LeaderFollow::Next LeaderFollow::Redirected(const std::string& leader) {
  if (leader.empty() || leader == current_) return Failed();
  current_ = leader;
  auto it = std::find(addresses_.begin(), addresses_.end(), leader);
  if (it != addresses_.end()) list_pos_ = static_cast<size_t>(it - addresses_.begin());
  if (++redirects_ > max_redirects_) {
    redirects_ = 0;
    failures_ = 0;
    return Next::kBackoff;
  }
  return Next::kNow;
}

LeaderFollow::Next LeaderFollow::Failed() {
  redirects_ = 0;
  if (addresses_.empty()) return Next::kBackoff;
  list_pos_ = (list_pos_ + 1) % addresses_.size();
  current_ = addresses_[list_pos_];
  if (++failures_ >= addresses_.size()) {
    failures_ = 0;
    return Next::kBackoff;
  }
  return Next::kNow;
}

}  // namespace trainctl
