#include "cli/quota_flags.h"

#include <catch2/catch.hpp>

#include "common/time_util.h"

namespace trainctl::cli {
namespace {

// Parses `trainctl quota set team-a ARGV...` with the real flag specs.
ParsedArgs ParseQuotaSet(const std::vector<std::string>& argv) {
  std::vector<std::string> full = {"quota", "set", "team-a"};
  full.insert(full.end(), argv.begin(), argv.end());
  const std::vector<CommandSpec> commands = {{"quota", "", "", "", QuotaSetFlags(), 2, 2}};
  ParsedArgs parsed;
  REQUIRE(ParseArgs(full, {}, commands, &parsed).ok());
  return parsed;
}

v1::Quota Current() {
  v1::Quota q;
  q.set_project("team-a");
  q.set_gpus(8);
  q.set_cpu(16);
  q.set_memory_mb(65536);
  q.set_max_running_jobs(4);
  q.set_cohort("research");
  q.mutable_borrowing_limit()->set_gpus(2);
  q.set_queueing_strategy(v1::QUEUEING_STRATEGY_BEST_EFFORT_FIFO);
  *q.mutable_starvation_limit() = MsToDuration(600000);
  return q;
}

TEST_CASE("OverlayQuotaFlags changes only what the flags give", "[quota_flags]") {
  v1::Quota q = Current();
  REQUIRE(OverlayQuotaFlags(ParseQuotaSet({"--gpus", "12", "--cpu=2.5"}), &q).ok());
  v1::Quota want = Current();
  want.set_gpus(12);
  want.set_cpu(2.5);
  CHECK(q.SerializeAsString() == want.SerializeAsString());

  q = Current();
  REQUIRE(OverlayQuotaFlags(ParseQuotaSet({}), &q).ok());
  CHECK(q.SerializeAsString() == Current().SerializeAsString());
}

TEST_CASE("OverlayQuotaFlags sets and clears the run-as user", "[quota_flags]") {
  v1::Quota q = Current();
  REQUIRE(OverlayQuotaFlags(ParseQuotaSet({"--run-as-user", "trainer"}), &q).ok());
  CHECK(q.run_as_user() == "trainer");
  REQUIRE(OverlayQuotaFlags(ParseQuotaSet({"--gpus", "1"}), &q).ok());
  CHECK(q.run_as_user() == "trainer");  // kept
  REQUIRE(OverlayQuotaFlags(ParseQuotaSet({"--run-as-user="}), &q).ok());
  CHECK(q.run_as_user().empty());
}

TEST_CASE("OverlayQuotaFlags clears a limit set to unlimited", "[quota_flags]") {
  v1::Quota q = Current();
  REQUIRE(
      OverlayQuotaFlags(ParseQuotaSet({"--gpus", "unlimited", "--cpu", "Unlimited", "--memory-mb",
                                       "unlimited", "--max-running-jobs", "unlimited"}),
                        &q)
          .ok());
  CHECK(!q.has_gpus());
  CHECK(!q.has_cpu());
  CHECK(!q.has_memory_mb());
  CHECK(!q.has_max_running_jobs());
  CHECK(q.cohort() == "research");

  // 0 is a limit: nothing may run.
  REQUIRE(OverlayQuotaFlags(ParseQuotaSet({"--max-running-jobs", "0"}), &q).ok());
  CHECK(q.has_max_running_jobs());
  CHECK(q.max_running_jobs() == 0);
}

TEST_CASE("OverlayQuotaFlags sets the cohort, borrowing, strategy and starvation limit",
          "[quota_flags]") {
  v1::Quota q = Current();
  REQUIRE(OverlayQuotaFlags(
              ParseQuotaSet({"--cohort", "vision", "--borrow-cpu", "4", "--borrow-memory-mb",
                             "1024", "--strategy", "strict", "--starvation-limit", "1h"}),
              &q)
              .ok());
  CHECK(q.cohort() == "vision");
  CHECK(q.borrowing_limit().gpus() == 2);  // kept
  CHECK(q.borrowing_limit().cpu() == 4);
  CHECK(q.borrowing_limit().memory_mb() == 1024);
  CHECK(q.queueing_strategy() == v1::QUEUEING_STRATEGY_STRICT_FIFO);
  CHECK(DurationToMs(q.starvation_limit()) == 3600000);

  REQUIRE(OverlayQuotaFlags(ParseQuotaSet({"--cohort=", "--borrow-gpus", "0", "--borrow-cpu", "0",
                                           "--borrow-memory-mb", "0", "--strategy", "best-effort"}),
                            &q)
              .ok());
  CHECK(q.cohort().empty());
  CHECK(!q.has_borrowing_limit());
  CHECK(q.queueing_strategy() == v1::QUEUEING_STRATEGY_BEST_EFFORT_FIFO);
}

TEST_CASE("OverlayQuotaFlags names the flag whose value has the wrong form", "[quota_flags]") {
  struct Case {
    std::vector<std::string> argv;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{"--gpus", "1.5"}, "--gpus must be a whole number or \"unlimited\", got \"1.5\""},
           {{"--cpu", "inf"}, "--cpu must be a number of cores or \"unlimited\", got \"inf\""},
           {{"--memory-mb", "8G"},
            "--memory-mb must be a whole number or \"unlimited\", got \"8G\""},
           {{"--max-running-jobs", ""}, "--max-running-jobs must be a whole number"},
           {{"--borrow-gpus", "unlimited"}, "--borrow-gpus must be a whole number, got"},
           {{"--borrow-cpu", "x"}, "--borrow-cpu must be a number of cores, got \"x\""},
           {{"--strategy", "fifo"}, "--strategy must be strict or best-effort, got \"fifo\""},
           {{"--starvation-limit", "-5m"}, "--starvation-limit must be a duration such as 10m"},
           {{"--reclaim", "always"},
            "--reclaim must be never, lower-priority or any, got \"always\""},
           {{"--preempt-within-project", "any"},
            "--preempt-within-project must be never or lower-priority, got \"any\""},
           {{"--weight", "0"}, "--weight must be a number more than 0 and at most 1000000"},
           {{"--weight", "heavy"}, "--weight must be a number more than 0"},
       }) {
    INFO(c.argv[0] << " " << c.argv[1]);
    v1::Quota q = Current();
    absl::Status s = OverlayQuotaFlags(ParseQuotaSet(c.argv), &q);
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(s.message()), Catch::StartsWith(c.message));
  }
}

TEST_CASE("OverlayQuotaFlags sets the preemption policies", "[quota_flags]") {
  v1::Quota q = Current();
  REQUIRE(OverlayQuotaFlags(ParseQuotaSet({"--reclaim", "lower-priority"}), &q).ok());
  CHECK(q.reclaim() == v1::RECLAIM_POLICY_LOWER_PRIORITY);
  CHECK(q.preempt_within_project() == v1::WITHIN_PROJECT_PREEMPTION_UNSPECIFIED);  // untouched
  REQUIRE(OverlayQuotaFlags(
              ParseQuotaSet({"--reclaim=ANY", "--preempt-within-project", "lower-priority"}), &q)
              .ok());
  CHECK(q.reclaim() == v1::RECLAIM_POLICY_ANY);
  CHECK(q.preempt_within_project() == v1::WITHIN_PROJECT_PREEMPTION_LOWER_PRIORITY);
  REQUIRE(OverlayQuotaFlags(ParseQuotaSet({"--gpus", "3"}), &q).ok());
  CHECK(q.reclaim() == v1::RECLAIM_POLICY_ANY);  // kept
  REQUIRE(OverlayQuotaFlags(
              ParseQuotaSet({"--reclaim", "never", "--preempt-within-project", "never"}), &q)
              .ok());
  CHECK(q.reclaim() == v1::RECLAIM_POLICY_NEVER);
  CHECK(q.preempt_within_project() == v1::WITHIN_PROJECT_PREEMPTION_NEVER);
}

TEST_CASE("OverlayQuotaFlags sets the fair-share weight", "[quota_flags]") {
  v1::Quota q = Current();
  CHECK_FALSE(q.has_weight());
  REQUIRE(OverlayQuotaFlags(ParseQuotaSet({"--weight", "2.5"}), &q).ok());
  CHECK(q.weight() == 2.5);
  REQUIRE(OverlayQuotaFlags(ParseQuotaSet({"--gpus", "3"}), &q).ok());
  CHECK(q.weight() == 2.5);  // kept
}

TEST_CASE("HasQuotaSetFlags sees any quota flag", "[quota_flags]") {
  CHECK(!HasQuotaSetFlags(ParseQuotaSet({})));
  CHECK(HasQuotaSetFlags(ParseQuotaSet({"--starvation-limit", "5m"})));
  CHECK(HasQuotaSetFlags(ParseQuotaSet({"--cohort="})));
  CHECK(HasQuotaSetFlags(ParseQuotaSet({"--reclaim", "any"})));
  CHECK(HasQuotaSetFlags(ParseQuotaSet({"--preempt-within-project", "never"})));
}

}  // namespace
}  // namespace trainctl::cli
