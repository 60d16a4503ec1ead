// Per-peer bounds on long-lived streams (agent streams, job watches), so that one host cannot
// hold every thread and socket of trainctld by opening streams and never closing them.
//
//   PeerStreamLimiter watches("watch streams", "--max-watches-per-peer", 256);
//   absl::StatusOr<PeerStreamLimiter::Slot> slot = watches.Acquire(ctx->peer());
//   if (!slot.ok()) return Refuse(slot.status());   // RESOURCE_EXHAUSTED naming the flag
//   reactor->Hold(*std::move(slot));                // released when the reactor is destroyed
//
// A peer is its host: gRPC's "ipv4:10.0.0.5:41234" counts as 10.0.0.5, whatever its port.
// Thread-safe. The limiter must outlive every slot it handed out.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace trainctl::server {

// The host of a gRPC peer string ("ipv4:1.2.3.4:5", "ipv6:[::1]:5", "unix:/path").
std::string PeerHost(const std::string& peer);

class PeerStreamLimiter {
 public:
  // Releases its stream's place when the last copy is destroyed.
  using Slot = std::shared_ptr<void>;

  // `what` ("watch streams") and `flag` ("--max-watches-per-peer") word the error; `max_per_peer`
  // 0 means unlimited.
  PeerStreamLimiter(std::string what, std::string flag, int64_t max_per_peer)
      : what_(std::move(what)), flag_(std::move(flag)), max_(max_per_peer) {}

  // A place for one more stream of `peer`, or RESOURCE_EXHAUSTED when it holds max_per_peer.
  absl::StatusOr<Slot> Acquire(const std::string& peer) ABSL_LOCKS_EXCLUDED(mu_);
  // How many streams `peer` (a host) holds now.
  int64_t Count(const std::string& host) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Release(const std::string& host) ABSL_LOCKS_EXCLUDED(mu_);

  const std::string what_;
  const std::string flag_;
  const int64_t max_;
  mutable absl::Mutex mu_;
  // Hosts with at least one stream.
  std::map<std::string, int64_t> open_ ABSL_GUARDED_BY(mu_);
};

// How many nodes one host may register under names trainctld does not know yet, per hour
// (--max-new-nodes-per-peer), so that a client posing as agents cannot fill the node table with
// made-up names. A known node re-registering (an agent restart, a reconnect) does not count.
// Thread-safe.
class NewNodeLimiter {
 public:
  static constexpr absl::Duration kWindow = absl::Hours(1);
  // 0: unlimited.
  explicit NewNodeLimiter(int64_t max_per_hour) : max_(max_per_hour) {}

  // Counts one new node of `peer` at `now`, or RESOURCE_EXHAUSTED naming the flag when the host
  // registered max_per_hour new ones within the last hour.
  absl::Status Admit(const std::string& peer, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Bounded: hosts beyond this many are forgotten, oldest first by their newest registration.
  static constexpr size_t kMaxHosts = 4096;
  const int64_t max_;
  absl::Mutex mu_;
  // By host: when it registered each new node within the window, oldest first.
  std::map<std::string, std::deque<absl::Time>> recent_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainctl::server
