// Elastic pools through the core with a fake clock: a replica that must leave a lost host and
// finds no room waits scheduling.elasticWait, then its pool shrinks and the gang starts again with
// fewer replicas (WORLD_SIZE, dense ranks, names kept, nothing charged); room within the wait
// moves it instead; a pool at its minimum re-dispatches as before; removed replicas come back at
// the next gang restart with room or at ResizeJob; a new attempt runs every replica again.
#include "scheduler/elastic.h"

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "common/time_util.h"
#include "scheduler/core.h"
#include "scheduler/invariants.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using namespace testing;

constexpr int64_t kLostTimeoutMs = 10'000;
constexpr int64_t kWaitMs = 60'000;

// A running GANG job on four 4-cpu nodes: a chief and three workers of 4 cpus each, one per node,
// the worker pool elastic with minReplicas `min`. Nodes are heard from by hand (Heartbeats).
struct Elastic {
  Core core;
  int64_t now = 1'000'000;
  std::string id;
  std::vector<std::string> nodes = {"n1", "n2", "n3", "n4"};
  const int gpus;
  ~Elastic() { CheckUsageOnExit(core); }

  static CoreOptions Options() {
    CoreOptions o = TestOptions(7);
    o.nodes.lost_timeout = absl::Milliseconds(kLostTimeoutMs);
    return o;
  }

  // Every node has `gpus` GPUs, and every replica needs them all.
  explicit Elastic(int min = 2, const std::function<void(v1::JobSpec*)>& edit = nullptr,
                   int gpus = 0)
      : core(Options()), gpus(gpus) {
    Effects fx;
    for (const std::string& n : nodes)
      core.AgentRegistered(Reg(n, 4, 4096, gpus), FromMs(now), &fx);
    v1::JobSpec spec = Spec(3, /*cpu=*/4, /*mem=*/100, gpus);
    spec.mutable_worker_pools(1)->mutable_elastic()->set_min_replicas(min);
    if (edit) edit(&spec);
    absl::StatusOr<const sched::Job*> job = core.SubmitJob(spec, FromMs(now), &fx);
    REQUIRE(job.ok());
    id = (*job)->id;
    core.Schedule(FromMs(now), &fx);
    StartAll(Launches(fx));
    REQUIRE(Job().state == v1::JOB_STATE_RUNNING);
  }

  const sched::Job& Job() { return *core.FindJob(id); }
  const Replica& R(const std::string& name) { return *Job().FindReplica(name); }

  void StartAll(const std::vector<v1::LaunchReplica>& launches) {
    for (const v1::LaunchReplica& l : launches) {
      Effects fx;
      core.ReplicaStarted(R(l.replica_name()).node, Started(l.run_id()), FromMs(now), &fx);
    }
  }
  // Every node but `silent` sends a heartbeat now.
  void Heartbeats(const std::set<std::string>& silent) {
    Effects fx;
    for (const std::string& n : nodes) {
      if (silent.count(n) == 0) core.Heartbeat(n, FromMs(now), &fx);
    }
  }
  Effects Tick() {
    Effects fx;
    core.Tick(FromMs(now), &fx);
    core.Schedule(FromMs(now), &fx);
    return fx;
  }
  // The node of `replica` goes silent past the lost timeout: its replicas move.
  Effects Lose(const std::string& replica) {
    const std::string lost = R(replica).node;
    lost_.insert(lost);
    now += kLostTimeoutMs + 2'000;  // the lost timeout and its fence margin
    Heartbeats(lost_);
    return Tick();
  }
  // Time passes; the nodes not lost keep sending heartbeats.
  Effects Advance(int64_t ms) {
    now += ms;
    Heartbeats(lost_);
    return Tick();
  }
  // The agents confirm every stop they were sent.
  Effects ConfirmStops(const Effects& sent) { return testing::ConfirmStops(core, id, sent, now); }
  void Register(const std::string& node) {
    Effects fx;
    core.AgentRegistered(Reg(node, 4, 4096, gpus), FromMs(now), &fx);
    nodes.push_back(node);
  }

 private:
  std::set<std::string> lost_;
};

// Each launch's replica name -> its environment.
std::map<std::string, std::map<std::string, std::string>> Envs(
    const std::vector<v1::LaunchReplica>& launches) {
  std::map<std::string, std::map<std::string, std::string>> out;
  for (const v1::LaunchReplica& l : launches) {
    out[l.replica_name()] = {l.env().begin(), l.env().end()};
  }
  return out;
}

}  // namespace

TEST_CASE("elastic: a lost host shrinks the pool after elasticWait, ranks dense, nothing charged") {
  Elastic e;
  const std::string lost = e.R("worker-1").node;
  const Effects lose = e.Lose("worker-1");
  // Every node is full: worker-1 waits for room while the others stop.
  CHECK(e.Job().gang_restarting);
  CHECK(e.R("worker-1").state == v1::REPLICA_STATE_PENDING);
  REQUIRE(e.R("worker-1").elastic_wait_until.has_value());
  CHECK(*e.R("worker-1").elastic_wait_until == FromMs(e.now + kWaitMs));
  CHECK(HasEvent(lose, "ReplicaWaitingForRoom", "minReplicas 2"));
  CHECK(Stops(lose).size() == 3);
  const Effects stopped = e.ConfirmStops(lose);
  CHECK(Launches(stopped).empty());  // the gang waits for worker-1's wait to end
  CHECK(e.Job().state == v1::JOB_STATE_RUNNING);

  CHECK(Launches(e.Advance(kWaitMs - 1'000)).empty());  // still within the wait
  const Effects shrink = e.Advance(1'000);
  CHECK(e.R("worker-1").state == v1::REPLICA_STATE_REMOVED);
  CHECK(e.R("worker-1").rank == -1);
  CHECK(e.R("worker-1").port == 0);
  CHECK(
      HasEvent(shrink, "JobResized", "pool worker shrank from 3 to 2 replicas (worker-1 removed"));
  const std::vector<v1::LaunchReplica> launches = Launches(shrink);
  REQUIRE(launches.size() == 3);
  auto env = Envs(launches);
  CHECK(env.count("worker-1") == 0);
  CHECK(env["chief-0"]["RANK"] == "0");
  CHECK(env["worker-0"]["RANK"] == "1");
  CHECK(env["worker-2"]["RANK"] == "2");  // renumbered from 3; its name stays
  for (auto& [name, vars] : env) {
    CHECK(vars["WORLD_SIZE"] == "3");
    CHECK(vars["TRAINCTL_GANG_GENERATION"] == "1");
    CHECK(vars["TRAINCTL_CHECKPOINT_DIR"] == e.Job().checkpoint_dir);
  }
  // The cluster specs list two workers; worker-2 is the second.
  CHECK_THAT(env["worker-2"]["TF_CONFIG"], Catch::Contains("\"index\":1"));
  CHECK_THAT(env["worker-2"]["TRAINCTL_CLUSTER_SPEC"],
             !Catch::Contains(absl::StrCat("\"", lost, ".local")));

  const Attempt& a = e.Job().attempts.back();
  REQUIRE(a.resizes.size() == 1);
  CHECK(a.resizes[0].pool == "worker");
  CHECK(a.resizes[0].from_replicas == 3);
  CHECK(a.resizes[0].to_replicas == 2);
  CHECK(a.resizes[0].world_size == 3);
  CHECK(a.resizes[0].replicas == std::vector<std::string>{"worker-1"});
  CHECK(a.resizes[0].generation == 1);
  CHECK(e.Job().budgets_used == Budgets{});
  for (const Replica& r : e.Job().replicas) CHECK(r.charged_restarts == 0);

  e.StartAll(launches);
  CHECK(e.Job().state == v1::JOB_STATE_RUNNING);
  CHECK(e.Job().gang_generation == 1);
}

TEST_CASE("elastic: room within elasticWait moves the replica instead of shrinking the pool") {
  Elastic e;
  const Effects lose = e.Lose("worker-1");
  e.ConfirmStops(lose);
  e.Register("n5");
  const Effects tick = e.Advance(5'000);
  CHECK(e.R("worker-1").node == "n5");
  CHECK(!e.R("worker-1").elastic_wait_until.has_value());
  const std::vector<v1::LaunchReplica> launches = Launches(tick);
  REQUIRE(launches.size() == 4);
  for (auto& [name, vars] : Envs(launches)) CHECK(vars["WORLD_SIZE"] == "4");
  CHECK(Envs(launches)["worker-1"]["RANK"] == "2");
  CHECK(e.Job().attempts.back().resizes.empty());
  CHECK(HasEvent(tick, "ReplicaMoved", "to n5"));
}

// A replica waiting for room has left its node: it holds no GPUs there (the invariant of every
// PENDING replica), and gets new ones where it moves.
TEST_CASE("elastic: a replica waiting for room gives up its node's GPUs and ports") {
  Elastic e(/*min=*/2, nullptr, /*gpus=*/2);
  REQUIRE(e.R("worker-1").gpu_devices.size() == 2);
  const Effects lose = e.Lose("worker-1");
  REQUIRE(e.R("worker-1").state == v1::REPLICA_STATE_PENDING);
  CHECK(e.R("worker-1").gpu_devices.empty());
  CHECK(e.R("worker-1").port == 0);
  CHECK(CheckInvariants(e.core).ok());
  e.ConfirmStops(lose);
  e.Register("n5");
  const Effects tick = e.Advance(5'000);
  CHECK(e.R("worker-1").node == "n5");
  CHECK(e.R("worker-1").gpu_devices == std::vector<int32_t>{0, 1});
  CHECK(Launches(tick).size() == 4);
  CHECK(CheckInvariants(e.core).ok());
}

TEST_CASE(
    "elastic: a stopping replica whose node fails a check waits for room, then the pool "
    "shrinks") {
  Elastic e;
  const std::string bad = e.R("worker-1").node;
  v1::ReplicaExited crash = ExitedCode(e.Job().RunIdOf(e.R("worker-0")), 134);
  crash.set_end_time_ms(e.now);
  Effects fx;
  e.core.ReplicaExited(e.R("worker-0").node, crash, FromMs(e.now), &fx);
  REQUIRE(e.R("worker-1").state == v1::REPLICA_STATE_STOPPING);
  // worker-1's node fails a periodic check while worker-1 stops for the gang restart.
  v1::CheckRun failed;
  failed.set_phase("periodic");
  failed.set_passed(false);
  *failed.mutable_time() = MsToTimestamp(e.now);
  Effects check;
  e.core.CheckReported(bad, failed, FromMs(e.now), &check);
  const Effects stopped = e.ConfirmStops(fx);
  CHECK(Launches(stopped).empty());  // nothing launches while worker-1 waits for room
  CHECK(HasEvent(stopped, "ReplicaWaitingForRoom", "minReplicas 2"));
  CHECK(e.R("worker-1").state == v1::REPLICA_STATE_PENDING);
  const Effects shrink = e.Advance(kWaitMs);
  CHECK(e.R("worker-1").state == v1::REPLICA_STATE_REMOVED);
  const std::vector<v1::LaunchReplica> launches = Launches(shrink);
  REQUIRE(launches.size() == 3);
  for (auto& [name, vars] : Envs(launches)) CHECK(vars["WORLD_SIZE"] == "3");
}

TEST_CASE("elastic: a pool at its minimum does not wait, the job is re-dispatched as before") {
  Elastic e(/*min=*/3);
  const Effects lose = e.Lose("worker-1");
  CHECK(!HasEvent(lose, "ReplicaWaitingForRoom"));
  CHECK(e.Job().state == v1::JOB_STATE_QUEUED);
  CHECK(e.Job().attempts.back().decision == Decision::kRedispatch);
}

TEST_CASE("elastic: two replicas wait when the pool may lose both, a third does not") {
  // Workers of 2 cpus: two per node. Losing the node of two workers leaves 4 of 6, at min 4.
  Elastic e(/*min=*/4, [](v1::JobSpec* spec) {
    spec->mutable_worker_pools(1)->set_replica_count(6);
    spec->mutable_worker_pools(1)->mutable_resources()->set_cpu(2);
  });
  std::map<std::string, int> per_node;
  for (const Replica& r : e.Job().replicas) per_node[r.node]++;
  // The fullest worker node holds two workers.
  std::string two;
  for (const Replica& r : e.Job().replicas) {
    if (r.pool == "worker" && per_node[r.node] == 2 && two.empty()) two = r.name;
  }
  REQUIRE(!two.empty());
  const Effects lose = e.Lose(two);
  int waiting = 0;
  for (const Replica& r : e.Job().replicas) waiting += r.elastic_wait_until.has_value();
  CHECK(waiting == 2);
  e.ConfirmStops(lose);
  const Effects shrink = e.Advance(kWaitMs);
  CHECK(WorldSize(e.Job()) == 5);
  CHECK(HasEvent(shrink, "JobResized", "from 6 to 4 replicas"));
  REQUIRE(Launches(shrink).size() == 5);
  std::set<std::string> ranks;
  for (auto& [name, vars] : Envs(Launches(shrink))) ranks.insert(vars["RANK"]);
  CHECK(ranks == std::set<std::string>{"0", "1", "2", "3", "4"});
}

TEST_CASE("elastic: removed replicas come back at the next gang restart that has room") {
  Elastic e;
  e.ConfirmStops(e.Lose("worker-1"));
  e.StartAll(Launches(e.Advance(kWaitMs)));
  REQUIRE(WorldSize(e.Job()) == 3);
  e.Register("n5");
  // worker-0 crashes (transient): its gang restart grows the pool back.
  v1::ReplicaExited crash = ExitedCode(e.Job().RunIdOf(e.R("worker-0")), 134);
  crash.set_end_time_ms(e.now);
  Effects fx;
  e.core.ReplicaExited(e.R("worker-0").node, crash, FromMs(e.now), &fx);
  CHECK(Launches(e.ConfirmStops(fx)).empty());
  // worker-0's second restart in the attempt waits its backoff (1s); the gang grows as it starts.
  const Effects grow = e.Advance(1'000);
  CHECK(HasEvent(grow, "JobResized", "pool worker grew from 2 to 3 replicas (worker-1 added"));
  const std::vector<v1::LaunchReplica> launches = Launches(grow);
  REQUIRE(launches.size() == 4);
  CHECK(e.R("worker-1").node == "n5");
  CHECK(e.R("worker-1").rank == 2);
  CHECK(e.R("worker-2").rank == 3);
  for (auto& [name, vars] : Envs(launches)) CHECK(vars["WORLD_SIZE"] == "4");
  CHECK(e.Job().attempts.back().resizes.size() == 2);
}

TEST_CASE("elastic: ResizeJob restarts the gang to grow it, and says why when it cannot") {
  Elastic e;
  // Full size: nothing to grow.
  Effects fx;
  CHECK(e.core.ResizeJob(e.id, "alice", FromMs(e.now), &fx).status().message() ==
        absl::StrCat("job ", e.id, " already runs all 4 replicas of its spec"));
  CHECK(absl::IsNotFound(e.core.ResizeJob("j-nope", "alice", FromMs(e.now), &fx).status()));

  e.ConfirmStops(e.Lose("worker-1"));
  // While the gang restarts, a resize waits for it.
  CHECK_THAT(std::string(e.core.ResizeJob(e.id, "alice", FromMs(e.now), &fx).status().message()),
             Catch::Contains("restarting already"));
  e.StartAll(Launches(e.Advance(kWaitMs)));
  // No room anywhere: the error names what worker-1 needs.
  absl::StatusOr<const sched::Job*> no_room = e.core.ResizeJob(e.id, "alice", FromMs(e.now), &fx);
  CHECK(absl::IsFailedPrecondition(no_room.status()));
  CHECK_THAT(std::string(no_room.status().message()),
             Catch::StartsWith(absl::StrCat("no node has room for a removed replica of job ", e.id,
                                            ": worker-1 needs 4 cpu")));

  e.Register("n5");
  Effects resize;
  REQUIRE(e.core.ResizeJob(e.id, "alice", FromMs(e.now), &resize).ok());
  CHECK(HasEvent(resize, "GangRestarting", "a resize requested by alice"));
  CHECK(Stops(resize).size() == 3);
  const Effects grow = e.ConfirmStops(resize);
  REQUIRE(Launches(grow).size() == 4);
  CHECK(e.R("worker-1").node == "n5");
  CHECK(e.Job().budgets_used == Budgets{});
  const std::vector<GangRestart>& restarts = e.Job().attempts.back().gang_restarts;
  REQUIRE(!restarts.empty());
  CHECK(!restarts.back().charged);
  CHECK(restarts.back().matched_rule == "resize");

  // A job without an elastic pool.
  Effects other;
  const sched::Job* plain = *e.core.SubmitJob(Spec(1), FromMs(e.now), &other);
  CHECK_THAT(std::string(e.core.ResizeJob(plain->id, "", FromMs(e.now), &other).status().message()),
             Catch::Contains("has no elastic pool"));
}

TEST_CASE("elastic: a new attempt runs every replica of the spec again") {
  Elastic e(2, [](v1::JobSpec* spec) {
    v1::ExitCodeRule* rule = spec->mutable_scheduling()->add_exit_code_rules();
    rule->add_exit_codes(7);
    rule->set_action(v1::FAILURE_ACTION_RETRY_JOB);
  });
  e.ConfirmStops(e.Lose("worker-1"));
  e.StartAll(Launches(e.Advance(kWaitMs)));
  REQUIRE(WorldSize(e.Job()) == 3);
  v1::ReplicaExited exit7 = ExitedCode(e.Job().RunIdOf(e.R("chief-0")), 7);
  exit7.set_end_time_ms(e.now);
  Effects fx;
  e.core.ReplicaExited(e.R("chief-0").node, exit7, FromMs(e.now), &fx);
  // A user's exit of a GANG job waits the settle window (3s), then the job retries.
  e.ConfirmStops(e.Advance(3'000));
  REQUIRE(e.Job().state == v1::JOB_STATE_QUEUED);
  CHECK(WorldSize(e.Job()) == 4);
  CHECK(e.R("worker-1").state == v1::REPLICA_STATE_PENDING);
  CHECK(e.R("worker-1").rank == 2);
  // Three nodes have room for three of the four: it waits for a fourth.
  e.Register("n5");
  const Effects placed = e.Advance(10 * 60'000);
  REQUIRE(Launches(placed).size() == 4);
  for (auto& [name, vars] : Envs(Launches(placed))) CHECK(vars["WORLD_SIZE"] == "4");
}

TEST_CASE("elastic: specs are validated with the field and the reason") {
  struct Row {
    const char* name;
    std::function<void(v1::JobSpec*)> edit;
    const char* error;  // "" when valid
  };
  const std::vector<Row> rows = {
      {"pool 0 cannot be elastic",
       [](v1::JobSpec* s) { s->mutable_worker_pools(0)->mutable_elastic()->set_min_replicas(1); },
       "workerPools[0].elastic is not allowed: pool 0 holds the primary replica, which never "
       "leaves"},
      {"minReplicas 0",
       [](v1::JobSpec* s) { s->mutable_worker_pools(1)->mutable_elastic()->set_min_replicas(0); },
       "workerPools[1].elastic.minReplicas must be 1..3 (the pool's replicaCount), got 0"},
      {"minReplicas above replicaCount",
       [](v1::JobSpec* s) { s->mutable_worker_pools(1)->mutable_elastic()->set_min_replicas(4); },
       "workerPools[1].elastic.minReplicas must be 1..3 (the pool's replicaCount), got 4"},
      {"REPLICA scope",
       [](v1::JobSpec* s) {
         s->mutable_worker_pools(1)->mutable_elastic()->set_min_replicas(1);
         s->mutable_scheduling()->set_restart_scope(v1::RESTART_SCOPE_REPLICA);
       },
       "scheduling.restartScope must be GANG for a job with an elastic pool: a change of the "
       "world size restarts every replica"},
      {"elasticWait without an elastic pool",
       [](v1::JobSpec* s) { *s->mutable_scheduling()->mutable_elastic_wait() = MsToDuration(1); },
       "scheduling.elasticWait applies only to jobs with an elastic pool "
       "(workerPools[].elastic)"},
      {"elasticWait over 24h",
       [](v1::JobSpec* s) {
         s->mutable_worker_pools(1)->mutable_elastic()->set_min_replicas(1);
         s->mutable_scheduling()->mutable_elastic_wait()->set_seconds(86401);
       },
       "scheduling.elasticWait must be between 0s and 86400s, got 86401s and 0ns"},
      {"a valid elastic pool",
       [](v1::JobSpec* s) { s->mutable_worker_pools(1)->mutable_elastic()->set_min_replicas(3); },
       ""},
  };
  for (const Row& row : rows) {
    SECTION(row.name) {
      Core core{TestOptions(3)};
      v1::JobSpec spec = Spec(3);
      row.edit(&spec);
      Effects fx;
      absl::StatusOr<const sched::Job*> job = core.SubmitJob(spec, FromMs(1), &fx);
      if (std::string(row.error).empty()) {
        REQUIRE(job.ok());
        // The default wait is filled in, as every default is.
        CHECK(DurationToMs((*job)->spec.scheduling().elastic_wait()) == kDefaultElasticWaitMs);
      } else {
        CHECK(absl::IsInvalidArgument(job.status()));
        CHECK(job.status().message() == row.error);
      }
    }
  }
}

}  // namespace trainctl::sched
