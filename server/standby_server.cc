#include "server/standby_server.h"

#include <grpcpp/generic/async_generic_service.h>
#include <httplib.h>

#include "absl/strings/str_cat.h"
#include "common/http_listen.h"
#include "common/leader_hint.h"
#include "google/protobuf/util/json_util.h"

namespace trainctl::server {
namespace {

// Answers at once and ends; gRPC deletes it when done.
class StandbyCall : public grpc::ServerGenericBidiReactor {
 public:
  StandbyCall(grpc::GenericCallbackServerContext* ctx, const v1::LeaderInfo& leader,
              const std::string& self) {
    if (!leader.address().empty()) ctx->AddTrailingMetadata(kLeaderTrailer, leader.address());
    Finish(StandbyStatus(leader, self));
  }
  void OnDone() override { delete this; }
};

std::string StandbyJson(const v1::LeaderInfo& leader, const std::string& self_http) {
  v1::RpcStatus status;
  status.set_code(grpc::StatusCode::UNAVAILABLE);
  status.set_message(StandbyRestMessage(leader, self_http));
  status.add_details()->PackFrom(leader);
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(status, &json, options);
  return json;
}

}  // namespace

class StandbyServer::Service : public grpc::CallbackGenericService {
 public:
  explicit Service(StandbyServer* owner) : owner_(owner) {}
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    absl::MutexLock lock(&owner_->mu_);
    return new StandbyCall(ctx, owner_->leader_, owner_->self_);
  }

 private:
  StandbyServer* const owner_;
};

StandbyServer::StandbyServer(StandbyOptions options) : options_(std::move(options)) {}

StandbyServer::~StandbyServer() { Stop(); }

void StandbyServer::set_leader(const v1::LeaderInfo& leader) {
  absl::MutexLock lock(&mu_);
  leader_ = leader;
}

void StandbyServer::set_self(const std::string& self, const std::string& self_http) {
  absl::MutexLock lock(&mu_);
  self_ = self;
  self_http_ = self_http;
}

v1::LeaderInfo StandbyServer::leader() const {
  absl::MutexLock lock(&mu_);
  return leader_;
}

absl::Status StandbyServer::Start() {
  service_ = std::make_unique<Service>(this);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options_.listen, options_.credentials, &grpc_port_);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterCallbackGenericService(service_.get());
  grpc_ = builder.BuildAndStart();
  if (grpc_ == nullptr || grpc_port_ == 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", options_.listen,
        " (--listen): another process uses the port, or the address is not this host's"));
  }
  if (options_.http_listen == "off") return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<httplib::Server>> http =
      NewHttpServer(options_.tls_cert, options_.tls_key);
  if (!http.ok()) return http.status();
  http_ = *std::move(http);
  http_->new_task_queue = [] { return new httplib::ThreadPool(2); };
  http_->set_keep_alive_timeout(2);
  auto answer = [this](const httplib::Request&, httplib::Response& res) {
    v1::LeaderInfo leader;
    std::string self;
    {
      absl::MutexLock lock(&mu_);
      leader = leader_;
      self = self_http_;
    }
    res.status = 503;
    res.set_header("Cache-Control", "no-store");
    res.set_header("Retry-After", "1");
    if (!leader.http_address().empty()) res.set_header(kLeaderHttpHeader, leader.http_address());
    res.set_content(StandbyJson(leader, self), "application/json");
  };
  http_->Get(".*", answer);
  http_->Post(".*", answer);
  http_->Put(".*", answer);
  http_->Patch(".*", answer);
  http_->Delete(".*", answer);
  absl::StatusOr<int> port = BindHttp(*http_, options_.http_listen, "HTTP (--http-listen)");
  if (!port.ok()) return port.status();
  http_port_ = *port;
  http_thread_ = std::thread([this] { http_->listen_after_bind(); });
  return absl::OkStatus();
}

void StandbyServer::Stop() {
  if (http_ != nullptr) http_->stop();
  if (http_thread_.joinable()) http_thread_.join();
  http_.reset();
  if (grpc_ != nullptr) {
    grpc_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
    grpc_->Wait();
    grpc_.reset();
  }
}

}  // namespace trainctl::server
