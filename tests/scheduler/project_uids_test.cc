// Each project's replica uid (scheduler/project_uids.h): the lowest free one of the range, kept by
// its project, never shared, and a clear error when the range is full; the core gives it at a
// project's first submit and sends it in every launch.
#include "scheduler/project_uids.h"

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "tests/scheduler/core_fixture.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using namespace testing;

uint32_t UidOf(ProjectUids& uids, const std::string& project, bool* fresh = nullptr) {
  absl::StatusOr<ProjectUids::Allocation> a = uids.Allocate(project);
  REQUIRE(a.ok());
  if (fresh != nullptr) *fresh = a->fresh;
  return a->uid;
}

TEST_CASE("ProjectUids: the lowest free uid, kept by its project", "[project_uids]") {
  ProjectUids uids(UidRange{70000, 70009});
  bool fresh = false;
  CHECK(UidOf(uids, "team-a", &fresh) == 70000);
  CHECK(fresh);
  CHECK(UidOf(uids, "team-b") == 70001);
  CHECK(UidOf(uids, "team-a", &fresh) == 70000);  // the same project keeps its uid
  CHECK_FALSE(fresh);
  CHECK(uids.Find("team-b") == 70001u);
  CHECK_FALSE(uids.Find("team-c").has_value());
}

TEST_CASE("ProjectUids: stored uids are kept, and the gaps between them filled first",
          "[project_uids]") {
  ProjectUids uids(UidRange{70000, 70009});
  // 70001 and 70003 are taken; one project's uid lies outside today's range (it shrank).
  uids.Restore({{"old-a", 70001}, {"old-b", 70003}, {"moved", 65600}});
  CHECK(UidOf(uids, "old-b") == 70003);
  CHECK(UidOf(uids, "moved") == 65600);
  CHECK(UidOf(uids, "new-1") == 70000);
  CHECK(UidOf(uids, "new-2") == 70002);
  CHECK(UidOf(uids, "new-3") == 70004);
}

TEST_CASE("ProjectUids: a full range is an error that names it and the flag", "[project_uids]") {
  ProjectUids uids(UidRange{70000, 70001});
  CHECK(UidOf(uids, "team-a") == 70000);
  CHECK(UidOf(uids, "team-b") == 70001);
  absl::StatusOr<ProjectUids::Allocation> full = uids.Allocate("team-c");
  REQUIRE_FALSE(full.ok());
  CHECK(full.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(full.status().message() ==
        "no replica uid left for project team-c: every uid of --replica-uid-range 70000-70001 "
        "belongs to another project; widen trainctld's --replica-uid-range and restart it");
  CHECK_FALSE(uids.Find("team-c").has_value());
  // Projects that have one still get it.
  CHECK(UidOf(uids, "team-b") == 70001);
}

TEST_CASE("ParseUidRange takes FIRST-LAST clear of system ids, nobody and uids past 2^31 - 2",
          "[project_uids]") {
  absl::StatusOr<UidRange> ok = ParseUidRange("--replica-uid-range", "65536-99999");
  REQUIRE(ok.ok());
  CHECK(ok->first == 65536);
  CHECK(ok->last == 99999);
  CHECK(ok->ToString() == "65536-99999");
  CHECK(UidRange{}.ToString() == "65536-99999");  // the default
  for (const char* bad :
       {"", "5", "9-5", "0-10", "1-999", "999-2000", "a-b", "1000-2147483647", "-5", "5-"}) {
    INFO(bad);
    absl::StatusOr<UidRange> r = ParseUidRange("--replica-uid-range", bad);
    REQUIRE_FALSE(r.ok());
    CHECK(absl::StartsWith(r.status().message(), "--replica-uid-range: expected FIRST-LAST"));
  }
  CHECK(ParseUidRange("--replica-uid-range", "60000-70000").status().message() ==
        "--replica-uid-range: the range 60000-70000 holds 65534 (nobody); choose one without it");
  CHECK(ParseUidRange("--replica-uid-range", "65535-70000").status().message() ==
        "--replica-uid-range: the range 65535-70000 holds 65535 (-1 as a 16-bit id); choose one "
        "without it");
}

v1::JobSpec SpecOf(const std::string& project) {
  v1::JobSpec spec = Spec(0);
  spec.set_project(project);
  return spec;
}

TEST_CASE("a project's first submit gives it a uid, which each launch of its jobs carries",
          "[project_uids]") {
  Fixture f;
  Effects fx;
  const std::string a1 = f.Submit(SpecOf("team-a"), &fx).id();
  CHECK(fx.project_uids == std::set<std::string>{"team-a"});
  CHECK(f.core.ProjectUid("team-a") == 65536u);
  CHECK(f.core.GetProject("team-a")->replica_uid() == 65536);

  Effects second;
  f.Submit(SpecOf("team-a"), &second);
  f.Submit(SpecOf("team-b"), &second);
  CHECK(second.project_uids == std::set<std::string>{"team-b"});  // team-a's is stored already
  CHECK(f.core.ProjectUid("team-b") == 65537u);

  Effects placed;
  f.core.Schedule(FromMs(f.now), &placed);
  std::vector<v1::LaunchReplica> launches = Launches(placed);
  REQUIRE(launches.size() == 3);
  for (const v1::LaunchReplica& l : launches) {
    INFO(l.run_id());
    CHECK(l.project_uid() == (l.project() == "team-a" ? 65536u : 65537u));
  }
  CHECK(placed.project_uids.empty());
}

TEST_CASE("a job refused at submit gives its project no uid, a full range refuses the submit",
          "[project_uids]") {
  CoreOptions options = TestOptions(42);
  options.replica_uid_range = UidRange{70000, 70000};
  Core core(options);
  Effects fx;
  core.AgentRegistered(Reg("node-a"), FromMs(1000), &fx);

  v1::JobSpec bad = SpecOf("team-x");
  bad.mutable_worker_pools(0)->set_replica_count(0);
  CHECK_FALSE(core.SubmitJob(bad, FromMs(1000), &fx).ok());
  CHECK_FALSE(core.ProjectUid("team-x").has_value());

  REQUIRE(core.SubmitJob(SpecOf("team-a"), FromMs(1000), &fx).ok());
  absl::StatusOr<const Job*> full = core.SubmitJob(SpecOf("team-b"), FromMs(1000), &fx);
  REQUIRE_FALSE(full.ok());
  CHECK(full.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(absl::StrContains(full.status().message(), "no replica uid left for project team-b"));
  CHECK(fx.project_uids == std::set<std::string>{"team-a"});
}

TEST_CASE("a job of a project without a uid (submitted before uids) gets one at its launch",
          "[project_uids]") {
  Fixture f;
  Effects fx;
  f.Submit(SpecOf("team-a"), &fx);
  // As after an upgrade: the job is stored, its project has no uid yet.
  f.core.RestoreProjectUids({});
  Effects placed;
  f.core.Schedule(FromMs(f.now), &placed);
  std::vector<v1::LaunchReplica> launches = Launches(placed);
  REQUIRE(!launches.empty());
  CHECK(launches[0].project_uid() == 65536u);
  CHECK(placed.project_uids == std::set<std::string>{"team-a"});
}

}  // namespace
}  // namespace trainctl::sched
