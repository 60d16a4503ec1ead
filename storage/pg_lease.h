// PgLeaderLease: which of several trainctld sharing one PostgreSQL store leads. The leader holds
// a session advisory lock and the one row of leader_lease (storage/pg_schema.h): its epoch (one
// more at every change of leader), its holder (the process's instance id), the addresses it
// serves, and when the lease ends, on the database's clock (no two hosts' clocks are compared).
//
//   PgLeaderLease lease(uri, {instance, "sched-a:7070", "sched-a:7080", absl::Seconds(5)});
//   for (;;) {                                      // a standby
//     absl::StatusOr<std::optional<int64_t>> epoch = lease.TryAcquire(&leader);
//     if (epoch.ok() && epoch->has_value()) break;  // leads; fence the store with the epoch
//   }
//   ... lease.Renew() every duration / 4 ...        // the leader
//
// The rules, which never let two trainctld lead in the same epoch:
//   - Taking the lease needs the advisory lock and a lapsed row (or no holder yet, or this
//     process, or an earlier trainctld of its data dir, as the holder). A leader that stops
//     cleanly releases the lease (Release), which a standby then takes at once. The lock alone is
//     not enough: after a restart of PostgreSQL it is free, and the leader that is reconnecting
//     keeps its lease until it lapses.
//   - A takeover ends the old holder's database sessions first (pg_terminate_backend, found in
//     this database by the application_name "trainctld <instance>" every connection of a trainctld
//     carries): a stopped leader's open transaction cannot hold the row, and its commits would
//     fail anyway, since each checks its epoch (PgStore::SetFence).
//   - A standby that finds the row lapsed while another session holds the lock ends that
//     holder's sessions (a leader stopped with SIGSTOP, or wedged), freeing the lock.
//   - The leader renews the row while its epoch and instance are still the row's; when they are
//     not, it has been deposed (Renew says so) and must stop at once. A leader that cannot renew
//     for a whole lease duration must stop too: a standby may lead by then.
//
// Errors: UNAVAILABLE while the database cannot be reached (the next call reconnects),
// FAILED_PRECONDITION (Renew) when the lease has passed to another trainctld.
//
// Thread-safety: used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "storage/pg_statement.h"
#include "trainctl/v1/leader.pb.h"

namespace trainctl::storage {

struct LeaseOptions {
  // This process's id, unique among the trainctld sharing the database (a random one per start),
  // "<data dir id>.<random>": a lease whose holder has this process's data dir id was held by an
  // earlier trainctld of the same data dir, which is gone (trainctld holds its data dir's lock),
  // so it is taken at once rather than after it lapses.
  std::string instance;
  // What the row records for standbys to name: the gRPC and REST addresses clients should use.
  std::string address;
  std::string http_address;
  absl::Duration duration = absl::Seconds(5);
};

// "trainctld <instance>": the application_name of every connection of that trainctld.
std::string LeaseApplicationName(const std::string& instance);

class PgLeaderLease {
 public:
  // Connects to `uri` (the --store URI); the schema must be migrated (PgStore::Open).
  static absl::StatusOr<std::unique_ptr<PgLeaderLease>> Open(const std::string& uri,
                                                             LeaseOptions options);

  // One try at leading. The epoch taken when this process now leads, else nullopt; `leader`
  // (may be null) gets the row's leader either way (address "" while none leads).
  absl::StatusOr<std::optional<int64_t>> TryAcquire(v1::LeaderInfo* leader);
  ~PgLeaderLease();
  PgLeaderLease(const PgLeaderLease&) = delete;
  PgLeaderLease& operator=(const PgLeaderLease&) = delete;

  // The leader's renewal: OK when the lease runs for another duration from now (the database's
  // now). FAILED_PRECONDITION naming the new leader when another has taken it; UNAVAILABLE when
  // the database cannot be reached, or after a reconnect another session holds the lock.
  absl::Status Renew();

  // The row's leader.
  absl::StatusOr<v1::LeaderInfo> Current();

  // A leader that stops: ends its lease now (when it still holds it), so that a standby takes
  // over at its next try rather than once the lease lapses.
  absl::Status Release();

  int64_t epoch() const { return epoch_; }
  const LeaseOptions& options() const { return options_; }

 private:
  PgLeaderLease(std::unique_ptr<PgConnection> conn, LeaseOptions options);
  // Takes the session's advisory lock when this session does not hold it; whether it holds it.
  absl::StatusOr<bool> Lock();
  // Ends every session of the trainctld `holder` (not this one's).
  absl::StatusOr<int> EndSessionsOf(const std::string& holder);

  const std::unique_ptr<PgConnection> conn_;
  PgStatementCache cache_;
  const LeaseOptions options_;
  // The session (PgConnection::session) whose advisory lock this process holds; 0: none.
  uint64_t locked_session_ = 0;
  int64_t epoch_ = 0;
};

}  // namespace trainctl::storage
