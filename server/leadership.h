// Leadership: how a trainctld on a PostgreSQL store shared with other trainctld
// (docs/operators/postgresql-ha.md, "High availability") comes to lead and stops leading.
//
//   WaitToLead serves as a standby (server/standby_server.h: every call answered UNAVAILABLE
//   naming the leader) and tries for the lease (storage/pg_lease.h) every lease / 10, until this
//   trainctld holds it or a stop signal comes; its servers hold the ports until the real ones
//   are about to bind them.
//   LeaseKeeper renews the lease on a thread of its own every lease / 4 while trainctld leads.
//   The leader steps down (StepDown: it exits with kExitDeposed, and systemd's Restart= brings
//   it back as a standby) when the lease has passed to another trainctld, when a commit is
//   fenced (PgStore::SetFence), or when no renewal has succeeded for a whole lease: a standby may
//   lead by then, and two leaders must never command agents at once. Running replicas are not
//   touched; agents find the new leader and it adopts them.
//
// With the SQLite store there is one trainctld and none of this runs.
#pragma once

#include <signal.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/standby_server.h"
#include "storage/pg_lease.h"

namespace trainctl::server {

// The exit status of a leader that stepped down (EX_TEMPFAIL).
inline constexpr int kExitDeposed = 75;

struct LeadershipOptions {
  // The --store URI.
  std::string store_uri;
  // This process's id ("trainctld <instance>" names its database sessions).
  std::string instance;
  // --advertise-address and --advertise-http-address; "" derives each from its listen address
  // and the port bound (a wildcard host becomes this host's name).
  std::string advertise_address;
  std::string advertise_http_address;
  absl::Duration lease = absl::Seconds(5);
  // The ports to serve. A standby writes no address files (DATA_DIR/trainctld.addr): they say
  // that trainctld serves.
  StandbyOptions standby;
};

struct Lead {
  std::unique_ptr<storage::PgLeaderLease> lease;
  int64_t epoch = 0;
  // The standby's servers, still serving (naming this trainctld as the leader) while it loads its
  // state: Stop them right before the real servers bind the same ports, so that the ports are
  // closed for as short a time as can be (a client that finds one closed backs off).
  std::unique_ptr<StandbyServer> standby;
  // The ports the standby holds, for the real servers to bind.
  int grpc_port = 0;
  int http_port = 0;
  // The addresses the lease row records.
  std::string address;
  std::string http_address;
  // When the try that took the lease began: the lease runs from then, as this process counts.
  absl::Time taken_at;
  // What the LeaderElected event says: who leads now, and who led before as this standby saw it.
  std::string reason;
};

// Serves as a standby until this trainctld leads. nullopt when a signal of `stop` came first
// (*signal_out says which); an error when the ports cannot be bound or the database is not
// trainctl's. Other errors (a database that cannot be reached) are logged and tried again.
absl::StatusOr<std::optional<Lead>> WaitToLead(const LeadershipOptions& options,
                                               const sigset_t& stop, int* signal_out);

// The address clients should use for `listen` ("HOST:PORT") bound to `port`: HOST, or this
// host's name for a wildcard host (0.0.0.0, ::, empty), with `port`.
std::string AdvertisedAddress(const std::string& listen, int port);

// Logs why, and exits with kExitDeposed at once (no destructors run: other threads still work).
[[noreturn]] void StepDown(const std::string& why);

class LeaseKeeper {
 public:
  // `taken_at`: Lead::taken_at.
  LeaseKeeper(std::unique_ptr<storage::PgLeaderLease> lease, absl::Time taken_at);
  // Stops renewing (the lease then lapses, and a standby takes over after it).
  ~LeaseKeeper();
  // Stops renewing and releases the lease, for a standby to take at once: a clean stop, once
  // nothing more is committed.
  void Release();
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  // Steps down when no renewal succeeded for a whole lease; the caller checks often (a renewal
  // that blocks cannot hold the check up).
  void StepDownIfLapsed();

 private:
  void Run();

  const std::unique_ptr<storage::PgLeaderLease> lease_;
  const absl::Duration duration_;
  // When the lease, as this process knows it, ends: the start of the last successful renewal
  // plus the lease (the database counts from later, so this ends first).
  std::atomic<int64_t> valid_until_ns_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace trainctl::server
