#include "server/cluster_service.h"

#include "server/grpc_unary.h"

namespace trainctl::server {

grpc::ServerUnaryReactor* ClusterServiceImpl::ListNodes(grpc::CallbackServerContext* ctx,
                                                        const v1::ListNodesRequest* req,
                                                        v1::ListNodesResponse* resp) {
  return Unary(api_, &Api::ListNodes, ctx, req, resp);
}

grpc::ServerUnaryReactor* ClusterServiceImpl::GetNode(grpc::CallbackServerContext* ctx,
                                                      const v1::GetNodeRequest* req,
                                                      v1::Node* resp) {
  return Unary(api_, &Api::GetNode, ctx, req, resp);
}

grpc::ServerUnaryReactor* ClusterServiceImpl::ListEvents(grpc::CallbackServerContext* ctx,
                                                         const v1::ListEventsRequest* req,
                                                         v1::ListEventsResponse* resp) {
  return Unary(api_, &Api::ListEvents, ctx, req, resp);
}

grpc::ServerUnaryReactor* ClusterServiceImpl::CordonNode(grpc::CallbackServerContext* ctx,
                                                         const v1::CordonNodeRequest* req,
                                                         v1::Node* resp) {
  return Unary(api_, &Api::CordonNode, ctx, req, resp);
}

grpc::ServerUnaryReactor* ClusterServiceImpl::UncordonNode(grpc::CallbackServerContext* ctx,
                                                           const v1::UncordonNodeRequest* req,
                                                           v1::Node* resp) {
  return Unary(api_, &Api::UncordonNode, ctx, req, resp);
}

grpc::ServerUnaryReactor* ClusterServiceImpl::DrainNode(grpc::CallbackServerContext* ctx,
                                                        const v1::DrainNodeRequest* req,
                                                        v1::Node* resp) {
  return Unary(api_, &Api::DrainNode, ctx, req, resp);
}

grpc::ServerUnaryReactor* ClusterServiceImpl::SetNodeMaintenance(
    grpc::CallbackServerContext* ctx, const v1::SetNodeMaintenanceRequest* req, v1::Node* resp) {
  return Unary(api_, &Api::SetNodeMaintenance, ctx, req, resp);
}

grpc::ServerUnaryReactor* ClusterServiceImpl::RevokeNode(grpc::CallbackServerContext* ctx,
                                                         const v1::RevokeNodeRequest* req,
                                                         v1::Node* resp) {
  return Unary(api_, &Api::RevokeNode, ctx, req, resp);
}

grpc::ServerUnaryReactor* ClusterServiceImpl::DeleteNode(grpc::CallbackServerContext* ctx,
                                                         const v1::DeleteNodeRequest* req,
                                                         v1::Node* resp) {
  return Unary(api_, &Api::DeleteNode, ctx, req, resp);
}

grpc::ServerUnaryReactor* ClusterServiceImpl::PrepullImage(grpc::CallbackServerContext* ctx,
                                                           const v1::PrepullImageRequest* req,
                                                           v1::PrepullImageResponse* resp) {
  return Unary(api_, &Api::PrepullImage, ctx, req, resp);
}

}  // namespace trainctl::server
