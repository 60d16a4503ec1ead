// The allowed root a job's checkpoint directory lies under: chosen at submit, kept with the job,
// sent with each launch (LaunchReplica.checkpoint_root), and found again for a job an older
// trainctld stored without one.
#include <catch2/catch.hpp>

#include "model/model_proto.h"
#include "scheduler/core.h"
#include "scheduler/job_validation.h"
#include "tests/scheduler/core_fixture.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using namespace testing;

TEST_CASE("CheckpointRootOf picks the longest root the directory lies strictly under") {
  const std::vector<std::string> roots = {"/ckpt/", "/ckpt/teama", "/scratch"};
  CHECK(CheckpointRootOf("/ckpt/teama/run", roots) == "/ckpt/teama");
  CHECK(CheckpointRootOf("/ckpt/teamb/run", roots) == "/ckpt");
  CHECK(CheckpointRootOf("/ckpt/teama", roots) == "/ckpt");
  CHECK(CheckpointRootOf("/ckpt", roots).empty());
  CHECK(CheckpointRootOf("/etc/x", roots).empty());
  CHECK(CheckpointRootOf("/x", {"/"}) == "/");
}

TEST_CASE("a launch carries the allowed root of its job's checkpoint directory") {
  SECTION("the default directory lies under --checkpoint-root") {
    Fixture f;
    std::string id;
    std::vector<v1::LaunchReplica> launches = f.SubmitAndPlace(Spec(1), &id);
    REQUIRE(!launches.empty());
    CHECK(launches[0].checkpoint_dir() == "/ckpt/" + id);
    CHECK(launches[0].checkpoint_root() == "/ckpt");
    CHECK(f.Job(id).checkpoint_root() == "/ckpt");
  }
  SECTION("a job's own directory, under the longest allowed root") {
    CoreOptions options = TestOptions(42);
    options.checkpoint_allowed_roots = {"/mnt/ckpt/", "/mnt/ckpt/teama"};
    Core core(options);
    Effects fx;
    core.AgentRegistered(Reg("node-a"), FromMs(0), &fx);
    v1::JobSpec spec = Spec(0);
    spec.set_checkpoint_dir("/mnt/ckpt/teama/run/../esc/sub/");
    absl::StatusOr<const Job*> job = core.SubmitJob(spec, FromMs(0), &fx);
    REQUIRE(job.ok());
    // As a trainctld older than the root stored it (still QUEUED).
    v1::Job stored = ToProto(**job);
    stored.clear_checkpoint_root();
    core.Schedule(FromMs(0), &fx);
    std::vector<v1::LaunchReplica> launches = Launches(fx);
    REQUIRE(launches.size() == 1);
    CHECK(launches[0].checkpoint_dir() == "/mnt/ckpt/teama/esc/sub");
    CHECK(launches[0].checkpoint_root() == "/mnt/ckpt/teama");

    CheckUsageOnExit(core);

    // Its root is found again when the job is loaded.
    Core restored(options);
    restored.Restore({*JobFromProto(stored)}, {}, {});
    CHECK(restored.FindJob(stored.id())->checkpoint_root == "/mnt/ckpt/teama");
  }
}

}  // namespace
}  // namespace trainctl::sched
