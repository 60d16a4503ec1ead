// A job's attempt history across a trainctld restart: every attempt reads back as it was before,
// with the failure class, rule, replica, node, decision and budgets that ended it.
#include <signal.h>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "tests/common/proto_fill.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

// One chief that crashes with the transient exit code 134 on its first run and exits 0 on its
// second. With no in-place restarts, the crash retries the job.
constexpr char kHistoryJob[] = R"(
displayName: attempt-history
workerPools:
- name: chief
  replicaCount: 1
  command: [WORKLOAD, --fail-times, "1", --fail-code, "134"]
  resources: {memoryMb: 64}
scheduling:
  maxReplicaRestarts: 0
  maxJobRetries: 1
  retryBackoff: {initial: 100ms, max: 200ms}
faultTolerance: {jobRetryNum: 1}
)";

TEST_CASE("attempts keep their class, rule, replica, node, decision and budgets across a restart",
          "[integration][restart]") {
  // node-0 fails every preflight (a disk threshold no disk meets) and has the most free memory,
  // so the first attempt is placed there and re-dispatched before its replica ever runs. The
  // second attempt runs on node-1: the chief's first run crashes and the job is retried; the
  // third attempt's run succeeds.
  ClusterOptions o;
  o.agents = 2;
  o.agent_args[0] = {"--check-disk-root-gb", "1e9", "--memory-mb", "8192"};
  MiniCluster c(o);
  std::string id = c.Submit(c.Spec(kHistoryJob));
  v1::Job before = c.WaitForState(id, v1::JOB_STATE_SUCCEEDED, std::chrono::seconds(60));

  REQUIRE(before.attempts_size() == 3);
  const v1::Attempt& redispatched = before.attempts(0);
  CHECK(redispatched.failure_class() == "HOST_FAULT");
  CHECK(redispatched.matched_rule() == "faultTolerance.jobRetryNum");
  CHECK(redispatched.replica() == "chief-0");
  CHECK(redispatched.node() == "node-0");
  CHECK(redispatched.decision() == "REDISPATCH");
  CHECK(redispatched.budgets_left().redispatches() == 0);
  CHECK(redispatched.budgets_left().job_retries() == 1);
  const v1::Attempt& retried = before.attempts(1);
  CHECK(retried.failure_class() == "TRANSIENT");
  CHECK(retried.matched_rule() == "default: transient exit code 134");
  CHECK(retried.replica() == "chief-0");
  CHECK(retried.node() == "node-1");
  CHECK(retried.decision() == "RETRY_JOB");
  CHECK(retried.budgets_left().job_retries() == 0);
  CHECK(retried.budgets_left().redispatches() == 0);
  CHECK(before.attempts(2).state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(before.attempts(2).decision().empty());

  c.KillDaemon(SIGKILL);
  c.StartDaemon();
  v1::Job after = c.GetJob(id);

  REQUIRE(after.attempts_size() == before.attempts_size());
  for (int i = 0; i < before.attempts_size(); ++i) {
    INFO("attempt " << before.attempts(i).number() << ", field by field");
    CHECK(Differences(before.attempts(i), after.attempts(i)) == "");
  }
  for (int i = 0; i < 2; ++i) {
    const v1::Attempt& a = after.attempts(i);
    INFO("attempt " << a.number() << " after the restart: " << a.ShortDebugString());
    CHECK_FALSE(a.failure_class().empty());
    CHECK_FALSE(a.matched_rule().empty());
    CHECK_FALSE(a.replica().empty());
    CHECK_FALSE(a.node().empty());
    CHECK_FALSE(a.decision().empty());
    CHECK(a.has_budgets_left());
  }

  // What users read: describe tells the same story after the restart.
  CliResult describe = c.Cli({"describe", id});
  INFO(describe.out << describe.err);
  CHECK(describe.exit_code == 0);
  for (const char* want : {"HOST_FAULT", "faultTolerance.jobRetryNum", "REDISPATCH", "TRANSIENT",
                           "default: transient exit code 134", "RETRY_JOB"}) {
    CHECK(Contains(describe.out, want));
  }
}

}  // namespace
}  // namespace trainctl::testing
