// ClusterService: nodes and the event log over gRPC; a thin edge over Api (server/api.h).
#pragma once

#include "server/api.h"
#include "server/request_diagnosis.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace trainctl::server {

class ClusterServiceImpl final : public DiagnosingService<v1::ClusterService> {
 public:
  // `api` (not owned) must outlive the service.
  explicit ClusterServiceImpl(Api* api) : api_(api) {
    Diagnose("ListNodes", &ClusterServiceImpl::ListNodes);
    Diagnose("GetNode", &ClusterServiceImpl::GetNode);
    Diagnose("ListEvents", &ClusterServiceImpl::ListEvents);
    Diagnose("CordonNode", &ClusterServiceImpl::CordonNode);
    Diagnose("UncordonNode", &ClusterServiceImpl::UncordonNode);
    Diagnose("DrainNode", &ClusterServiceImpl::DrainNode);
    Diagnose("RevokeNode", &ClusterServiceImpl::RevokeNode);
    Diagnose("DeleteNode", &ClusterServiceImpl::DeleteNode);
    Diagnose("SetNodeMaintenance", &ClusterServiceImpl::SetNodeMaintenance);
    Diagnose("PrepullImage", &ClusterServiceImpl::PrepullImage);
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
  grpc::ServerUnaryReactor* SetNodeMaintenance(grpc::CallbackServerContext* ctx,
                                               const v1::SetNodeMaintenanceRequest* req,
                                               v1::Node* resp) override;
  grpc::ServerUnaryReactor* PrepullImage(grpc::CallbackServerContext* ctx,
                                         const v1::PrepullImageRequest* req,
                                         v1::PrepullImageResponse* resp) override;

 private:
  Api* const api_;
};

}  // namespace trainctl::server
