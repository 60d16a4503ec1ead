// AgentService.ShipLogs: an agent's stream of its runs' log pieces (server/central_logs.h). The
// node proves who it is as its control stream does (its certificate, with authentication), in
// the stream's first request; CentralLogs takes the pieces on this call's thread.
#include <spdlog/spdlog.h>

#include "common/grpc_status.h"
#include "server/agent_service.h"

namespace trainctl::server {

grpc::Status AgentServiceImpl::ShipLogs(
    grpc::ServerContext* ctx,
    grpc::ServerReaderWriter<v1::ShipLogsResponse, v1::ShipLogsRequest>* stream) {
  if (logs_ == nullptr) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "this trainctld keeps no copy of the replicas' logs");
  }
  absl::StatusOr<PeerStreamLimiter::Slot> slot = ship_streams_.Acquire(ctx->peer());
  if (!slot.ok()) {
    spdlog::warn("log shipping stream from {} refused: {}", ctx->peer(),
                 std::string(slot.status().message()));
    return ToGrpcStatus(slot.status());
  }
  v1::ShipLogsRequest first;
  if (!stream->Read(&first)) return grpc::Status::OK;
  if (first.node().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "the first ShipLogsRequest must name the agent's node");
  }
  if (absl::Status who = CheckAgentIdentity(auth_, VerifiedPeerCertificate(*ctx), first.node());
      !who.ok()) {
    spdlog::warn("log shipping from {} for node {} refused: {}", ctx->peer(), first.node(),
                 who.ToString());
    return ToGrpcStatus(who);
  }
  std::set<std::string> checked;
  if (!stream->Write(logs_->Take(first.node(), first, &checked))) return grpc::Status::OK;
  logs_->Serve(first.node(), stream, std::move(checked));
  return grpc::Status::OK;
}

}  // namespace trainctl::server
