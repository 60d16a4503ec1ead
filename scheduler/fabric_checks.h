// FabricChecks: the check of the fabric between a gang's nodes before its replicas start
// (faultTolerance.gangCheck; docs/operators/gang-health.md), a part of the job lifecycle.
//
// When an attempt's replicas are placed on two or more nodes, they wait CHECKING (holding their
// resources, not launched) while the agents of those nodes check the fabric together:
//   1. Every node probes the others' fabric check listeners (CheckFabric: connect, round-trip
//      latency, a bounded bandwidth sample), each pair both ways up to 16 nodes; beyond that each
//      node probes the nodes 1, 2, 4, ... places after it in the gang's order. Then each runs the
//      operator's --gang-check-program, where its agent has one, with the gang's environment.
//   2. The answers decide (FindCulprit, fabric_culprit.h): every probe and program passed: the
//      replicas launch (launchTimeout counts from then). A node to blame: it is ISOLATED through
//      a failed "fabric" check run (node_health.h) and the job re-dispatched, charged to
//      faultTolerance.jobRetryNum as any host fault. Two nodes whose one pair failed: each is
//      probed against a node outside the gang first. No single node to blame: re-dispatched
//      once, and the job fails when the next attempt's check fails that way again.
//   3. A node that does not answer within the check's timeout (--gang-check-timeout) failed its
//      probes; a node that leaves (lost, drained, isolated) during the check ends it ABANDONED
//      and the job is re-dispatched, charged to nothing.
// The check is kept in the attempt (Attempt.fabric_check: every probe, every program run, the
// result and its duration) with FabricCheckStarted / FabricCheckPassed / FabricCheckFailed
// events. Checks in progress live in memory: after a restart of trainctld, the jobs whose
// replicas are CHECKING start their check again once every node's agent is back.
//
//   FabricChecks checks(&ops, &jobs, &nodes, &timers, absl::Minutes(1));
//   if (checks.Wanted(*job)) checks.Start(job, now, &fx);   // replicas CHECKING
//   checks.Report("node-b", report, now, &fx);             // the agents' FabricReport
//
// Thread-safety: none; owned by the lifecycle.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "model/model.h"
#include "scheduler/job_table.h"
#include "scheduler/lifecycle_ops.h"
#include "scheduler/node_registry.h"
#include "scheduler/timers.h"

namespace trainctl::sched {

class FabricChecks {
 public:
  // Up to this many nodes every pair is probed both ways.
  static constexpr size_t kAllPairsUpTo = 16;

  // The parts it uses must outlive it. `timeout`: how long the agents have to answer one round.
  FabricChecks(LifecycleOps* life, JobTable* jobs, NodeRegistry* nodes, Timers* timers,
               absl::Duration timeout = absl::Minutes(1))
      : life_(life), jobs_(jobs), nodes_(nodes), timers_(timers), timeout_(timeout) {}

  FabricChecks(const FabricChecks&) = delete;
  FabricChecks& operator=(const FabricChecks&) = delete;

  void set_timeout(absl::Duration timeout) { timeout_ = timeout; }
  absl::Duration timeout() const { return timeout_; }

  // Whether the current attempt of `job`, placed on `nodes` (distinct), checks the fabric before
  // its replicas start: gangCheck is not OFF, its replicas span two or more nodes, and every
  // one of those nodes' agents has a fabric check listener. `why_not` (may be null) says why a
  // gang that spans nodes is not checked ("" when it spans one node or the job turned it off).
  bool Wanted(const Job& job, const std::vector<std::string>& nodes, std::string* why_not) const;

  // Starts the check of `job`'s current attempt between `nodes` (distinct). REQUIRES: Wanted;
  // its replicas are CHECKING on their nodes.
  void Start(Job* job, const std::vector<std::string>& nodes, absl::Time now, Effects* fx);

  // A gang restart is about to launch every replica of `job`: when their nodes are not the set
  // last checked in this attempt (the attempt's first placement, or its latest check) and a check
  // is wanted, they wait CHECKING and the check starts; true then. False, changing nothing,
  // otherwise.
  bool CheckRestart(Job* job, absl::Time now, Effects* fx);

  // The answer of `node`'s agent to a CheckFabric. Stale and unknown answers are ignored.
  void Report(const std::string& node, const v1::FabricReport& report, absl::Time now, Effects* fx);

  // `node`'s agent registered again: the rounds waiting on its answer are sent to it again (a
  // restarted agent lost them).
  void Resend(const std::string& node, Effects* fx);

  // Rounds past their deadline, nodes that left, and checks a restart interrupted.
  void Tick(absl::Time now, Effects* fx);

  // After a restore: the jobs whose replicas are CHECKING start their check again (at the first
  // Tick with every node's agent connected).
  void Restore();

  // The checks in progress (for tests and metrics).
  size_t size() const { return checks_.size(); }

  // The probes of one round for the gang `nodes`: node -> the nodes it probes.
  static std::map<std::string, std::vector<std::string>> Targets(
      const std::vector<std::string>& nodes);

 private:
  struct Check {
    int32_t attempt = 0;
    std::vector<std::string> nodes;
    // The round under way: its request id (0: not sent yet, after a restore), when it ends, and
    // the nodes whose answer is due with what each was asked to probe.
    uint64_t request = 0;
    absl::Time deadline;
    std::map<std::string, std::vector<std::string>> waiting;
    bool program = false;
    // The round against a node outside the gang (two nodes whose pair failed).
    std::string outsider;
    absl::Time started;
  };

  // Sends the round `targets` (node -> nodes to probe); `program`: the check program runs too.
  void SendRound(const std::string& job_id, Check* check,
                 const std::map<std::string, std::vector<std::string>>& targets, bool program,
                 absl::Time now, Effects* fx);
  // The round's request for `node`, probing `peers`.
  v1::SchedulerMessage Request(const std::string& job_id, const Check& check,
                               const std::string& node,
                               const std::vector<std::string>& peers) const;
  // Every answer of the round is in (or its deadline passed): decides or starts the next round.
  void Decide(Job* job, Check* check, absl::Time now, Effects* fx);
  // Ends the check with `result` and carries out what follows.
  void Pass(Job* job, const Check& check, const std::string& summary, absl::Time now, Effects* fx);
  void Fail(Job* job, const Check& check, const std::string& culprit, const std::string& why,
            absl::Time now, Effects* fx);
  void Abandon(Job* job, const Check& check, const std::string& why, absl::Time now, Effects* fx);
  // Writes the end of the attempt's record.
  void Finish(Job* job, const Check& check, const std::string& result, const std::string& summary,
              const std::string& culprit, absl::Time now, Effects* fx);
  // The job whose check this is, while its current attempt is the check's and it waits on it.
  Job* Waiting(const std::string& job_id, const Check& check) const;

  LifecycleOps* const life_;
  JobTable* const jobs_;
  NodeRegistry* const nodes_;
  Timers* const timers_;
  absl::Duration timeout_;
  uint64_t next_request_ = 1;
  // By job id.
  std::map<std::string, Check> checks_;
  // Request id -> job id.
  std::map<uint64_t, std::string> requests_;
};

}  // namespace trainctl::sched
