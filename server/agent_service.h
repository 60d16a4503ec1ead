// AgentService: the scheduler's end of every agent's stream.
//
// Each Connect() call gets an AgentSession reactor. It turns the agent's reports into work for
// the reconcile loop, acks each report after the turn that applied it has committed, and is the
// AgentChannel through which the loop's commands reach the agent.
#pragma once

#include "server/agent_registry.h"
#include "server/reconcile_loop.h"
#include "trainctl/v1/agent.grpc.pb.h"

namespace trainctl::server {

class AgentServiceImpl final : public v1::AgentService::CallbackService {
 public:
  AgentServiceImpl(ReconcileLoop* loop, AgentRegistry* registry)
      : loop_(loop), registry_(registry) {}

  grpc::ServerBidiReactor<v1::AgentMessage, v1::SchedulerMessage>* Connect(
      grpc::CallbackServerContext* ctx) override;

 private:
  ReconcileLoop* const loop_;
  AgentRegistry* const registry_;
};

}  // namespace trainctl::server
