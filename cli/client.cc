#include "cli/client.h"

#include <grpcpp/impl/codegen/client_unary_call.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "common/grpc_status.h"
#include "common/leader_hint.h"

namespace trainctl::cli {

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

// gRPC's health check (grpc.health.v1.Health/Check, service "") on `channel`. Every trainctld
// serves it without a token; a standby answers it UNAVAILABLE naming the leader. The request
// (an empty HealthCheckRequest) and the response are raw bytes: no generated health stub.
grpc::Status CheckHealth(grpc::Channel* channel, grpc::ClientContext* context) {
  grpc::internal::RpcMethod method("/grpc.health.v1.Health/Check",
                                   grpc::internal::RpcMethod::NORMAL_RPC);
  grpc::Slice empty("", 0);
  grpc::ByteBuffer request(&empty, 1);
  grpc::ByteBuffer response;
  return grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
      channel, method, context, request, &response);
}

}  // namespace

Client::Client(std::string server, const std::string& ca_pem, const std::string& token)
    : Client(std::vector<std::string>{std::move(server)}, ca_pem, token) {}

Client::Client(std::vector<std::string> servers, const std::string& ca_pem,
               const std::string& token)
    : ca_pem_(ca_pem), token_(token), tls_(!ca_pem.empty()), follow_(std::move(servers)) {
  UseCurrent();
}

void Client::UseCurrent() {
  std::shared_ptr<grpc::Channel>& channel = channels_[server()];
  if (channel == nullptr) channel = NewChannel(server(), ca_pem_, token_);
  if (channel == channel_) return;
  channel_ = channel;
  stub_ = v1::JobService::NewStub(channel_);
  cluster_ = v1::ClusterService::NewStub(channel_);
  quota_ = v1::QuotaService::NewStub(channel_);
  auth_ = v1::AuthService::NewStub(channel_);
  admin_ = v1::AdminService::NewStub(channel_);
  secrets_ = v1::SecretService::NewStub(channel_);
  workdirs_ = v1::WorkdirService::NewStub(channel_);
  usage_ = v1::UsageService::NewStub(channel_);
}

absl::Status Client::FindLeader(std::chrono::milliseconds within) {
  if (!follow_.several()) return absl::OkStatus();
  const auto give_up = std::chrono::system_clock::now() + within;
  // What each address said last, in the order first tried.
  std::vector<std::string> tried;
  std::map<std::string, std::string> said;
  const bool served = RetryLoop(within, RetryLoop::AtTheEnd::kGiveUp).Run([&] {
    grpc::ClientContext context;
    context.set_deadline(std::min(give_up, std::chrono::system_clock::now() + kProbeTimeout));
    const grpc::Status status = CheckHealth(channel_.get(), &context);
    // Anything but UNAVAILABLE (or no answer in time) is an answer of a server that serves:
    // standbys answer every call UNAVAILABLE.
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE &&
        status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
      follow_.Served();
      return RetryLoop::kDone;
    }
    const std::optional<v1::LeaderInfo> leader = LeaderHint(status, &context);
    if (said.count(server()) == 0) tried.push_back(server());
    said[server()] = leader
                         ? status.error_message()
                         : absl::StrCat("cannot be reached (",
                                        grpc::StatusCode::DEADLINE_EXCEEDED == status.error_code()
                                            ? "no answer within the deadline"
                                            : status.error_message(),
                                        ")");
    const LeaderFollow::Next next =
        leader ? follow_.Redirected(leader->address()) : follow_.Failed();
    UseCurrent();
    return next == LeaderFollow::Next::kBackoff ? RetryLoop::kAfterBackoff : RetryLoop::kNow;
  });
  if (served) return absl::OkStatus();
  std::vector<std::string> lines;
  for (const std::string& address : tried)
    lines.push_back(absl::StrCat(address, ": ", said[address]));
  return absl::UnavailableError(absl::StrCat(
      "no trainctld among ", absl::StrJoin(servers(), ","), " leads (asked for ",
      absl::FormatDuration(absl::FromChrono(within)), "): ", absl::StrJoin(lines, "; "),
      ". Is a trainctld running, does --server (or TRAINCTL_SERVER) list its address, and can "
      "the standbys reach the database to elect a leader?"));
}

Client::Retry Client::Retarget(const grpc::Status& status, const grpc::ClientContext* context) {
  if (status.error_code() != grpc::StatusCode::UNAVAILABLE) return Retry::kNo;
  const std::optional<v1::LeaderInfo> leader = LeaderHint(status, context);
  LeaderFollow::Next next;
  if (leader && !leader->address().empty() && leader->address() != server()) {
    next = follow_.Redirected(leader->address());
  } else if (follow_.several() && (leader || !Connected())) {
    next = follow_.Failed();
  } else {
    return Retry::kNo;
  }
  UseCurrent();
  return next == LeaderFollow::Next::kNow ? Retry::kNow : Retry::kAfterBackoff;
}

RetryLoop::Next Client::AfterRetarget(const grpc::Status& status,
                                      const grpc::ClientContext* context) {
  switch (Retarget(status, context)) {
    case Retry::kNo:
      return RetryLoop::kDone;
    case Retry::kNow:
      return RetryLoop::kNow;
    case Retry::kAfterBackoff:
      return RetryLoop::kAfterBackoff;
  }
  return RetryLoop::kDone;
}

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
    // With several servers the call may have gone to another one than server() is now.
    return absl::UnavailableError(
        UnavailableMessage(follow_.several() ? absl::StrJoin(servers(), ",") : server(),
                           status.error_message(), tls_));
  }
  return FromGrpcStatus(status);
}

}  // namespace trainctl::cli
