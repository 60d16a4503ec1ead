// ClusterService: nodes and the event log, over gRPC. A thin edge like JobService.
#pragma once

#include "server/reconcile_loop.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace trainctl::server {

class ClusterServiceImpl final : public v1::ClusterService::CallbackService {
 public:
  explicit ClusterServiceImpl(ReconcileLoop* loop) : loop_(loop) {}

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

 private:
  ReconcileLoop* const loop_;
};

}  // namespace trainctl::server
