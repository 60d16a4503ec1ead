// The static CPU manager's placement, as pure logic: whole CPUs exclusive, the rest shared.
#include "agents/cpu_manager.h"

#include <catch2/catch.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace trainctl::agent {
namespace {

TEST_CASE("only whole CPU requests ask for exclusive CPUs", "[cpu_manager]") {
  struct Row {
    double cpu;
    int count;
  };
  const Row rows[] = {{0, 0}, {0.5, 0}, {1, 1}, {1.5, 0}, {2, 2}, {16, 16}, {-1, 0}, {2.0001, 0}};
  for (const Row& row : rows) {
    INFO("cpu " << row.cpu);
    CHECK(ExclusiveCpuCount(row.cpu) == row.count);
  }
}

TEST_CASE("the CPU policy flag value is none or static", "[cpu_manager]") {
  CHECK(*ParseCpuPolicy("none") == CpuPolicy::kNone);
  CHECK(*ParseCpuPolicy("static") == CpuPolicy::kStatic);
  absl::StatusOr<CpuPolicy> bad = ParseCpuPolicy("dynamic");
  REQUIRE_FALSE(bad.ok());
  CHECK(absl::IsInvalidArgument(bad.status()));
}

// One operation on the manager and what it must give.
struct Step {
  enum Op { kAllocate, kRelease, kRestore } op;
  std::string run;
  int count = 0;                                          // kAllocate
  std::set<int> cpus = {};                                // kRestore: what to restore
  std::optional<std::set<int>> allocated = std::nullopt;  // kAllocate: the expected result
  bool ok = true;                                         // kRelease, kRestore: the expected result
  std::set<int> shared = {};                              // the shared pool afterwards
};

struct Scenario {
  const char* requirement;
  std::set<int> cpus;
  int min_shared;
  std::vector<Step> steps;
};

TEST_CASE("the static CPU manager places runs on disjoint exclusive CPUs", "[cpu_manager]") {
  const std::set<int> eight = {0, 1, 2, 3, 4, 5, 6, 7};
  const Scenario scenarios[] = {
      {"two runs of 2 CPUs get disjoint exclusive CPUs, the lowest free first; the rest is shared",
       eight,
       1,
       {{Step::kAllocate, "a", 2, {}, std::set<int>{1, 2}, true, {0, 3, 4, 5, 6, 7}},
        {Step::kAllocate, "b", 2, {}, std::set<int>{3, 4}, true, {0, 5, 6, 7}}}},
      {"freed CPUs go back to the shared pool and are given out again",
       eight,
       1,
       {{Step::kAllocate, "a", 2, {}, std::set<int>{1, 2}, true, {0, 3, 4, 5, 6, 7}},
        {Step::kAllocate, "b", 3, {}, std::set<int>{3, 4, 5}, true, {0, 6, 7}},
        {Step::kRelease, "a", 0, {}, std::nullopt, true, {0, 1, 2, 6, 7}},
        {Step::kRelease, "a", 0, {}, std::nullopt, false, {0, 1, 2, 6, 7}},
        {Step::kAllocate, "c", 3, {}, std::set<int>{1, 2, 6}, true, {0, 7}}}},
      {"the always-shared CPUs are never given out: a run that needs them gets nothing",
       eight,
       3,
       {{Step::kAllocate, "a", 5, {}, std::set<int>{3, 4, 5, 6, 7}, true, {0, 1, 2}},
        {Step::kAllocate, "b", 1, {}, std::nullopt, true, {0, 1, 2}}}},
      {"a run asking for more than is left gets nothing and changes nothing",
       {0, 1, 2, 3},
       1,
       {{Step::kAllocate, "a", 2, {}, std::set<int>{1, 2}, true, {0, 3}},
        {Step::kAllocate, "b", 2, {}, std::nullopt, true, {0, 3}},
        {Step::kAllocate, "c", 1, {}, std::set<int>{3}, true, {0}}}},
      {"with 2 CPUs one stays shared",
       {0, 1},
       0,
       {{Step::kAllocate, "a", 1, {}, std::set<int>{1}, true, {0}},
        {Step::kAllocate, "b", 1, {}, std::nullopt, true, {0}}}},
      {"a run holds one allocation",
       eight,
       1,
       {{Step::kAllocate, "a", 1, {}, std::set<int>{1}, true, {0, 2, 3, 4, 5, 6, 7}},
        {Step::kAllocate, "a", 1, {}, std::nullopt, true, {0, 2, 3, 4, 5, 6, 7}}}},
      {"CPUs outside the affinity mask are never used",
       {2, 3, 6, 7},
       1,
       {{Step::kAllocate, "a", 2, {}, std::set<int>{3, 6}, true, {2, 7}}}},
      {"an adopted run gets its recorded CPUs back; new runs go around them",
       eight,
       1,
       {{Step::kRestore, "old", 0, {4, 5}, std::nullopt, true, {0, 1, 2, 3, 6, 7}},
        {Step::kAllocate, "a", 3, {}, std::set<int>{1, 2, 3}, true, {0, 6, 7}}}},
      {"recorded CPUs that are taken, always shared or not the agent's are not given back",
       eight,
       1,
       {{Step::kAllocate, "a", 2, {}, std::set<int>{1, 2}, true, {0, 3, 4, 5, 6, 7}},
        {Step::kRestore, "old1", 0, {2, 3}, std::nullopt, false, {0, 3, 4, 5, 6, 7}},
        {Step::kRestore, "old2", 0, {0}, std::nullopt, false, {0, 3, 4, 5, 6, 7}},
        {Step::kRestore, "old3", 0, {9}, std::nullopt, false, {0, 3, 4, 5, 6, 7}},
        {Step::kRestore, "old4", 0, {}, std::nullopt, false, {0, 3, 4, 5, 6, 7}}}},
  };
  for (const Scenario& scenario : scenarios) {
    INFO(scenario.requirement);
    StaticCpuManager manager(scenario.cpus, scenario.min_shared);
    for (size_t i = 0; i < scenario.steps.size(); ++i) {
      const Step& step = scenario.steps[i];
      INFO("step " << i << " run " << step.run);
      switch (step.op) {
        case Step::kAllocate:
          CHECK(manager.Allocate(step.run, step.count) == step.allocated);
          if (step.allocated) CHECK(manager.ExclusiveOf(step.run) == *step.allocated);
          break;
        case Step::kRelease:
          CHECK(manager.Release(step.run) == step.ok);
          CHECK(manager.ExclusiveOf(step.run).empty());
          break;
        case Step::kRestore:
          CHECK(manager.Restore(step.run, step.cpus) == step.ok);
          CHECK(manager.ExclusiveOf(step.run) == (step.ok ? step.cpus : std::set<int>()));
          break;
      }
      CHECK(manager.SharedPool() == step.shared);
    }
  }
}

}  // namespace
}  // namespace trainctl::agent
