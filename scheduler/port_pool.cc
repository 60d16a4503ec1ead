#include "scheduler/port_pool.h"

#include "absl/strings/str_cat.h"

namespace trainctl::sched {

absl::Status ValidatePortRange(const PortRange& range) {
  if (range.lo < PortRange::kMinPort || range.hi > PortRange::kMaxPort) {
    return absl::InvalidArgumentError(
        absl::StrCat("ports must be within ", PortRange::kMinPort, "..", PortRange::kMaxPort));
  }
  if (range.lo >= range.hi) {
    return absl::InvalidArgumentError("the first port must be below the last");
  }
  if (range.size() < PortRange::kMinSize) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the range must hold at least ", PortRange::kMinSize, " ports, not ", range.size()));
  }
  return absl::OkStatus();
}

std::optional<int32_t> PortPool::Allocate() {
  if (free() == 0) return std::nullopt;
  // The first free port in [from, to], or nullopt: skips the run of used ports starting at `from`.
  auto first_free = [this](int32_t from, int32_t to) -> std::optional<int32_t> {
    int32_t port = from;
    for (auto it = used_.lower_bound(from); it != used_.end() && *it == port; ++it) ++port;
    if (port > to) return std::nullopt;
    return port;
  };
  std::optional<int32_t> port = first_free(cursor_, range_.hi);
  if (!port && cursor_ > range_.lo) port = first_free(range_.lo, cursor_ - 1);
  // free() > 0, so one of the two halves has a free port.
  used_.insert(*port);
  cursor_ = Next(*port);
  return port;
}

bool PortPool::Reserve(int32_t port) {
  if (!range_.Contains(port)) return false;
  return used_.insert(port).second;
}

bool PortPool::Restore(int32_t port) {
  if (!Reserve(port)) return false;
  cursor_ = Next(*used_.rbegin());
  return true;
}

bool PortPool::Release(int32_t port) { return used_.erase(port) > 0; }

}  // namespace trainctl::sched
