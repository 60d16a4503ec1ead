// UsageRollup: the undecayed hourly usage of every (project, creator, node, labels) key, the
// accounting half of the one usage record fair share keeps (fair_share.h).
//
// Owns: what each key holds now (the allocations of the replicas that hold resources, and how
// many replicas), and the open hours' rows (UsageHour, model/usage_ledger.h). Decides: which rows
// are due for the store. Never does: decay (fair share does that with the same accrual), write
// rows (the core hands DueRows to the shell), or answer queries (the store reads its rows).
//
//   UsageRollup rollup;
//   rollup.Hold(key, need, /*run=*/true, queue_wait);   // a replica starts holding resources
//   rollup.Accrue(last, now);                           // FairShare::Accrue, every pass
//   rollup.Release(key, need);                          // it stops: its row is written this turn
//   for (const UsageHour& row : rollup.DueRows(now)) ...
//
// Invariants: memory holds only the held keys and the rows of hours that are open (an hour whose
// end has not passed) or not yet written; a closed hour's rows are written once more with all
// they got and dropped. A row is written when it changed and (it was never written, a run of its
// key ended, a minute passed since its last write, or its hour closed), so the store is at most a
// minute of a running replica's usage behind and a finished run's usage is stored by the turn
// that ends it. Rows are written whole (an upsert): a row restored after a restart (Restore) goes
// on from what it held, so nothing is counted twice, and at most the time since the last write is
// lost.
//
// Thread-safety: none; owned by the fair share of the admission queue (the reconcile loop).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "model/model.h"
#include "model/usage_ledger.h"

namespace trainctl::sched {

class UsageRollup {
 public:
  // A changed row is written at most this often while its hour is open and no run of it ends.
  static constexpr absl::Duration kWriteEvery = absl::Minutes(1);

  UsageRollup() = default;
  UsageRollup(const UsageRollup&) = delete;
  UsageRollup& operator=(const UsageRollup&) = delete;

  // The stored rows of the latest hours (after a restart): they are written, not due; the
  // accrual adds to them while their hour is open, and drops them when it has closed.
  void Restore(std::vector<UsageHour> rows);

  // A replica of `key` starts holding `need`. With `run` (it begins a run: not a restored hold,
  // not a move of a held replica), the run and its `queue_wait` count in the hour of the last
  // accrual (of the next one before any).
  void Hold(const UsageKey& key, const Res& need, bool run, absl::Duration queue_wait);
  // A replica of `key` stops holding `need`; the key's row of the current hour is written at the
  // next DueRows (a run ended).
  void Release(const UsageKey& key, const Res& need);

  // Charges what each key holds over [from, to), each piece to the hour it lies in: resources
  // times seconds, and replica-seconds as wall time. Nothing when `to` is not after `from`.
  void Accrue(absl::Time from, absl::Time to);

  // The rows due at `now` (see the invariants); marks them written and drops closed hours.
  std::vector<UsageHour> DueRows(absl::Time now);

  // Each project's usage accrued since the last call, undecayed (the /metrics counters).
  std::map<std::string, UsageAdded> TakeAdded();

  // The row of `key` for the hour starting at `hour`, or nullptr (tests, ProjectView).
  const UsageHour* Find(absl::Time hour, const UsageKey& key) const;
  // How many rows are in memory, and how many keys hold resources now.
  size_t rows_in_memory() const { return rows_.size(); }
  size_t held_keys() const { return held_.size(); }

 private:
  using RowId = std::pair<absl::Time, UsageKey>;
  struct Row {
    UsageHour usage;
    bool dirty = false;
    // When it was last written; nullopt: never.
    std::optional<absl::Time> written;
  };
  struct Held {
    Res need;
    int64_t replicas = 0;
    // The row it accrues into now (rows_ entries are stable), and that row's hour.
    Row* row = nullptr;
    absl::Time row_hour = absl::InfinitePast();
  };

  Row& RowOf(absl::Time hour, const UsageKey& key);
  // Where runs and releases count: the hour of the last accrual.
  std::optional<absl::Time> current_hour() const {
    return last_ ? std::optional<absl::Time>(HourOf(*last_)) : std::nullopt;
  }

  std::map<UsageKey, Held> held_;
  std::map<RowId, Row> rows_;
  // Rows whose run ended: written at the next DueRows whatever their last write.
  std::set<RowId> flush_;
  // Runs begun before the first accrual: (key, queue wait), counted in its hour.
  std::vector<std::pair<UsageKey, absl::Duration>> early_runs_;
  std::map<std::string, UsageAdded> added_;
  std::optional<absl::Time> last_;
};

}  // namespace trainctl::sched
