// ClusterService: nodes and the event log, over gRPC. A thin edge like JobService.
#pragma once

#include "server/agent_registry.h"
#include "server/authorizer.h"
#include "server/reconcile_loop.h"
#include "server/request_diagnosis.h"
#include "server/transport_security.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace trainctl::server {

class ClusterServiceImpl final : public DiagnosingService<v1::ClusterService> {
 public:
  // `registry` and `revoked` (not owned) are for RevokeNode; with null ones it revokes in the
  // store only.
  // `auth` (not owned) authorizes every call; null allows everything.
  explicit ClusterServiceImpl(ReconcileLoop* loop, AgentRegistry* registry = nullptr,
                              CertificateRevocations* revoked = nullptr,
                              const Authorizer* auth = nullptr)
      : loop_(loop), registry_(registry), revoked_(revoked), auth_(auth) {
    Diagnose("ListNodes", &ClusterServiceImpl::ListNodes);
    Diagnose("GetNode", &ClusterServiceImpl::GetNode);
    Diagnose("ListEvents", &ClusterServiceImpl::ListEvents);
    Diagnose("CordonNode", &ClusterServiceImpl::CordonNode);
    Diagnose("UncordonNode", &ClusterServiceImpl::UncordonNode);
    Diagnose("DrainNode", &ClusterServiceImpl::DrainNode);
    Diagnose("RevokeNode", &ClusterServiceImpl::RevokeNode);
    Diagnose("DeleteNode", &ClusterServiceImpl::DeleteNode);
  }

  grpc::ServerUnaryReactor* ListNodes(grpc::CallbackServerContext* ctx,
                                      const v1::ListNodesRequest* req,
                                      v1::ListNodesResponse* resp) override;
  grpc::ServerUnaryReactor* GetNode(grpc::CallbackServerContext* ctx, const v1::GetNodeRequest* req,
                                    v1::Node* resp) override;
  grpc::ServerUnaryReactor* ListEvents(grpc::CallbackServerContext* ctx,
                                       const v1::ListEventsRequest* req,
                                       v1::ListEventsResponse* resp) override;
  grpc::ServerUnaryReactor* CordonNode(grpc::CallbackServerContext* ctx,
                                       const v1::CordonNodeRequest* req, v1::Node* resp) override;
  grpc::ServerUnaryReactor* UncordonNode(grpc::CallbackServerContext* ctx,
                                         const v1::UncordonNodeRequest* req,
                                         v1::Node* resp) override;
  grpc::ServerUnaryReactor* DrainNode(grpc::CallbackServerContext* ctx,
                                      const v1::DrainNodeRequest* req, v1::Node* resp) override;
  grpc::ServerUnaryReactor* RevokeNode(grpc::CallbackServerContext* ctx,
                                       const v1::RevokeNodeRequest* req, v1::Node* resp) override;
  grpc::ServerUnaryReactor* DeleteNode(grpc::CallbackServerContext* ctx,
                                       const v1::DeleteNodeRequest* req, v1::Node* resp) override;

 private:
  ReconcileLoop* const loop_;
  AgentRegistry* const registry_;
  CertificateRevocations* const revoked_;
  const Authorizer* const auth_;
};

}  // namespace trainctl::server
