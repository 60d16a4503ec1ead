// AdmissionQueue on its own (R1, R8, R17): queue order, the scheduling pass over a JobTable and a
// NodeRegistry built by hand, stockouts, starvation, deadlines and usage. The pass returns a plan;
// these tests apply what they need of it themselves, as the core would.
#include "scheduler/admission_queue.h"

#include <catch2/catch.hpp>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "scheduler/node_registry.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

// A QUEUED job of `project` created at kT0 + `created_s`, one replica per need.
Job MakeJob(const std::string& id, const std::string& project, int created_s,
            const std::vector<Res>& needs, int32_t priority = 0) {
  Job job;
  job.id = id;
  job.project = project;
  job.priority = priority;
  job.create_time = kT0 + absl::Seconds(created_s);
  job.queue_time = job.create_time;
  for (size_t i = 0; i < needs.size(); ++i) {
    Replica r;
    r.name = i == 0 ? "chief-0" : absl::StrCat("worker-", i - 1);
    r.rank = static_cast<int32_t>(i);
    r.need = needs[i];
    job.replicas.push_back(std::move(r));
  }
  return job;
}

Quota CpuQuota(const std::string& project, double cpu, v1::QueueingStrategy strategy) {
  Quota q;
  q.project = project;
  q.cpu = cpu;
  q.queueing_strategy = strategy;
  return q;
}

std::vector<std::string> StartedIds(const AdmissionPlan& plan) {
  std::vector<std::string> ids;
  for (const AdmissionPlan::Start& s : plan.starts) ids.push_back(s.job_id);
  return ids;
}

struct Queue {
  JobTable jobs{1};
  NodeRegistry nodes{NodePolicy{}};
  AdmissionQueue queue{Quota{}};
  Timers timers;

  // Registers nodes of 4 cpu and 4096 MiB.
  explicit Queue(std::vector<std::string> names = {"node-a"}) {
    Effects fx;
    for (const std::string& n : names) nodes.Register(testing::Reg(n), kT0, &fx);
  }
  Job* Add(Job job) {
    Job* stored = jobs.Insert(std::move(job));
    queue.Enqueue(*stored);
    return stored;
  }
  // What the core does with a start: the job leaves the queue and holds its resources.
  void Admit(const std::string& id) {
    const Job& job = *jobs.Find(id);
    queue.Dequeue(job);
    queue.Admitted(job.project);
    queue.Hold(UsageKey{job.project, "", "", ""}, DemandOf(job));
  }
  // A job of `project` already runs, holding `cpu`.
  void Running(const std::string& project, double cpu) {
    queue.Admitted(project);
    queue.Hold(UsageKey{project, "", "", ""}, {cpu, 0, 0});
  }
  // A pass asked for (the core wakes the queue when something changed).
  AdmissionPlan Pass(absl::Time now) {
    queue.Wake();
    return queue.Pass(jobs, &nodes, now, &timers);
  }
  // Applies the plan's queue reasons, as the core does.
  void ApplyReasons(const AdmissionPlan& plan) {
    for (const auto& [id, reason] : plan.reasons) jobs.Find(id)->queue_reason = reason;
  }
};

TEST_CASE("AdmissionQueue: retries first, then higher priority, then earlier creation") {
  Queue q;
  q.Add(MakeJob("j-low", "p", 1, {{1, 0, 0}}));
  q.Add(MakeJob("j-high", "p", 2, {{1, 0, 0}}, 5));
  q.Add(MakeJob("j-high-later", "other", 3, {{1, 0, 0}}, 5));
  Job retry = MakeJob("j-retry", "p", 4, {{1, 0, 0}});
  retry.attempts.push_back(Attempt{});
  q.Add(std::move(retry));

  CHECK(q.queue.Queued("", 10) ==
        std::vector<std::string>{"j-retry", "j-high", "j-high-later", "j-low"});
  CHECK(q.queue.Queued("", 2) == std::vector<std::string>{"j-retry", "j-high"});
  CHECK(q.queue.Queued("p", 10) == std::vector<std::string>{"j-retry", "j-high", "j-low"});
  CHECK(q.queue.Queued("nobody", 10).empty());

  q.queue.Dequeue(*q.jobs.Find("j-high"));
  CHECK(q.queue.Queued("", 10) == std::vector<std::string>{"j-retry", "j-high-later", "j-low"});
  q.queue.Dequeue(*q.jobs.Find("j-high-later"));
  CHECK(q.queue.Projects() == std::set<std::string>{"p"});  // "other" has nothing left
}

TEST_CASE("AdmissionQueue: states share the queued jobs' order until the membership changes") {
  Queue q;
  q.Add(MakeJob("j-a", "p", 1, {{1, 0, 0}}));
  q.Add(MakeJob("j-b", "p", 2, {{1, 0, 0}}, 5));
  const std::shared_ptr<const QueueState> first = q.queue.State(q.jobs, q.nodes);
  CHECK(first->OrderOf("p") == std::vector<std::string>{"j-b", "j-a"});
  CHECK(first->OrderOf("other").empty());
  // Usage changes (a job of another project runs): a new state, the same order object.
  q.Running("other", 1);
  const std::shared_ptr<const QueueState> second = q.queue.State(q.jobs, q.nodes);
  CHECK(second->order == first->order);
  CHECK(second->UsageOf("other").used.cpu == 1);
  CHECK(first->UsageOf("other").used.cpu == 0);
  // A job leaves the queue: the order is built again; the old state keeps its own.
  q.Admit("j-b");
  const std::shared_ptr<const QueueState> third = q.queue.State(q.jobs, q.nodes);
  CHECK(third->order != first->order);
  CHECK(third->OrderOf("p") == std::vector<std::string>{"j-a"});
  CHECK(first->OrderOf("p") == std::vector<std::string>{"j-b", "j-a"});
  q.Add(MakeJob("j-c", "q", 3, {{1, 0, 0}}));
  const std::shared_ptr<const QueueState> fourth = q.queue.State(q.jobs, q.nodes);
  CHECK(fourth->OrderOf("q") == std::vector<std::string>{"j-c"});
  // Only the project whose queue changed has its list built again: p's is shared, so a job that
  // joins or leaves one project's queue copies no id of the others'.
  CHECK(fourth->order->at("p") == third->order->at("p"));
  q.Admit("j-c");
  const std::shared_ptr<const QueueState> fifth = q.queue.State(q.jobs, q.nodes);
  CHECK(fifth->order->count("q") == 0);
  CHECK(fifth->order->at("p") == third->order->at("p"));
  CHECK(fifth->OrderOf("p") == std::vector<std::string>{"j-a"});
}

TEST_CASE("AdmissionQueue: a picture holds the free nodes only while a job waits") {
  Queue q({"node-a", "node-b"});
  // Nothing queued: nothing to explain, and a picture that costs nothing per node.
  CHECK(q.queue.State(q.jobs, q.nodes)->free.empty());
  CHECK(q.Pass(kT0).starts.empty());
  q.Add(MakeJob("j-a", "p", 1, {{1, 0, 0}}));
  const std::shared_ptr<const QueueState> waiting = q.queue.State(q.jobs, q.nodes);
  REQUIRE(waiting->free.size() == 2);
  CHECK(waiting->free[0].name == "node-a");
  q.Admit("j-a");
  CHECK(q.queue.State(q.jobs, q.nodes)->free.empty());
}

TEST_CASE("AdmissionQueue: a pass starts jobs in admission order, with a node per replica") {
  Queue q({"node-a", "node-b"});
  q.Add(MakeJob("j-a", "p", 1, {{1, 100, 0}, {1, 100, 0}}));
  q.Add(MakeJob("j-b", "p", 2, {{2, 100, 0}}, 9));
  const AdmissionPlan plan = q.Pass(kT0);
  REQUIRE(plan.starts.size() == 2);
  CHECK(plan.starts[0].job_id == "j-b");
  CHECK(plan.starts[0].nodes == std::vector<std::string>{"node-a"});
  CHECK(plan.starts[1].job_id == "j-a");
  // The pass counts what it placed: node-a has 2 cpu left, node-b 4.
  CHECK(plan.starts[1].nodes == std::vector<std::string>{"node-b", "node-b"});
  CHECK(plan.stockouts.empty());
}

TEST_CASE("AdmissionQueue: STRICT_FIFO lets no job past a blocked one") {
  Queue q;
  Effects fx;
  REQUIRE(q.queue.SetQuota(CpuQuota("p", 4, v1::QUEUEING_STRATEGY_STRICT_FIFO), kT0, &fx).ok());
  q.Running("p", 3);
  q.Add(MakeJob("j-blocked", "p", 1, {{2, 0, 0}}));
  q.Add(MakeJob("j-small", "p", 2, {{1, 0, 0}}));
  const AdmissionPlan plan = q.Pass(kT0);
  CHECK(plan.starts.empty());
  REQUIRE(plan.reasons.size() == 1);  // j-small is never looked at
  CHECK(plan.reasons[0] ==
        std::pair<std::string, std::string>{"j-blocked",
                                            "QUOTA: project p needs 2 cpu cores, 3 of 4 in use "
                                            "by 1 job"});
}

TEST_CASE("AdmissionQueue: a job larger than its quota holds back nobody") {
  Queue q;
  Effects fx;
  REQUIRE(q.queue.SetQuota(CpuQuota("p", 4, v1::QUEUEING_STRATEGY_STRICT_FIFO), kT0, &fx).ok());
  q.Add(MakeJob("j-huge", "p", 1, {{8, 0, 0}}));
  q.Add(MakeJob("j-small", "p", 2, {{1, 0, 0}}));
  const AdmissionPlan plan = q.Pass(kT0);
  CHECK(StartedIds(plan) == std::vector<std::string>{"j-small"});
  REQUIRE(plan.reasons.size() == 1);
  CHECK(plan.reasons[0].second ==
        "QUOTA: project p needs 8 cpu cores but its quota is 4 cpu cores; raise it with: "
        "trainctl quota set p --cpu 8");
}

TEST_CASE("AdmissionQueue: BEST_EFFORT_FIFO lets jobs past a blocked one until its limit") {
  Queue q;
  Effects fx;
  Quota quota = CpuQuota("p", 4, v1::QUEUEING_STRATEGY_BEST_EFFORT_FIFO);
  quota.starvation_limit = absl::Seconds(60);
  REQUIRE(q.queue.SetQuota(quota, kT0, &fx).ok());
  q.Running("p", 3);
  q.Add(MakeJob("j-blocked", "p", 1, {{2, 0, 0}}));
  q.Add(MakeJob("j-1", "p", 2, {{1, 0, 0}}));
  AdmissionPlan plan = q.Pass(kT0);
  CHECK(StartedIds(plan) == std::vector<std::string>{"j-1"});
  CHECK(q.timers.next() == kT0 + absl::Seconds(60));  // when the limit is reached
  q.queue.Dequeue(*q.jobs.Find("j-1"));               // it ran and ended meanwhile

  q.Add(MakeJob("j-2", "p", 3, {{1, 0, 0}}));
  plan = q.Pass(kT0 + absl::Seconds(59));
  CHECK(StartedIds(plan) == std::vector<std::string>{"j-2"});  // still within the limit
  q.queue.Dequeue(*q.jobs.Find("j-2"));

  q.Add(MakeJob("j-3", "p", 4, {{1, 0, 0}}));
  plan = q.Pass(kT0 + absl::Seconds(60));
  CHECK(plan.starts.empty());  // starved long enough: nobody goes past it now
}

// A cohort "c" of team-a (4 gpus, borrowing up to `a_borrows`) and team-b (`b_gpus`, idle) on one
// large node; team-a runs a job that holds `a_holds` gpus.
void Cohort(Queue* q, int a_borrows, int b_gpus, int a_holds) {
  Effects fx;
  q->nodes.Register(testing::Reg("node-g", 64, 65536, 16), kT0, &fx);
  Quota a;
  a.project = "team-a";
  a.gpus = 4;
  a.cohort = "c";
  a.borrowing_limit.gpus = a_borrows;
  a.has_borrowing_limit = true;
  Quota b;
  b.project = "team-b";
  b.gpus = b_gpus;
  b.cohort = "c";
  REQUIRE(q->queue.SetQuota(a, kT0, &fx).ok());
  REQUIRE(q->queue.SetQuota(b, kT0, &fx).ok());
  q->queue.Admitted("team-a");
  q->queue.Hold(UsageKey{"team-a", "", "", ""}, {0, 0, a_holds});
}

TEST_CASE("AdmissionQueue: a cohort's unused quota is lent once") {
  Queue q(std::vector<std::string>{});
  Cohort(&q, /*a_borrows=*/8, /*b_gpus=*/4, /*a_holds=*/8);  // all of team-b's 4 borrowed
  q.Add(MakeJob("j-more", "team-a", 1, {{0, 0, 4}}));
  CHECK(q.Pass(kT0).starts.empty());  // however high team-a's borrowing limit
}

// What a project borrows already counts once against its borrowing limit: team-a borrows 2 of its
// limit of 4, team-b leaves 8 unused, so a job needing 1 more gpu is admitted.
TEST_CASE("AdmissionQueue: a project that borrows may borrow up to its limit") {
  Queue q(std::vector<std::string>{});
  Cohort(&q, /*a_borrows=*/4, /*b_gpus=*/8, /*a_holds=*/6);
  q.Add(MakeJob("j-more", "team-a", 1, {{0, 0, 1}}));
  const AdmissionPlan plan = q.Pass(kT0);
  INFO((plan.reasons.empty() ? "" : plan.reasons[0].second));
  CHECK(StartedIds(plan) == std::vector<std::string>{"j-more"});
}

TEST_CASE(
    "AdmissionQueue: a job the idle cluster cannot hold is a stockout after "
    "placementTimeout") {
  Queue q;
  Job big = MakeJob("j-big", "p", 1, {{8, 0, 0}});
  big.policy.placement_timeout_ms = 300'000;
  q.Add(std::move(big));
  q.Add(MakeJob("j-small", "p", 2, {{1, 0, 0}}));

  AdmissionPlan plan = q.Pass(kT0);
  CHECK(StartedIds(plan) == std::vector<std::string>{"j-small"});  // a stockout holds back nobody
  CHECK(plan.stockouts.empty());
  REQUIRE(plan.reasons.size() == 1);
  CHECK(plan.reasons[0].second ==
        "CAPACITY: no node has 8 free cpu cores for chief-0 (most free: 4 on node-a) (even with "
        "the cluster idle)");
  CHECK(q.timers.next() == kT0 + absl::Minutes(5));
  q.Admit("j-small");
  q.ApplyReasons(plan);

  plan = q.Pass(kT0 + absl::Minutes(5) - absl::Milliseconds(1));
  CHECK(plan.stockouts.empty());
  CHECK(plan.reasons.empty());  // the same reason: not repeated

  plan = q.Pass(kT0 + absl::Minutes(5));
  REQUIRE(plan.stockouts.size() == 1);
  CHECK(plan.stockouts[0].job_id == "j-big");
  CHECK(plan.stockouts[0].missing ==
        "no node has 8 free cpu cores for chief-0 (most free: 4 on node-a)");
}

TEST_CASE(
    "AdmissionQueue: jobs of one shape share the idle cluster's answer until a node changes") {
  Queue q;
  // In projects of their own, so that one waiting in line holds back none of the others.
  for (const char* id : {"j-1", "j-2"}) q.Add(MakeJob(id, id, 1, {{8, 0, 0}}));
  AdmissionPlan plan = q.Pass(kT0);
  REQUIRE(plan.reasons.size() == 2);
  for (const auto& [id, reason] : plan.reasons) {
    INFO(id);
    CHECK_THAT(reason, Catch::EndsWith("(even with the cluster idle)"));
  }
  q.ApplyReasons(plan);
  // A node of 8 cpus joins, one of them in use: both would fit the idle cluster now, so they
  // wait in line for it; a third job of the same shape is answered the same.
  Effects fx;
  q.nodes.Register(testing::Reg("node-b", 8), kT0, &fx);
  q.nodes.book().Hold("node-b", {1, 0, 0});
  q.Add(MakeJob("j-3", "j-3", 2, {{8, 0, 0}}));
  plan = q.Pass(kT0 + absl::Seconds(1));
  CHECK(plan.starts.empty());
  q.ApplyReasons(plan);
  for (const char* id : {"j-1", "j-2", "j-3"}) {
    INFO(id);
    CHECK(q.jobs.Find(id)->queue_reason ==
          "CAPACITY: no node has 8 free cpu cores for chief-0 (most free: 7 on node-b)");
  }
}

TEST_CASE("AdmissionQueue: with no node at all, the stockout says so") {
  Queue q(std::vector<std::string>{});  // no node
  Job job = MakeJob("j-a", "p", 1, {{1, 0, 0}});
  job.policy.placement_timeout_ms = 1000;
  q.Add(std::move(job));
  AdmissionPlan plan = q.Pass(kT0);
  REQUIRE(plan.reasons.size() == 1);
  CHECK(plan.reasons[0].second == "NO_NODES: no node is connected and READY");
  plan = q.Pass(kT0 + absl::Seconds(1));
  REQUIRE(plan.stockouts.size() == 1);
  CHECK(plan.stockouts[0].missing == "no node is connected and READY");
}

TEST_CASE("AdmissionQueue: a busy cluster is queueing, not a stockout, and blocks the line") {
  Queue q;
  q.nodes.book().Hold("node-a", {3, 0, 0});  // a running job's replica
  Job job = MakeJob("j-wait", "p", 1, {{2, 0, 0}});
  job.policy.placement_timeout_ms = 1000;
  q.Add(std::move(job));
  q.Add(MakeJob("j-next", "p", 2, {{1, 0, 0}}));
  AdmissionPlan plan = q.Pass(kT0);
  CHECK(plan.starts.empty());
  REQUIRE(plan.reasons.size() == 1);
  CHECK(plan.reasons[0].second ==
        "CAPACITY: no node has 2 free cpu cores for chief-0 (most free: 1 on node-a)");
  // No stockout clock: the only wakeup is for its reservation (reservation.h).
  CHECK(q.timers.next() == kT0 + absl::Seconds(1) + AdmissionQueue::kDefaultReservationAfter);
  plan = q.Pass(kT0 + absl::Hours(1));
  CHECK(plan.stockouts.empty());
}

TEST_CASE("AdmissionQueue: a pass is cheap when nothing woke the queue") {
  Queue q(std::vector<std::string>{});  // no node
  q.Add(MakeJob("j-a", "p", 1, {{1, 0, 0}}));
  AdmissionPlan plan = q.queue.Pass(q.jobs, &q.nodes, kT0, &q.timers);  // woken by Enqueue
  CHECK(plan.starts.empty());
  CHECK(plan.reasons.size() == 1);

  Effects fx;
  q.nodes.Register(testing::Reg("node-a"), kT0, &fx);  // room now, but nobody told the queue
  plan = q.queue.Pass(q.jobs, &q.nodes, kT0, &q.timers);
  CHECK(plan.starts.empty());
  CHECK(plan.reasons.empty());

  q.queue.Wake();
  plan = q.queue.Pass(q.jobs, &q.nodes, kT0, &q.timers);
  CHECK(StartedIds(plan) == std::vector<std::string>{"j-a"});
}

TEST_CASE("AdmissionQueue: a retry waits for its backoff and its stopping replicas") {
  Queue q({"node-a", "node-b"});
  Job retry = MakeJob("j-retry", "p", 1, {{1, 0, 0}});
  retry.attempts.push_back(Attempt{});
  retry.next_attempt_time = kT0 + absl::Seconds(10);
  retry.replicas[0].node = "node-a";
  retry.replicas[0].state = v1::REPLICA_STATE_STOPPING;
  q.Add(std::move(retry));
  q.Add(MakeJob("j-next", "p", 2, {{1, 0, 0}}));

  AdmissionPlan plan = q.Pass(kT0);
  CHECK(StartedIds(plan) == std::vector<std::string>{"j-next"});  // it holds back nobody
  CHECK(plan.reasons.size() == 0);
  CHECK(q.timers.next() == kT0 + absl::Seconds(10));
  q.queue.Dequeue(*q.jobs.Find("j-next"));

  plan = q.Pass(kT0 + absl::Seconds(10));
  CHECK(plan.starts.empty());  // its replica still stops on a connected node

  Effects fx;
  q.nodes.Disconnect("node-a", kT0, &fx);  // out of reach: nothing to wait for
  plan = q.Pass(kT0 + absl::Seconds(11));
  REQUIRE(plan.starts.size() == 1);
  CHECK(plan.starts[0].nodes == std::vector<std::string>{"node-b"});
}

TEST_CASE("AdmissionQueue: queue timeouts expire oldest first, a retry's after 30m") {
  Queue q;
  Job a = MakeJob("j-a", "p", 0, {{1, 0, 0}});
  a.policy.queue_timeout_ms = 120'000;
  Job b = MakeJob("j-b", "p", 0, {{1, 0, 0}});
  b.policy.queue_timeout_ms = 60'000;
  Job retry = MakeJob("j-retry", "p", 0, {{1, 0, 0}});
  retry.attempts.push_back(Attempt{});
  retry.queue_time = kT0 + absl::Minutes(1);  // re-queued later than it was created
  q.Add(std::move(a));
  q.Add(std::move(b));
  q.Add(std::move(retry));
  q.Add(MakeJob("j-forever", "p", 0, {{1, 0, 0}}));

  CHECK(q.queue.ExpiredDeadlines(kT0 + absl::Milliseconds(59'999)).empty());
  CHECK(q.queue.ExpiredDeadlines(kT0 + absl::Seconds(60)) == std::vector<std::string>{"j-b"});
  CHECK(q.queue.ExpiredDeadlines(kT0 + absl::Minutes(31)) ==
        std::vector<std::string>{"j-b", "j-a", "j-retry"});
  q.queue.Dequeue(*q.jobs.Find("j-b"));
  CHECK(q.queue.ExpiredDeadlines(kT0 + absl::Hours(100)) ==
        std::vector<std::string>{"j-a", "j-retry"});
}

TEST_CASE("AdmissionQueue: usage is counted from Hold/Release and Admitted/Released exactly") {
  Queue q;
  for (int i = 0; i < 3; ++i) q.queue.Hold(UsageKey{"p", "", "", ""}, {0.1, 10, 1});
  q.queue.Admitted("p");
  CHECK(q.queue.UsageOf("p").used.memory_mb == 30);
  CHECK(q.queue.UsageOf("p").used.gpus == 3);
  CHECK(q.queue.UsageOf("p").running_jobs == 1);
  CHECK(q.queue.Projects() == std::set<std::string>{"p"});
  std::shared_ptr<const QueueState> state = q.queue.State(q.jobs, q.nodes);
  CHECK(state->UsageOf("p").used.gpus == 3);

  for (int i = 0; i < 3; ++i) q.queue.Release(UsageKey{"p", "", "", ""}, {0.1, 10, 1});
  CHECK(q.queue.UsageOf("p").used.cpu == 0);  // exactly: no float residue
  CHECK(q.queue.UsageOf("p").running_jobs == 1);
  q.queue.Released("p");
  CHECK(q.queue.UsageOf("p").running_jobs == 0);
  CHECK(q.queue.Projects().empty());
}

TEST_CASE("AdmissionQueue: SetQuota validates, records and wakes the queue") {
  Queue q;
  Effects fx;
  Quota bad = CpuQuota("Team_A", 1, v1::QUEUEING_STRATEGY_STRICT_FIFO);
  CHECK(q.queue.SetQuota(bad, kT0, &fx).message() ==
        "quota.project must be 1..63 characters of a-z, 0-9 and '-'; got \"Team_A\"");
  CHECK(
      q.queue.SetQuota(CpuQuota("p", -1, v1::QUEUEING_STRATEGY_STRICT_FIFO), kT0, &fx).message() ==
      "quota.cpu must be >= 0, got -1");
  CHECK(fx.empty());
  CHECK(q.queue.FindQuota("p") == nullptr);

  q.Add(MakeJob("j-a", "p", 1, {{2, 0, 0}}));
  REQUIRE(q.queue.SetQuota(CpuQuota("p", 1, v1::QUEUEING_STRATEGY_STRICT_FIFO), kT0, &fx).ok());
  CHECK(q.Pass(kT0).starts.empty());
  Effects raise;
  REQUIRE(q.queue.SetQuota(CpuQuota("p", 2, v1::QUEUEING_STRATEGY_STRICT_FIFO), kT0, &raise).ok());
  CHECK(raise.quotas == std::set<std::string>{"p"});
  REQUIRE(raise.events.size() == 1);
  CHECK(raise.events[0].type == "QuotaChanged");
  REQUIRE(q.queue.FindQuota("p") != nullptr);
  CHECK(q.queue.FindQuota("p")->cpu == 2);
  // Raising a quota admits at once: the next pass runs without another wake.
  CHECK(StartedIds(q.queue.Pass(q.jobs, &q.nodes, kT0, &q.timers)) ==
        std::vector<std::string>{"j-a"});
}

}  // namespace
}  // namespace trainctl::sched
