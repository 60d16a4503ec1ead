// `trainctl stacks` and describe's stacks section (cli/stacks_view.h): replicas that agree on
// their innermost frame grouped, the largest group first, the odd ones out alone, failures said.
#include "cli/stacks_view.h"

#include <catch2/catch.hpp>

namespace trainctl::cli {
namespace {

v1::ReplicaStacks At(const std::string& replica, const std::string& summary) {
  v1::ReplicaStacks s;
  s.set_replica(replica);
  s.set_summary(summary);
  s.set_reason("hung");
  s.set_attempt(2);
  return s;
}

TEST_CASE("stacks: replicas in the same frame are grouped, the largest group first") {
  v1::GetStacksResponse resp;
  resp.set_attempt(2);
  *resp.add_stacks() = At("chief-0", "all_reduce (distributed_c10d.py:2050)");
  *resp.add_stacks() = At("worker-0", "all_reduce (distributed_c10d.py:2050)");
  *resp.add_stacks() = At("worker-1", "load_batch (train.py:12)");
  *resp.add_stacks() = At("worker-2", "all_reduce (distributed_c10d.py:2050)");
  v1::ReplicaStacks failed = At("worker-3", "");
  failed.set_error("timed out after 10s");
  *resp.add_stacks() = failed;
  CHECK(StacksSummary(resp) ==
        "3 replicas in all_reduce (distributed_c10d.py:2050): chief-0, worker-0, worker-2\n"
        "worker-1 in load_batch (train.py:12)\n"
        "worker-3 no stacks: timed out after 10s\n");
  CHECK(RenderStacksSection("j-1", resp) ==
        "Stacks (attempt 2, captured before the stop: hung):\n"
        "  3 replicas in all_reduce (distributed_c10d.py:2050): chief-0, worker-0, worker-2\n"
        "  worker-1 in load_batch (train.py:12)\n"
        "  worker-3 no stacks: timed out after 10s\n"
        "  In full: trainctl stacks j-1\n");
  CHECK(RenderStacksSection("j-1", v1::GetStacksResponse()).empty());
}

TEST_CASE("stacks: a large group lists eight names and how many more") {
  v1::GetStacksResponse resp;
  for (int i = 0; i < 12; ++i) *resp.add_stacks() = At("w-" + std::to_string(i), "wait");
  CHECK(StacksSummary(resp) ==
        "12 replicas in wait: w-0, w-1, w-2, w-3, w-4, w-5, w-6, w-7 and 4 more\n");
}

TEST_CASE("stacks: the full view names each replica's run and prints every process's text") {
  v1::GetStacksResponse resp;
  v1::ReplicaStacks s = At("chief-0", "load_batch (train.py:3)");
  s.set_node("node-a");
  s.set_restart(1);
  s.mutable_took()->set_nanos(400'000'000);
  s.mutable_capture_time()->set_seconds(1'800'000'000);
  v1::ProcessStacks* p = s.add_processes();
  p->set_pid(7);
  p->set_command("/usr/bin/python3 train.py");
  p->set_summary("load_batch (train.py:3)");
  p->set_text("Traceback (most recent call first):\n  File \"train.py\", line 3, in load_batch");
  v1::ProcessStacks* q = s.add_processes();
  q->set_pid(8);
  q->set_command("/bin/sh");
  q->set_error("timed out after 10s");
  *resp.add_stacks() = s;
  const std::string text = RenderStacks(resp);
  CHECK_THAT(text, Catch::StartsWith("=== chief-0 (attempt 2, restart 1, node node-a): hung, "
                                     "captured 2027-01-15T08:00:00Z in 400ms\n"
                                     "in load_batch (train.py:3)\n"
                                     "--- pid 7: /usr/bin/python3 train.py (in load_batch "
                                     "(train.py:3))\nTraceback (most recent call first):\n"));
  CHECK_THAT(text, Catch::Contains("line 3, in load_batch\n--- pid 8: /bin/sh\n"
                                   "[timed out after 10s]\n"));
}

}  // namespace
}  // namespace trainctl::cli
