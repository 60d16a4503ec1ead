#include "cli/quota_flags.h"

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/flag_values.h"
#include "common/time_util.h"

namespace trainctl::cli {
namespace {

// A whole number (or, for double, a finite number) into *out.
template <typename T>
bool ParseNumber(const std::string& text, T* out) {
  if constexpr (std::is_floating_point_v<T>) {
    return absl::SimpleAtod(text, out) && std::isfinite(*out);
  } else {
    return absl::SimpleAtoi(text, out);
  }
}

// A limit flag, when given: a number calls set(n), "unlimited" calls clear().
template <typename T, typename Set, typename Clear>
absl::Status OverlayLimit(const ParsedArgs& args, const std::string& flag, Set set, Clear clear) {
  if (!args.IsSet(flag)) return absl::OkStatus();
  const std::string value = args.Get(flag);
  if (absl::EqualsIgnoreCase(value, "unlimited")) {
    clear();
    return absl::OkStatus();
  }
  T n{};
  if (!ParseNumber(value, &n)) {
    return BadFlagValue(absl::StrCat("--", flag),
                        std::is_floating_point_v<T> ? "a number of cores or \"unlimited\""
                                                    : "a whole number or \"unlimited\"",
                        value);
  }
  set(n);
  return absl::OkStatus();
}

// A --borrow-* flag, when given: a number calls set(n).
template <typename T, typename Set>
absl::Status OverlayBorrow(const ParsedArgs& args, const std::string& flag, Set set) {
  if (!args.IsSet(flag)) return absl::OkStatus();
  T n{};
  if (!ParseNumber(args.Get(flag), &n)) {
    return BadFlagValue(absl::StrCat("--", flag),
                        std::is_floating_point_v<T> ? "a number of cores" : "a whole number",
                        args.Get(flag));
  }
  set(n);
  return absl::OkStatus();
}

absl::Status OverlayLimits(const ParsedArgs& args, v1::Quota* q) {
  absl::Status s = OverlayLimit<int32_t>(
      args, "gpus", [q](int32_t n) { q->set_gpus(n); }, [q] { q->clear_gpus(); });
  if (s.ok()) {
    s = OverlayLimit<double>(
        args, "cpu", [q](double n) { q->set_cpu(n); }, [q] { q->clear_cpu(); });
  }
  if (s.ok()) {
    s = OverlayLimit<int64_t>(
        args, "memory-mb", [q](int64_t n) { q->set_memory_mb(n); }, [q] { q->clear_memory_mb(); });
  }
  if (s.ok()) {
    s = OverlayLimit<int32_t>(
        args, "max-running-jobs", [q](int32_t n) { q->set_max_running_jobs(n); },
        [q] { q->clear_max_running_jobs(); });
  }
  return s;
}

// How much beyond its own quota the project may borrow; all zero clears the borrowing limit.
absl::Status OverlayBorrowing(const ParsedArgs& args, v1::Quota* q) {
  v1::Resources b = q->borrowing_limit();
  absl::Status s = OverlayBorrow<int32_t>(args, "borrow-gpus", [&b](int32_t n) { b.set_gpus(n); });
  if (s.ok()) s = OverlayBorrow<double>(args, "borrow-cpu", [&b](double n) { b.set_cpu(n); });
  if (s.ok()) {
    s = OverlayBorrow<int64_t>(args, "borrow-memory-mb", [&b](int64_t n) { b.set_memory_mb(n); });
  }
  if (!s.ok()) return s;
  if (b.gpus() == 0 && b.cpu() == 0 && b.memory_mb() == 0) {
    q->clear_borrowing_limit();
  } else {
    *q->mutable_borrowing_limit() = b;
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<FlagSpec> QuotaSetFlags() {
  using Kind = FlagSpec::Kind;
  return {
      {"gpus", 0, Kind::kValue, "N", "", "GPUs the project's jobs may hold at once, or unlimited"},
      {"cpu", 0, Kind::kValue, "N", "", "CPU cores (fractions allowed), or unlimited"},
      {"memory-mb", 0, Kind::kValue, "N", "", "Memory in MiB, or unlimited"},
      {"max-running-jobs", 0, Kind::kValue, "N", "", "Jobs running at once, or unlimited"},
      {"cohort", 0, Kind::kValue, "NAME", "",
       "Share unused quota within this cohort (\"\": leave it)"},
      {"borrow-gpus", 0, Kind::kValue, "N", "", "GPUs it may borrow from its cohort (0: none)"},
      {"borrow-cpu", 0, Kind::kValue, "N", "", "CPU cores it may borrow (0: none)"},
      {"borrow-memory-mb", 0, Kind::kValue, "N", "", "Memory in MiB it may borrow (0: none)"},
      {"strategy", 0, Kind::kValue, "STRATEGY", "", "Queueing: strict or best-effort"},
      {"starvation-limit", 0, Kind::kValue, "D", "",
       "With best-effort: how long a blocked job may be overtaken, e.g. 10m"},
      {"run-as-user", 0, Kind::kValue, "USER", "",
       "The user its replicas run as on agents running as root, unless the agent's --run-as "
       "names the project (\"\": the project's own uid, or the agent's --default-run-as-user "
       "where set; root needs the agent's --allow-root-replicas too)"},
      {"reclaim", 0, Kind::kValue, "POLICY", "",
       "Take back quota lent to the cohort by preempting borrowers' jobs: never, "
       "lower-priority (only jobs of lower priority than the waiting one) or any"},
      {"preempt-within-project", 0, Kind::kValue, "POLICY", "",
       "Whether a higher-priority job preempts lower-priority jobs of the same project: never "
       "or lower-priority"},
      {"weight", 0, Kind::kValue, "W", "",
       "Fair share: its share is its decayed usage divided by W, and across projects the "
       "lowest share goes first (default 1; more than 0, at most 1000000)"},
  };
}

bool HasQuotaSetFlags(const ParsedArgs& args) {
  for (const FlagSpec& f : QuotaSetFlags()) {
    if (args.IsSet(f.name)) return true;
  }
  return false;
}

absl::Status OverlayQuotaFlags(const ParsedArgs& args, v1::Quota* quota) {
  if (absl::Status s = OverlayLimits(args, quota); !s.ok()) return s;
  if (absl::Status s = OverlayBorrowing(args, quota); !s.ok()) return s;
  if (args.IsSet("cohort")) quota->set_cohort(args.Get("cohort"));
  if (args.IsSet("run-as-user")) quota->set_run_as_user(args.Get("run-as-user"));
  if (args.IsSet("strategy")) {
    const std::string v = absl::AsciiStrToLower(args.Get("strategy"));
    if (v == "strict" || v == "strict-fifo") {
      quota->set_queueing_strategy(v1::QUEUEING_STRATEGY_STRICT_FIFO);
    } else if (v == "best-effort" || v == "best-effort-fifo") {
      quota->set_queueing_strategy(v1::QUEUEING_STRATEGY_BEST_EFFORT_FIFO);
    } else {
      return BadFlagValue("--strategy", "strict or best-effort", args.Get("strategy"));
    }
  }
  if (args.IsSet("reclaim")) {
    const std::string v = absl::AsciiStrToLower(args.Get("reclaim"));
    if (v == "never") {
      quota->set_reclaim(v1::RECLAIM_POLICY_NEVER);
    } else if (v == "lower-priority") {
      quota->set_reclaim(v1::RECLAIM_POLICY_LOWER_PRIORITY);
    } else if (v == "any") {
      quota->set_reclaim(v1::RECLAIM_POLICY_ANY);
    } else {
      return BadFlagValue("--reclaim", "never, lower-priority or any", args.Get("reclaim"));
    }
  }
  if (args.IsSet("preempt-within-project")) {
    const std::string v = absl::AsciiStrToLower(args.Get("preempt-within-project"));
    if (v == "never") {
      quota->set_preempt_within_project(v1::WITHIN_PROJECT_PREEMPTION_NEVER);
    } else if (v == "lower-priority") {
      quota->set_preempt_within_project(v1::WITHIN_PROJECT_PREEMPTION_LOWER_PRIORITY);
    } else {
      return BadFlagValue("--preempt-within-project", "never or lower-priority",
                          args.Get("preempt-within-project"));
    }
  }
  if (args.IsSet("weight")) {
    double w = 0;
    if (!absl::SimpleAtod(args.Get("weight"), &w) || !(w > 0 && w <= 1e6)) {
      return BadFlagValue("--weight", "a number more than 0 and at most 1000000, e.g. 2",
                          args.Get("weight"));
    }
    quota->set_weight(w);
  }
  if (args.IsSet("starvation-limit")) {
    absl::StatusOr<int64_t> ms =
        ParseDurationFlag("--starvation-limit", args.Get("starvation-limit"), 0,
                          std::numeric_limits<int64_t>::max(), "a duration such as 10m");
    if (!ms.ok()) return ms.status();
    *quota->mutable_starvation_limit() = MsToDuration(*ms);
  }
  return absl::OkStatus();
}

}  // namespace trainctl::cli
