// ClusterService.PrepullImage of an in-process trainctld (real SQLite store, gRPC over loopback)
// with agents that are raw streams of the test: the request reaches every node that runs images,
// with the project secret's credentials; each node's answer, or "no answer before the deadline",
// comes back per node; and the refusals (arguments, secrets, no node that runs images).
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "common/agent_protocol.h"
#include "server/daemon.h"
#include "trainctl/v1/agent.grpc.pb.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace trainctl::server {
namespace prepull_test {

constexpr char kImage[] = "127.0.0.1:5000/team/train:1.4";

// trainctld, started on a fresh data dir, and gRPC clients of its services.
struct Server {
  Server() {
    char tmpl[] = "/tmp/trainctl-prepull-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    std::vector<std::string> args = {"--data-dir",    dir,  "--listen", "127.0.0.1:0",
                                     "--http-listen", "off"};
    absl::StatusOr<DaemonFlags> flags = ParseDaemonFlags(args);
    REQUIRE(flags.ok());
    sigset_t none;
    sigemptyset(&none);
    daemon = std::make_unique<Daemon>(args, *flags, none);
    REQUIRE(daemon->Init().ok());
    REQUIRE(daemon->Start().ok());
    channel = grpc::CreateChannel(daemon->address(), grpc::InsecureChannelCredentials());
    cluster = v1::ClusterService::NewStub(channel);
    secrets = v1::SecretService::NewStub(channel);
  }
  ~Server() {
    daemon->Shutdown();
    std::filesystem::remove_all(dir);
  }

  grpc::Status Prepull(const v1::PrepullImageRequest& req, v1::PrepullImageResponse* out) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return cluster->PrepullImage(&ctx, req, out);
  }

  std::string dir;
  std::unique_ptr<Daemon> daemon;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::ClusterService::Stub> cluster;
  std::unique_ptr<v1::SecretService::Stub> secrets;
};

// One agent's stream, registered as `node`.
class Agent {
 public:
  Agent(Server& s, const std::string& node, bool images)
      : stub_(v1::AgentService::NewStub(s.channel)) {
    ctx_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    stream_ = stub_->Connect(&ctx_);
    v1::AgentMessage msg;
    msg.set_seq(1);
    v1::Register* reg = msg.mutable_register_();
    reg->set_node(node);
    reg->set_address(node + ".local");
    reg->mutable_capacity()->set_cpu(4);
    reg->mutable_capacity()->set_memory_mb(4096);
    *reg->mutable_allocatable() = reg->capacity();
    reg->set_agent_instance(node + "-instance");
    reg->set_protocol_version(kAgentProtocolVersion);
    if (images) (*reg->mutable_labels())["trainctl.io/images"] = "true";
    REQUIRE(stream_->Write(msg));
    v1::SchedulerMessage in;
    while (stream_->Read(&in) && !in.has_register_ack()) {
    }
    REQUIRE(in.has_register_ack());
  }
  ~Agent() {
    ctx_.TryCancel();
    v1::SchedulerMessage in;
    while (stream_->Read(&in)) {
    }
    stream_->Finish().ok();
  }

  // The next PrepullImage trainctld sends; other messages are skipped.
  v1::PrepullImage NextPrepull() {
    v1::SchedulerMessage in;
    while (stream_->Read(&in)) {
      if (in.has_prepull_image()) return in.prepull_image();
    }
    FAIL("the stream ended before a PrepullImage came");
    return {};
  }

  void Answer(const v1::ImagePrepulled& answer) {
    v1::AgentMessage msg;
    *msg.mutable_image_prepulled() = answer;
    REQUIRE(stream_->Write(msg));
  }

 private:
  std::unique_ptr<v1::AgentService::Stub> stub_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::AgentMessage, v1::SchedulerMessage>> stream_;
};

v1::PrepullImageRequest Request(int timeout_s = 0) {
  v1::PrepullImageRequest req;
  req.set_image(kImage);
  req.mutable_timeout()->set_seconds(timeout_s);
  return req;
}

void CheckRefused(Server& s, const v1::PrepullImageRequest& req, grpc::StatusCode code,
                  const std::string& text) {
  v1::PrepullImageResponse out;
  const grpc::Status status = s.Prepull(req, &out);
  INFO(status.error_message());
  CHECK(status.error_code() == code);
  CHECK(absl::StrContains(status.error_message(), text));
}

TEST_CASE("PrepullImage: every node that runs images is asked, and each answers or times out",
          "[prepull][grpc]") {
  Server s;
  // No node can run images yet.
  Agent plain(s, "node-c", /*images=*/false);
  CheckRefused(s, Request(), grpc::StatusCode::FAILED_PRECONDITION,
               "no connected node can run images (label trainctl.io/images=true)");

  {
    grpc::ClientContext ctx;
    v1::SetSecretRequest set;
    set.set_project("team-a");
    set.set_name("regcred");
    set.set_value("bob:hunter2");
    v1::Secret secret;
    REQUIRE(s.secrets->SetSecret(&ctx, set, &secret).ok());
  }
  Agent a(s, "node-a", /*images=*/true);
  Agent b(s, "node-b", /*images=*/true);

  v1::PrepullImageRequest req = Request(/*timeout_s=*/2);
  req.set_project("team-a");
  req.set_image_pull_secret("regcred");
  const auto start = std::chrono::steady_clock::now();
  std::future<std::pair<grpc::Status, v1::PrepullImageResponse>> call =
      std::async(std::launch::async, [&s, req] {
        v1::PrepullImageResponse out;
        grpc::Status status = s.Prepull(req, &out);
        return std::make_pair(status, out);
      });
  const v1::PrepullImage to_a = a.NextPrepull();
  const v1::PrepullImage to_b = b.NextPrepull();
  CHECK(to_a.image() == kImage);
  CHECK(to_a.credentials() == "bob:hunter2");
  CHECK(to_a.request_id() != to_b.request_id());
  v1::ImagePrepulled answer;
  answer.set_request_id(to_a.request_id());
  answer.set_digest("sha256:abcd");
  answer.set_bytes(1234);
  a.Answer(answer);
  // node-b never answers: the call ends at its 2 s deadline.
  auto [status, resp] = call.get();
  REQUIRE(status.ok());
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(1900));
  REQUIRE(resp.results_size() == 2);
  CHECK(resp.results(0).node() == "node-a");
  CHECK(resp.results(0).digest() == "sha256:abcd");
  CHECK(resp.results(0).bytes() == 1234);
  CHECK(resp.results(0).error().empty());
  CHECK(resp.results(1).node() == "node-b");
  CHECK(resp.results(1).error() == "no answer before the deadline");

  // Named nodes: one that runs no images is not asked; an answer's error is the node's.
  v1::PrepullImageRequest named = Request(10);
  named.add_nodes("node-c");
  named.add_nodes("node-a");
  named.add_nodes("node-c");  // once
  std::future<std::pair<grpc::Status, v1::PrepullImageResponse>> second =
      std::async(std::launch::async, [&s, named] {
        v1::PrepullImageResponse out;
        grpc::Status status = s.Prepull(named, &out);
        return std::make_pair(status, out);
      });
  const v1::PrepullImage again = a.NextPrepull();
  CHECK(again.credentials().empty());  // anonymous
  v1::ImagePrepulled failed;
  failed.set_request_id(again.request_id());
  failed.set_error("registry 127.0.0.1:5000 unreachable");
  a.Answer(failed);
  auto [status2, resp2] = second.get();
  REQUIRE(status2.ok());
  REQUIRE(resp2.results_size() == 2);
  CHECK(resp2.results(0).node() == "node-c");
  CHECK(resp2.results(0).error() == "it runs no images (no label trainctl.io/images=true)");
  CHECK(resp2.results(1).node() == "node-a");
  CHECK(resp2.results(1).error() == "registry 127.0.0.1:5000 unreachable");
  CHECK(resp2.results(1).digest().empty());
}

TEST_CASE("PrepullImage: arguments and secrets are checked before any node is asked",
          "[prepull][grpc]") {
  Server s;
  Agent a(s, "node-a", /*images=*/true);
  v1::PrepullImageRequest req = Request();
  req.clear_image();
  CheckRefused(s, req, grpc::StatusCode::INVALID_ARGUMENT, "image is required");
  req.set_image("UPPER/Case");
  CheckRefused(s, req, grpc::StatusCode::INVALID_ARGUMENT, "image");
  req.set_image(std::string(600, 'a'));
  CheckRefused(s, req, grpc::StatusCode::INVALID_ARGUMENT, "image");
  req = Request();
  req.mutable_timeout()->set_nanos(500'000'000);
  CheckRefused(s, req, grpc::StatusCode::INVALID_ARGUMENT, "timeout must be 1s..1h");
  req = Request(7200);
  CheckRefused(s, req, grpc::StatusCode::INVALID_ARGUMENT, "timeout must be 1s..1h");
  req = Request();
  req.add_nodes("");
  CheckRefused(s, req, grpc::StatusCode::INVALID_ARGUMENT, "nodes[0] is empty");
  req = Request();
  req.add_nodes("node-x");
  CheckRefused(s, req, grpc::StatusCode::NOT_FOUND, "node node-x not found");
  req = Request();
  req.set_image_pull_secret("regcred");
  CheckRefused(s, req, grpc::StatusCode::INVALID_ARGUMENT, "imagePullSecret needs project");
  req.set_project("team-a");
  CheckRefused(s, req, grpc::StatusCode::NOT_FOUND, "imagePullSecret: ");
  req.clear_image_pull_secret();
  CheckRefused(s, req, grpc::StatusCode::INVALID_ARGUMENT, "project is only for imagePullSecret");
}

}  // namespace prepull_test
}  // namespace trainctl::server
