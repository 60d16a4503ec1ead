// The scripted nodes of the fake server (fake_server.h), and how its ClusterService answers
// cordon, uncordon and drain: built here so that the story each node tells is in one place.
//
//   - node-a: READY and HEALTHY, connected, agent 0.2.0, heartbeat 150s ago; 4 cpu, 4096 MiB and
//     8 gpus allocatable, 3.5 cpu, 3968 MiB and 6 gpus free; 2 replicas; its periodic check
//     passed 1m ago.
//   - node-b: LOST (no heartbeat for 60m), health UNKNOWN, disconnected; 4 cpu, 4096 MiB, no gpus.
//   - node-c: ISOLATED since 12m ago and UNHEALTHY, connected, heartbeat 5s ago, flapping
//     (isolated 50m, 30m and 12m ago); 8 cpu, 16384 MiB and 8 gpus (7.5 cpu and 16000 MiB
//     allocatable), all free; labels rack=r2, zone=a; a check config of three keys; its preflight
//     check for j-described failed 12m ago on disk-size root (3.1 GB free, need > 32 GB), and its
//     periodic check 1m ago on the same item.
// Times are dated back from `now_ms`.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <string>
#include <vector>

#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {

std::vector<v1::Node> FakeNodes(int64_t now_ms);

// The node named `name` as FakeNodes has it; NOT_FOUND "node NAME not found" otherwise.
grpc::Status FindFakeNode(const std::string& name, int64_t now_ms, v1::Node* node);

// The node as each request would leave it, without changing what later calls see:
//   - cordon: CORDONED (an ISOLATED or LOST node keeps its state), cordoned, the request's
//     reason as its state reason;
//   - uncordon: READY with no hold, except that node-c stays ISOLATED (its checks still fail) and
//     node-b LOST;
//   - drain: INVALID_ARGUMENT without a reason, like the real server; else DRAINING (CORDONED when
//     it has no replicas), cordoned, the reason as its state reason and the request's deadline.
grpc::Status FakeCordon(const v1::CordonNodeRequest& request, int64_t now_ms, v1::Node* node);
grpc::Status FakeUncordon(const v1::UncordonNodeRequest& request, int64_t now_ms, v1::Node* node);
grpc::Status FakeDrain(const v1::DrainNodeRequest& request, int64_t now_ms, v1::Node* node);

}  // namespace trainctl::cli
