#include "cli/client.h"

#include <algorithm>
#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/grpc_status.h"

namespace trainctl::cli {

int64_t NextBackoffMs(int64_t current_ms) {
  if (current_ms <= 0) return kInitialBackoffMs;
  return std::min(current_ms * 2, kMaxBackoffMs);
}

std::string ResolveSetting(const std::string& flag_value, const char* env) {
  if (!flag_value.empty()) return flag_value;
  if (env != nullptr) return env;
  return "";
}

std::string ResolveServer(const std::string& flag_value, const char* env) {
  std::string server = ResolveSetting(flag_value, env);
  return server.empty() ? kDefaultServer : server;
}

std::string UnavailableMessage(const std::string& server, const std::string& grpc_message,
                               bool tls) {
  std::string message = absl::StrCat("cannot reach the trainctl server at ", server);
  if (!grpc_message.empty()) absl::StrAppend(&message, " (", grpc_message, ")");
  absl::StrAppend(&message,
                  "; is it running? Point trainctl at it with --server HOST:PORT or the "
                  "TRAINCTL_SERVER environment variable");
  absl::StrAppend(&message, tls ? "; does its certificate chain to --ca and name that host?"
                                : "; a server that serves TLS needs --ca FILE (or TRAINCTL_CA)");
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

std::shared_ptr<grpc::Channel> NewChannel(const std::string& server, const std::string& ca_pem,
                                          const std::string& token) {
  grpc::ChannelArguments args;
  // gRPC's own reconnect backoff grows to 120s; while `wait` rides out a server restart, keep it
  // in step with ours so that the server is seen again within ~2s of coming back.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, static_cast<int>(kInitialBackoffMs));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, static_cast<int>(kInitialBackoffMs));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, static_cast<int>(kMaxBackoffMs));
  if (ca_pem.empty()) {
    return grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), args);
  }
  grpc::SslCredentialsOptions tls;
  tls.pem_root_certs = ca_pem;
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::SslCredentials(tls);
  if (!token.empty()) {
    creds = grpc::CompositeChannelCredentials(creds, grpc::AccessTokenCredentials(token));
  }
  return grpc::CreateCustomChannel(server, creds, args);
}

}  // namespace

Client::Client(std::string server, const std::string& ca_pem, const std::string& token)
    : server_(std::move(server)),
      tls_(!ca_pem.empty()),
      channel_(NewChannel(server_, ca_pem, token)),
      stub_(v1::JobService::NewStub(channel_)),
      cluster_(v1::ClusterService::NewStub(channel_)),
      quota_(v1::QuotaService::NewStub(channel_)),
      auth_(v1::AuthService::NewStub(channel_)),
      admin_(v1::AdminService::NewStub(channel_)) {}

absl::StatusOr<std::string> ResolveToken(const std::string& flag_value, const std::string& file,
                                         const char* env) {
  if (!flag_value.empty() && !file.empty()) {
    return absl::InvalidArgumentError("give --token or --token-file, not both");
  }
  if (!flag_value.empty()) return flag_value;
  if (!file.empty()) {
    std::ifstream in(file);
    std::string line;
    if (!in || !std::getline(in, line)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--token-file ", file, ": cannot read a token from it"));
    }
    line = std::string(absl::StripAsciiWhitespace(line));
    if (line.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--token-file ", file, ": the first line is empty"));
    }
    return line;
  }
  return std::string(absl::StripAsciiWhitespace(env == nullptr ? "" : env));
}

bool Client::Connected() const {
  return channel_->GetState(/*try_to_connect=*/false) == GRPC_CHANNEL_READY;
}

void Client::PrepareUnary(grpc::ClientContext* context) {
  context->set_deadline(std::chrono::system_clock::now() + kRpcTimeout);
}

absl::Status Client::ToStatus(const grpc::Status& status) const {
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE && !Connected()) {
    return absl::UnavailableError(UnavailableMessage(server_, status.error_message(), tls_));
  }
  return FromGrpcStatus(status);
}

}  // namespace trainctl::cli
