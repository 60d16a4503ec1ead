// A recording fake of LifecycleOps (scheduler/lifecycle_ops.h), for the tests that drive one
// part of the job lifecycle on its own (GangEpisodes, ReplicaMoves, ElasticPools). It records
// every call, changes a replica's state and node as the lifecycle would, and nothing else: it
// holds no resources, sends no command and ends no attempt.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "scheduler/lifecycle_ops.h"

namespace trainctl::sched::testing {

class FakeLifecycleOps : public LifecycleOps {
 public:
  // One SendStop.
  struct Stop {
    std::string replica;
    absl::Duration grace;
    std::string reason;
  };

  void SetReplicaState(Job*, Replica* r, v1::ReplicaState state) override { r->state = state; }
  void SetNode(const Job&, Replica* r, const std::string& node) override {
    r->node = node;
    nodes_set.push_back({r->name, node});
  }
  void Apply(Job*, Replica* r, const RetryDecision& d, absl::Time, Effects*) override {
    applied.push_back({r->name, d.action});
  }
  void Redispatch(Job*, const RetryDecision& d, absl::Time, Effects*) override {
    redispatched.push_back(d);
  }
  void MaybeFinishCancel(Job*, absl::Time, Effects*) override { ++finish_cancels; }
  void SendStop(const Job&, const Replica& r, absl::Duration grace, const std::string& reason,
                Effects*, const std::string& capture_stacks) override {
    stops.push_back({r.name, grace, reason});
    stacks_before.push_back(capture_stacks);
    stopped.push_back(r.name);
  }
  void LaunchOnItsNode(Job*, Replica* r, absl::Time, Effects*) override {
    r->state = v1::REPLICA_STATE_STARTING;
    launched.push_back(r->name);
  }
  void PlaceMoved(Job*, Replica* r, absl::Time, Effects*, bool new_run) override {
    moved.push_back({r->name, new_run});
  }
  bool WaitForRoom(Job*, Replica* r, const std::string& room, bool, absl::Time, Effects*) override {
    waits.push_back({r->name, room});
    return wait_for_room;
  }
  void GrowBack(Job*, absl::Time, Effects*) override { ++grow_backs; }
  bool CheckFabricFirst(Job*, absl::Time, Effects*) override { return false; }

  // What WaitForRoom answers.
  bool wait_for_room = false;

  std::vector<std::pair<std::string, Decision>> applied;
  std::vector<RetryDecision> redispatched;
  int finish_cancels = 0;
  std::vector<Stop> stops;
  // The replicas of `stops`, in order.
  std::vector<std::string> stopped;
  // The StopReplica.capture_stacks of each stop, in order.
  std::vector<std::string> stacks_before;
  std::vector<std::string> launched;
  std::vector<std::pair<std::string, bool>> moved;
  // (replica, room) of each WaitForRoom.
  std::vector<std::pair<std::string, std::string>> waits;
  // (replica, node) of each SetNode.
  std::vector<std::pair<std::string, std::string>> nodes_set;
  int grow_backs = 0;
};

}  // namespace trainctl::sched::testing
