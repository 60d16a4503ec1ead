#include "tests/cli/fake_nodes.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "tests/cli/view_clock.h"

namespace trainctl::cli {
namespace {

void SetResources(v1::Resources* r, double cpu, int64_t memory_mb, int32_t gpus) {
  r->set_cpu(cpu);
  r->set_memory_mb(memory_mb);
  r->set_gpus(gpus);
}

v1::CheckResult* AddItem(v1::CheckRun* run, const std::string& item, bool passed,
                         const std::string& measured, const std::string& threshold,
                         const std::string& message) {
  v1::CheckResult* r = run->add_items();
  r->set_item(item);
  r->set_passed(passed);
  r->set_measured(measured);
  r->set_threshold(threshold);
  r->set_message(message);
  return r;
}

v1::Node NodeA(int64_t now_ms) {
  v1::Node node;
  node.set_name("node-a");
  node.set_address("10.0.0.1:7071");
  node.set_connected(true);
  node.set_agent_version("0.2.0");
  node.set_state(v1::NODE_STATE_READY);
  node.set_health(v1::NODE_HEALTH_HEALTHY);
  SetResources(node.mutable_capacity(), 4, 4096, 8);
  SetResources(node.mutable_allocatable(), 4, 4096, 8);
  SetResources(node.mutable_free(), 3.5, 3968, 6);
  node.set_replicas(2);
  *node.mutable_last_heartbeat_time() = MsToTimestamp(now_ms - 150 * 1000);
  *node.mutable_register_time() = MsToTimestamp(now_ms - 60 * kMinuteMs);
  *node.mutable_state_time() = MsToTimestamp(now_ms - 60 * kMinuteMs);
  (*node.mutable_config())["disk-size root"] = "/ > 32 GB";
  v1::CheckRun* periodic = node.add_checks();
  periodic->set_phase("periodic");
  *periodic->mutable_time() = MsToTimestamp(now_ms - kMinuteMs);
  periodic->set_passed(true);
  AddItem(periodic, "disk-size root", true, "120.4 GB free", "> 32 GB", "120.4 GB free > 32 GB");
  return node;
}

v1::Node NodeB(int64_t now_ms) {
  v1::Node node;
  node.set_name("node-b");
  node.set_address("10.0.0.2:7071");
  node.set_agent_version("0.2.0");
  node.set_state(v1::NODE_STATE_LOST);
  node.set_state_reason("no heartbeat for 30s");
  node.set_health(v1::NODE_HEALTH_UNKNOWN);
  SetResources(node.mutable_capacity(), 4, 4096, 0);
  SetResources(node.mutable_allocatable(), 4, 4096, 0);
  SetResources(node.mutable_free(), 4, 4096, 0);
  *node.mutable_last_heartbeat_time() = MsToTimestamp(now_ms - 60 * kMinuteMs);
  *node.mutable_state_time() = MsToTimestamp(now_ms - 150 * 1000);
  return node;
}

v1::Node NodeC(int64_t now_ms) {
  v1::Node node;
  node.set_name("node-c");
  node.set_address("10.0.0.3:7071");
  node.set_connected(true);
  node.set_agent_version("0.2.0");
  node.set_state(v1::NODE_STATE_ISOLATED);
  node.set_state_reason("failed preflight check disk-size root: 3.1 GB free, need > 32 GB");
  *node.mutable_state_time() = MsToTimestamp(now_ms - 12 * kMinuteMs);
  node.set_health(v1::NODE_HEALTH_UNHEALTHY);
  node.set_health_description("The host failed its periodic check: disk-size root");
  node.set_flapping(true);
  for (int64_t age_min : {50, 30, 12}) {
    *node.add_isolation_times() = MsToTimestamp(now_ms - age_min * kMinuteMs);
  }
  SetResources(node.mutable_capacity(), 8, 16384, 8);
  SetResources(node.mutable_allocatable(), 7.5, 16000, 8);
  SetResources(node.mutable_free(), 7.5, 16000, 8);
  (*node.mutable_labels())["zone"] = "a";
  (*node.mutable_labels())["rack"] = "r2";
  (*node.mutable_config())["health check interval"] = "1m";
  (*node.mutable_config())["disk-size root"] = "/ > 32 GB";
  (*node.mutable_config())["disk-size shm"] = "/dev/shm > 1 GB";
  *node.mutable_last_heartbeat_time() = MsToTimestamp(now_ms - 5000);
  *node.mutable_register_time() = MsToTimestamp(now_ms - 40 * kMinuteMs);
  for (const char* phase : {"preflight", "periodic"}) {
    const bool preflight = std::string(phase) == "preflight";
    v1::CheckRun* run = node.add_checks();
    run->set_phase(phase);
    *run->mutable_time() = MsToTimestamp(now_ms - (preflight ? 12 : 1) * kMinuteMs);
    run->set_passed(false);
    if (preflight) {
      run->set_job_id("j-described");
      run->set_run_id("r-7");
    }
    AddItem(run, "dns", true, "", "every hostname resolves", "2 of 2 hostnames resolve");
    AddItem(run, "disk-size root", false, "3.1 GB free", "> 32 GB", "3.1 GB free, need > 32 GB");
    AddItem(run, "gpu-check", true, "8 GPUs detected", ">= 8 GPUs", "8 GPUs detected, 8 needed");
  }
  return node;
}

}  // namespace

std::vector<v1::Node> FakeNodes(int64_t now_ms) {
  return {NodeA(now_ms), NodeB(now_ms), NodeC(now_ms)};
}

grpc::Status FindFakeNode(const std::string& name, int64_t now_ms, v1::Node* node) {
  for (v1::Node& n : FakeNodes(now_ms)) {
    if (n.name() == name) {
      *node = std::move(n);
      return grpc::Status::OK;
    }
  }
  return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("node ", name, " not found"));
}

grpc::Status FakeCordon(const v1::CordonNodeRequest& request, int64_t now_ms, v1::Node* node) {
  grpc::Status found = FindFakeNode(request.name(), now_ms, node);
  if (!found.ok()) return found;
  node->set_cordoned(true);
  if (node->state() == v1::NODE_STATE_READY) {
    node->set_state(v1::NODE_STATE_CORDONED);
    node->set_state_reason(request.reason());
    *node->mutable_state_time() = MsToTimestamp(now_ms);
  }
  return grpc::Status::OK;
}

grpc::Status FakeUncordon(const v1::UncordonNodeRequest& request, int64_t now_ms, v1::Node* node) {
  grpc::Status found = FindFakeNode(request.name(), now_ms, node);
  if (!found.ok()) return found;
  node->set_cordoned(false);
  node->set_flapping(false);
  if (node->state() != v1::NODE_STATE_ISOLATED && node->state() != v1::NODE_STATE_LOST) {
    node->set_state(v1::NODE_STATE_READY);
    node->clear_state_reason();
    *node->mutable_state_time() = MsToTimestamp(now_ms);
  }
  return grpc::Status::OK;
}

grpc::Status FakeDrain(const v1::DrainNodeRequest& request, int64_t now_ms, v1::Node* node) {
  if (request.reason().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "reason is required");
  }
  grpc::Status found = FindFakeNode(request.name(), now_ms, node);
  if (!found.ok()) return found;
  node->set_cordoned(true);
  node->set_state(node->replicas() > 0 ? v1::NODE_STATE_DRAINING : v1::NODE_STATE_CORDONED);
  node->set_state_reason(request.reason());
  *node->mutable_state_time() = MsToTimestamp(now_ms);
  if (request.has_deadline()) *node->mutable_drain_deadline() = request.deadline();
  return grpc::Status::OK;
}

}  // namespace trainctl::cli
