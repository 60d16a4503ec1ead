#include "storage/pg_lease.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace trainctl::storage {
namespace {

// The session advisory lock of the leader (a constant of trainctl's own; migrations take the
// one before it, as a transaction lock).
constexpr char kTryLock[] =
    "SELECT CASE WHEN pg_try_advisory_lock(8387236903567618669) THEN 'yes' ELSE 'no' END";
constexpr char kUnlock[] = "SELECT pg_advisory_unlock(8387236903567618669)";

// The database's clock, in Unix ms.
#define TC_NOW_MS "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"

constexpr char kReadRow[] = "SELECT epoch, holder, address, http_address, expires_ms, " TC_NOW_MS
                            " FROM leader_lease WHERE id = 1";
constexpr char kTakeOver[] =
    "UPDATE leader_lease SET epoch = epoch + 1, holder = ?, address = ?, http_address = ?, "
    "expires_ms = " TC_NOW_MS " + ? WHERE id = 1 AND epoch = ? RETURNING epoch";
constexpr char kRenew[] = "UPDATE leader_lease SET expires_ms = " TC_NOW_MS
                          " + ? WHERE id = 1 AND epoch = ? AND holder = ? RETURNING epoch";
constexpr char kRelease[] =
    "UPDATE leader_lease SET expires_ms = 0 WHERE id = 1 AND epoch = ? AND holder = ?";
constexpr char kEndSessions[] =
    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = ? "
    "AND datname = current_database() AND pid <> pg_backend_pid()";

#undef TC_NOW_MS

struct Row {
  v1::LeaderInfo leader;
  std::string holder;
  bool lapsed = false;
};

}  // namespace

std::string LeaseApplicationName(const std::string& instance) {
  return absl::StrCat("trainctld ", instance);
}

absl::StatusOr<std::unique_ptr<PgLeaderLease>> PgLeaderLease::Open(const std::string& uri,
                                                                   LeaseOptions options) {
  TC_ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> conn,
                      PgConnection::Connect(uri, LeaseApplicationName(options.instance)));
  return std::unique_ptr<PgLeaderLease>(new PgLeaderLease(std::move(conn), std::move(options)));
}

PgLeaderLease::PgLeaderLease(std::unique_ptr<PgConnection> conn, LeaseOptions options)
    : conn_(std::move(conn)), cache_(conn_.get()), options_(std::move(options)) {}

PgLeaderLease::~PgLeaderLease() { cache_.Clear(); }

absl::StatusOr<bool> PgLeaderLease::Lock() {
  TC_RETURN_IF_ERROR(conn_->EnsureConnected());
  if (locked_session_ == conn_->session()) return true;
  // A takeover waits at most this long for a row lock (a stuck leader's transaction, ended
  // meanwhile), and then tries again at the next poll.
  TC_RETURN_IF_ERROR(conn_->Exec("SET lock_timeout = '2s'"));
  TC_ASSIGN_OR_RETURN(std::optional<std::string> got, conn_->QueryValue(kTryLock));
  if (got.value_or("") != "yes") return false;
  locked_session_ = conn_->session();
  return true;
}

absl::StatusOr<int> PgLeaderLease::EndSessionsOf(const std::string& holder) {
  TC_ASSIGN_OR_RETURN(PgStatement * st, cache_.Get(kEndSessions));
  TC_RETURN_IF_ERROR(st->Bind({LeaseApplicationName(holder)}));
  TC_ASSIGN_OR_RETURN(bool row, st->Step());
  return row ? static_cast<int>(st->Int(0)) : 0;
}

absl::StatusOr<v1::LeaderInfo> PgLeaderLease::Current() {
  TC_RETURN_IF_ERROR(conn_->EnsureConnected());
  TC_ASSIGN_OR_RETURN(PgStatement * st, cache_.Get(kReadRow));
  TC_RETURN_IF_ERROR(st->Bind({}));
  TC_ASSIGN_OR_RETURN(bool row, st->Step());
  if (!row) {
    return absl::FailedPreconditionError(
        absl::StrCat(conn_->where(), " has no leader_lease row: not a trainctl database?"));
  }
  v1::LeaderInfo leader;
  leader.set_epoch(st->Int(0));
  // A lapsed lease names nobody: clients would wait on a leader that is gone.
  if (!st->Text(1).empty() && st->Int(4) >= st->Int(5)) {
    leader.set_address(st->Text(2));
    leader.set_http_address(st->Text(3));
  }
  return leader;
}

absl::StatusOr<std::optional<int64_t>> PgLeaderLease::TryAcquire(v1::LeaderInfo* leader) {
  TC_ASSIGN_OR_RETURN(bool locked, Lock());
  Row row;
  {
    TC_ASSIGN_OR_RETURN(PgStatement * st, cache_.Get(kReadRow));
    TC_RETURN_IF_ERROR(st->Bind({}));
    TC_ASSIGN_OR_RETURN(bool found, st->Step());
    if (!found) {
      return absl::FailedPreconditionError(
          absl::StrCat(conn_->where(), " has no leader_lease row: not a trainctl database?"));
    }
    row.leader.set_epoch(st->Int(0));
    row.holder = st->Text(1);
    row.lapsed = row.holder.empty() || st->Int(4) < st->Int(5);
    if (!row.lapsed) {
      row.leader.set_address(st->Text(2));
      row.leader.set_http_address(st->Text(3));
    }
  }
  if (leader != nullptr) *leader = row.leader;
  // The holder is this process, or an earlier one of its data dir (gone: this one holds the
  // data dir's lock).
  const size_t dot = options_.instance.find('.');
  const bool mine = row.holder == options_.instance ||
                    (dot != std::string::npos &&
                     row.holder.compare(0, dot + 1, options_.instance, 0, dot + 1) == 0);
  if (!locked) {
    // Another session holds the lock. When the row lapsed, its holder is connected but not
    // renewing (stopped, wedged): its sessions end, which frees the lock for the next try.
    if (row.lapsed && !row.holder.empty() && !mine) {
      TC_RETURN_IF_ERROR(EndSessionsOf(row.holder).status());
    }
    return std::nullopt;
  }
  if (!row.lapsed && !mine) {
    // The leader is reconnecting (after a restart of PostgreSQL): its lease still runs.
    TC_RETURN_IF_ERROR(conn_->QueryValue(kUnlock).status());
    locked_session_ = 0;
    return std::nullopt;
  }
  if (!row.holder.empty() && !mine) TC_RETURN_IF_ERROR(EndSessionsOf(row.holder).status());
  TC_ASSIGN_OR_RETURN(PgStatement * st, cache_.Get(kTakeOver));
  TC_RETURN_IF_ERROR(st->Bind({options_.instance, options_.address, options_.http_address,
                               absl::ToInt64Milliseconds(options_.duration), row.leader.epoch()}));
  TC_ASSIGN_OR_RETURN(bool taken, st->Step());
  if (!taken) return std::nullopt;
  epoch_ = st->Int(0);
  if (leader != nullptr) {
    leader->set_epoch(epoch_);
    leader->set_address(options_.address);
    leader->set_http_address(options_.http_address);
  }
  return epoch_;
}

absl::Status PgLeaderLease::Release() {
  if (epoch_ == 0) return absl::OkStatus();
  TC_RETURN_IF_ERROR(conn_->EnsureConnected());
  TC_ASSIGN_OR_RETURN(PgStatement * st, cache_.Get(kRelease));
  TC_RETURN_IF_ERROR(st->Run({epoch_, options_.instance}));
  return conn_->QueryValue(kUnlock).status();
}

absl::Status PgLeaderLease::Renew() {
  TC_ASSIGN_OR_RETURN(bool locked, Lock());
  bool renewed = false;
  if (locked) {
    TC_ASSIGN_OR_RETURN(PgStatement * st, cache_.Get(kRenew));
    TC_RETURN_IF_ERROR(
        st->Bind({absl::ToInt64Milliseconds(options_.duration), epoch_, options_.instance}));
    TC_ASSIGN_OR_RETURN(renewed, st->Step());
    st->Reset();
    if (renewed) return absl::OkStatus();
  }
  TC_ASSIGN_OR_RETURN(v1::LeaderInfo now, Current());
  if (now.epoch() == epoch_) {
    return absl::UnavailableError(absl::StrCat("another session holds the leader lock in ",
                                               conn_->where(), " since a reconnect"));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "the leader lease of epoch ", epoch_, " has passed to another trainctld (epoch ", now.epoch(),
      now.address().empty() ? "" : absl::StrCat(", at ", now.address()), ")"));
}

}  // namespace trainctl::storage
