#include "cli/client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"

namespace trainctl::cli {

int64_t NextBackoffMs(int64_t current_ms) {
  if (current_ms <= 0) return kInitialBackoffMs;
  return std::min(current_ms * 2, kMaxBackoffMs);
}

std::string ResolveServer(const std::string& flag_value, const char* env) {
  if (!flag_value.empty()) return flag_value;
  if (env != nullptr && env[0] != '\0') return env;
  return kDefaultServer;
}

std::string UnavailableMessage(const std::string& server, const std::string& grpc_message) {
  std::string message = absl::StrCat("cannot reach the trainctl server at ", server);
  if (!grpc_message.empty()) absl::StrAppend(&message, " (", grpc_message, ")");
  absl::StrAppend(&message,
                  "; is it running? Point trainctl at it with --server HOST:PORT or the "
                  "TRAINCTL_SERVER environment variable");
  return message;
}

bool IsTransient(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::UNKNOWN:
    case grpc::StatusCode::INTERNAL:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return true;
    default:
      return false;
  }
}

namespace {

std::shared_ptr<grpc::Channel> NewChannel(const std::string& server) {
  grpc::ChannelArguments args;
  // gRPC's own reconnect backoff grows to 120s; while `wait` rides out a server restart, keep it
  // in step with ours so that the server is seen again within ~2s of coming back.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, static_cast<int>(kInitialBackoffMs));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, static_cast<int>(kInitialBackoffMs));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, static_cast<int>(kMaxBackoffMs));
  return grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), args);
}

}  // namespace

Client::Client(std::string server)
    : server_(std::move(server)),
      channel_(NewChannel(server_)),
      stub_(v1::JobService::NewStub(channel_)),
      cluster_(v1::ClusterService::NewStub(channel_)),
      quota_(v1::QuotaService::NewStub(channel_)) {}

bool Client::Connected() const {
  return channel_->GetState(/*try_to_connect=*/false) == GRPC_CHANNEL_READY;
}

void Client::PrepareUnary(grpc::ClientContext* context) {
  context->set_deadline(std::chrono::system_clock::now() + kRpcTimeout);
}

absl::Status Client::ToStatus(const grpc::Status& status) const {
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE && !Connected()) {
    return absl::UnavailableError(UnavailableMessage(server_, status.error_message()));
  }
  return FromGrpcStatus(status);
}

}  // namespace trainctl::cli
