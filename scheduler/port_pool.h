// PortPool: the ports of one node that trainctl hands to replicas, like Nomad's dynamic ports.
//
// Each replica gets a port of its own on its node (the one the cluster spec lists as host:port),
// and the primary a second one, the rendezvous port (MASTER_PORT). A pool covers one range,
// `--port-range` (default 20000-32767, just below Linux's ephemeral ports 32768-60999, so an
// outgoing connection's local port never takes one). Invariant: a port is handed out at most once
// until it is released, so two live replicas on one node never share a port.
//
// Allocation walks a cursor: the next port after the last one handed out, wrapping at the end of
// the range. A port just released (its dying process may still hold it, or a socket of it linger
// in TIME_WAIT) is thus reused last, only after every other free port was handed out since.
//
//   PortPool pool(PortRange{20000, 20063});
//   std::optional<int32_t> port = pool.Allocate();   // 20000, then 20001, ...
//   pool.Release(*port);                              // free again, reused after the others
//   pool.Restore(20042);                              // after a restart: held, cursor past it
//
// Who holds which port is the job lifecycle's business (scheduler/replica_binding.h); the node
// registry's book (node_book.h) owns one pool per node. Thread-safety: none; owned by the core.
#pragma once

#include <cstdint>
#include <optional>
#include <set>

#include "absl/status/status.h"

namespace trainctl::sched {

// A closed range of ports [lo, hi].
struct PortRange {
  // Ports below 1024 need privileges to bind.
  static constexpr int32_t kMinPort = 1024;
  static constexpr int32_t kMaxPort = 65535;
  // Fewer ports fill up after a few jobs, and the pool must at least hold a primary's two.
  static constexpr int32_t kMinSize = 64;

  int32_t lo = 20000;
  int32_t hi = 32767;

  int32_t size() const { return hi - lo + 1; }
  bool Contains(int32_t port) const { return port >= lo && port <= hi; }
  bool operator==(const PortRange& o) const { return lo == o.lo && hi == o.hi; }
};

// OK when kMinPort <= lo < hi <= kMaxPort and the range holds at least kMinSize ports; else
// INVALID_ARGUMENT saying which rule it breaks.
absl::Status ValidatePortRange(const PortRange& range);

class PortPool {
 public:
  // REQUIRES: ValidatePortRange(range) is OK. Every port starts free; the cursor at range.lo.
  explicit PortPool(PortRange range) : range_(range), cursor_(range.lo) {}

  // Hands out the first free port at or after the cursor, wrapping once around the range, and
  // moves the cursor past it. nullopt when every port is in use.
  std::optional<int32_t> Allocate();

  // Takes `port` if it is in the range and free: a replica that keeps its port over an in-place
  // restart takes it back. The cursor does not move. False when it is in use or out of range.
  bool Reserve(int32_t port);

  // Like Reserve, for ports persisted before a scheduler restart; also moves the cursor past the
  // highest port in use. The cursor itself is not persisted: after restoring every held port of
  // a node, allocation goes on after the highest of them, roughly where it stopped, rather than
  // at range.lo among ports freed just before the restart.
  bool Restore(int32_t port);

  // Frees `port`. False (and nothing changes) when it is not in use or out of range.
  bool Release(int32_t port);

  bool InUse(int32_t port) const { return used_.count(port) > 0; }
  int32_t used() const { return static_cast<int32_t>(used_.size()); }
  int32_t free() const { return range_.size() - used(); }
  const PortRange& range() const { return range_; }
  // The port Allocate tries first.
  int32_t cursor() const { return cursor_; }

 private:
  // The port after `port`, wrapping to range_.lo.
  int32_t Next(int32_t port) const { return port >= range_.hi ? range_.lo : port + 1; }

  // Constant after construction.
  const PortRange range_;

  // Ports in use, ordered so that Allocate skips runs of them in one walk.
  std::set<int32_t> used_;
  int32_t cursor_;
};

}  // namespace trainctl::sched
