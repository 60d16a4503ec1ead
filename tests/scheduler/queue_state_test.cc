// The pure explanations of a queued job (scheduler/queue_state.h) over QueueState literals: its
// blockers, its place in line, its project, and what a cohort can lend.
#include "scheduler/queue_state.h"

#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/model_proto.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

Quota GpuQuota(int gpus, const std::string& cohort = "", int borrow = 0) {
  Quota q;
  q.gpus = gpus;
  q.cohort = cohort;
  if (borrow > 0) {
    q.borrowing_limit.gpus = borrow;
    q.has_borrowing_limit = true;
  }
  return q;
}

// A queued job of project "p" with one replica needing `gpus`.
QueuedJob Waiting(const std::string& id, int gpus) {
  QueuedJob j;
  j.id = id;
  j.project = "p";
  j.demands = {{"chief-0", {1, 100, gpus}}};
  return j;
}

std::vector<std::string> Kinds(const std::vector<v1::Blocker>& blockers) {
  std::vector<std::string> kinds;
  for (const v1::Blocker& b : blockers) kinds.push_back(b.kind());
  return kinds;
}

// One node with 8 gpus free; project p's quota is 4 gpus, 2 of them in use by one job.
QueueState State() {
  QueueState s;
  s.quotas["p"] = GpuQuota(4);
  s.usage["p"] = ProjectUsage{{1, 100, 2}, 1};
  s.free = {{"node-a", {8, 8192, 8}}};
  return s;
}

TEST_CASE("BlockersOf names every blocker, in a fixed order") {
  struct Row {
    const char* what;  // the situation and the requirement it proves
    std::function<void(QueueState*, QueuedJob*)> edit;
    std::vector<std::string> kinds;
    const char* first_message;
  };
  const Row rows[] = {
      {"fits: nothing blocks", [](QueueState*, QueuedJob*) {}, {}, nullptr},
      {"R5: a retry within its backoff",
       [](QueueState*, QueuedJob* j) {
         j->attempts = 1;
         j->next_attempt_time = kT0 + absl::Seconds(10);
       },
       {"BACKOFF"},
       "BACKOFF: attempt 2 waits for its retry backoff until 1970-01-01T00:16:50Z"},
      {"a backoff that has ended blocks nothing",
       [](QueueState*, QueuedJob* j) {
         j->attempts = 1;
         j->next_attempt_time = kT0;
       },
       {},
       nullptr},
      {"a retry whose last attempt still stops",
       [](QueueState*, QueuedJob* j) {
         j->attempts = 3;
         j->stopping = true;
       },
       {"STOPPING"},
       "STOPPING: attempt 3's replicas are still stopping"},
      {"R1: the quota is in use",
       [](QueueState*, QueuedJob* j) { j->demands[0].need.gpus = 3; },
       {"QUOTA"},
       "QUOTA: project p needs 3 gpus, 2 of 4 in use by 1 job"},
      {"no node is connected and READY",
       [](QueueState* s, QueuedJob*) { s->free.clear(); },
       {"NO_NODES"},
       "NO_NODES: no node is connected and READY"},
      {"the free nodes cannot hold the gang",
       [](QueueState* s, QueuedJob*) { s->free[0].free.gpus = 1; },
       {"CAPACITY"},
       "CAPACITY: no node has 2 free gpus for chief-0 (most free: 1 on node-a)"},
      {"all at once, in order",
       [](QueueState* s, QueuedJob* j) {
         j->attempts = 1;
         j->next_attempt_time = kT0 + absl::Seconds(10);
         j->stopping = true;
         j->demands[0].need.gpus = 3;
         s->free.clear();
       },
       {"BACKOFF", "STOPPING", "QUOTA", "NO_NODES"},
       nullptr},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    QueueState state = State();
    QueuedJob job = Waiting("j-a", 2);
    row.edit(&state, &job);
    const std::vector<v1::Blocker> blockers = BlockersOf(state, job, kT0);
    CHECK(Kinds(blockers) == row.kinds);
    if (row.first_message != nullptr && !blockers.empty()) {
      CHECK(blockers[0].message() == row.first_message);
    }
  }
}

TEST_CASE("QueueStatusOf gives the place in line and the jobs ahead, at most 10 by name") {
  QueueState state = State();
  std::vector<std::string> ids;
  for (int i = 0; i < 12; ++i) ids.push_back("j-" + std::to_string(i));
  state.order = MakeQueueOrder({{"p", ids}});

  const v1::QueueStatus first = QueueStatusOf(state, Waiting("j-0", 1), kT0);
  CHECK(first.position() == 1);
  CHECK(first.jobs_ahead_count() == 0);
  CHECK(first.blockers_size() == 0);

  const v1::QueueStatus second = QueueStatusOf(state, Waiting("j-1", 1), kT0);
  CHECK(second.position() == 2);
  REQUIRE(second.blockers_size() == 1);
  CHECK(second.blockers(0).kind() == "PRIORITY");
  CHECK(second.blockers(0).jobs() == 1);
  CHECK(second.blockers(0).message() == "PRIORITY: 1 job ahead in p");

  const v1::QueueStatus last = QueueStatusOf(state, Waiting("j-11", 3), kT0);
  CHECK(last.position() == 12);
  CHECK(last.jobs_ahead_count() == 11);
  CHECK(last.jobs_ahead_size() == 10);
  CHECK(last.jobs_ahead(0) == "j-0");
  // PRIORITY comes after the blockers of BlockersOf.
  CHECK(Kinds({last.blockers().begin(), last.blockers().end()}) ==
        std::vector<std::string>{"QUOTA", "PRIORITY"});
  CHECK(last.blockers(1).message() == "PRIORITY: 11 jobs ahead in p");
}

TEST_CASE("ProjectOf: the effective quota, usage, queued jobs and what it borrows") {
  QueueState state = State();
  state.default_quota = GpuQuota(1);
  state.quotas["p"] = GpuQuota(1, "c", 4);
  state.usage["p"].used.gpus = 3;
  state.order = MakeQueueOrder({{"p", {"j-a", "j-b"}}});

  const v1::Project p = ProjectOf(state, "p");
  CHECK(p.name() == "p");
  CHECK_FALSE(p.default_quota());
  CHECK(p.quota().project() == "p");
  CHECK(p.in_use().gpus() == 3);
  CHECK(p.running_jobs() == 1);
  CHECK(p.queued_jobs() == 2);
  CHECK(p.borrowed().gpus() == 2);

  const v1::Project fresh = ProjectOf(state, "fresh");
  CHECK(fresh.default_quota());
  CHECK(fresh.quota().project() == "fresh");  // the default, named for it
  CHECK(fresh.quota().gpus() == 1);
  CHECK(fresh.running_jobs() == 0);
  CHECK(fresh.queued_jobs() == 0);
}

std::optional<Res> NoneWaiting(const std::string&) { return std::nullopt; }

TEST_CASE("Borrowable: what the cohort leaves unused, within the borrowing limit") {
  std::map<std::string, Quota> quotas = {
      {"a", GpuQuota(2, "c", 4)},
      {"b", GpuQuota(4, "c")},
      {"d", GpuQuota(2, "c")},
      {"other", GpuQuota(8, "elsewhere")},
  };
  std::map<std::string, ProjectUsage> usage = {{"b", ProjectUsage{{0, 0, 1}, 1}}};
  // b leaves 3 unused, d 2: within a's limit of 4.
  CHECK(Borrowable("a", quotas["a"], quotas, usage, NoneWaiting).gpus == 4);
  usage["d"].used.gpus = 2;
  CHECK(Borrowable("a", quotas["a"], quotas, usage, NoneWaiting).gpus == 3);

  // A member's first waiting job takes back what it needs before anyone borrows it.
  auto b_waits_for_2 = [](const std::string& name) -> std::optional<Res> {
    if (name == "b") return Res{0, 0, 2};
    return std::nullopt;
  };
  CHECK(Borrowable("a", quotas["a"], quotas, usage, b_waits_for_2).gpus == 1);

  // What another member borrows is lent already.
  quotas["d"].borrowing_limit.gpus = 4;
  quotas["d"].has_borrowing_limit = true;
  usage["d"].used.gpus = 4;  // 2 over its quota
  CHECK(Borrowable("a", quotas["a"], quotas, usage, NoneWaiting).gpus == 1);

  // No cohort, or no borrowing limit: nothing to borrow.
  CHECK(Borrowable("b", quotas["b"], quotas, usage, NoneWaiting).gpus == 0);
  CHECK(Borrowable("other", quotas["other"], quotas, usage, NoneWaiting).gpus == 0);
}

// Borrowable is the whole borrowing allowed, so what a project borrows already counts once: p
// borrows 2 of its limit of 4 and its cohort leaves 8 unused, so a job needing 1 more gpu fits.
TEST_CASE("BlockersOf: a project that borrows may borrow up to its limit") {
  QueueState state = State();
  state.quotas["p"] = GpuQuota(4, "c", 4);
  state.quotas["b"] = GpuQuota(8, "c");
  state.usage["p"].used.gpus = 6;  // 2 borrowed
  const std::vector<v1::Blocker> blockers = BlockersOf(state, Waiting("j-a", 1), kT0);
  std::string messages;
  for (const v1::Blocker& b : blockers) messages += b.message() + "\n";
  INFO(messages);
  CHECK(blockers.empty());
}

TEST_CASE("QueuedJobOf gives the same facts from the model and from the API's message") {
  v1::Job proto;
  proto.set_id("j-a");
  proto.set_project("p");
  v1::WorkerPool* chief = proto.mutable_spec()->add_worker_pools();
  chief->set_name("chief");
  chief->mutable_resources()->set_cpu(1.5);
  chief->mutable_resources()->set_gpus(1);
  v1::WorkerPool* worker = proto.mutable_spec()->add_worker_pools();
  worker->set_name("worker");
  worker->mutable_resources()->set_memory_mb(2048);
  const char* names[] = {"chief-0", "worker-0", "worker-1"};
  const v1::ReplicaState states[] = {v1::REPLICA_STATE_STOPPED, v1::REPLICA_STATE_STOPPING,
                                     v1::REPLICA_STATE_FAILED};
  for (int i = 0; i < 3; ++i) {
    v1::Replica* r = proto.add_replicas();
    r->set_name(names[i]);
    r->set_pool(i == 0 ? "chief" : "worker");
    r->set_rank(i);
    r->set_state(states[i]);
  }
  proto.add_attempts()->set_number(1);
  *proto.mutable_next_attempt_time() = ToProtoTime(kT0 + absl::Seconds(5));

  absl::StatusOr<Job> model = JobFromProto(proto);
  REQUIRE(model.ok());
  const QueuedJob from_model = QueuedJobOf(*model);
  const QueuedJob from_proto = QueuedJobOf(proto);
  for (const QueuedJob& q : {from_model, from_proto}) {
    CHECK(q.id == "j-a");
    CHECK(q.project == "p");
    CHECK(q.attempts == 1);
    CHECK(q.next_attempt_time == kT0 + absl::Seconds(5));
    CHECK(q.stopping);  // worker-0 still holds its node
    REQUIRE(q.demands.size() == 3);
    CHECK(q.demands[0].replica == "chief-0");
    CHECK(q.demands[0].need.cpu == 1.5);
    CHECK(q.demands[0].need.gpus == 1);
    CHECK(q.demands[2].replica == "worker-1");
    CHECK(q.demands[2].need.memory_mb == 2048);
    CHECK(q.demands[0].ports == 2);  // the primary's own port and the rendezvous port
    CHECK(q.demands[1].ports == 1);
    CHECK(q.demands[2].ports == 1);
  }

  proto.mutable_replicas(1)->set_state(v1::REPLICA_STATE_STOPPED);
  proto.clear_next_attempt_time();
  CHECK_FALSE(QueuedJobOf(proto).stopping);
  CHECK_FALSE(QueuedJobOf(*JobFromProto(proto)).stopping);
  CHECK_FALSE(QueuedJobOf(proto).next_attempt_time.has_value());
}

}  // namespace
}  // namespace trainctl::sched
