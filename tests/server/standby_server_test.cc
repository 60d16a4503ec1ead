// What a standby trainctld answers (server/standby_server.h), over real loopback gRPC and HTTP:
// every call of any service ends UNAVAILABLE naming the leader, which a client reads back
// (common/leader_hint.h); every HTTP request gets 503 with the leader in a header and the body.
// And the address a trainctld advertises for a listen address.
#include "server/standby_server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <httplib.h>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "common/leader_hint.h"
#include "server/leadership.h"
#include "trainctl/v1/agent.grpc.pb.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace trainctl::server {
namespace {

v1::LeaderInfo Leader() {
  v1::LeaderInfo l;
  l.set_address("sched-b:7070");
  l.set_http_address("sched-b:7080");
  l.set_epoch(7);
  return l;
}

TEST_CASE("a standby answers every gRPC call UNAVAILABLE naming the leader", "[standby]") {
  StandbyServer standby({"127.0.0.1:0", grpc::InsecureServerCredentials(), "127.0.0.1:0", "", ""});
  REQUIRE(standby.Start().ok());
  standby.set_self("sched-a:7070", "sched-a:7080");
  standby.set_leader(Leader());
  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", standby.grpc_port()),
                                     grpc::InsecureChannelCredentials());

  grpc::ClientContext ctx;
  v1::GetJobRequest req;
  req.set_id("j-1");
  v1::Job job;
  const grpc::Status s = v1::JobService::NewStub(channel)->GetJob(&ctx, req, &job);
  CHECK(s.error_code() == grpc::StatusCode::UNAVAILABLE);
  CHECK(s.error_message() ==
        "trainctld at sched-a:7070 is a standby; the leader is at sched-b:7070 (epoch 7)");
  const std::optional<v1::LeaderInfo> hint = LeaderHint(s, &ctx);
  REQUIRE(hint.has_value());
  CHECK(hint->address() == "sched-b:7070");
  CHECK(hint->http_address() == "sched-b:7080");
  CHECK(hint->epoch() == 7);
  const auto trailer = ctx.GetServerTrailingMetadata().find(kLeaderTrailer);
  REQUIRE(trailer != ctx.GetServerTrailingMetadata().end());
  CHECK(std::string(trailer->second.data(), trailer->second.size()) == "sched-b:7070");

  // An agent's stream is refused the same way, at once.
  grpc::ClientContext stream_ctx;
  auto stream = v1::AgentService::NewStub(channel)->Connect(&stream_ctx);
  v1::SchedulerMessage in;
  CHECK_FALSE(stream->Read(&in));
  const grpc::Status ended = stream->Finish();
  CHECK(ended.error_code() == grpc::StatusCode::UNAVAILABLE);
  CHECK(LeaderHint(ended, &stream_ctx)->address() == "sched-b:7070");

  // While nobody leads (a failover under way), the answer says so and names nobody.
  standby.set_leader(v1::LeaderInfo());
  grpc::ClientContext ctx2;
  const grpc::Status none = v1::JobService::NewStub(channel)->GetJob(&ctx2, req, &job);
  CHECK(none.error_code() == grpc::StatusCode::UNAVAILABLE);
  CHECK_THAT(none.error_message(), Catch::Contains("no trainctld leads yet"));
  CHECK(LeaderHint(none, &ctx2)->address().empty());
  standby.Stop();
}

TEST_CASE("a standby answers every HTTP request 503 with the leader's REST address", "[standby]") {
  StandbyServer standby({"127.0.0.1:0", grpc::InsecureServerCredentials(), "127.0.0.1:0", "", ""});
  REQUIRE(standby.Start().ok());
  standby.set_self("sched-a:7070", "sched-a:7080");
  standby.set_leader(Leader());
  httplib::Client http("127.0.0.1", standby.http_port());
  for (const char* path : {"/v1/jobs", "/", "/metrics"}) {
    INFO(path);
    auto res = http.Get(path);
    REQUIRE(res);
    CHECK(res->status == 503);
    CHECK(res->get_header_value(kLeaderHttpHeader) == "sched-b:7080");
    CHECK_THAT(res->body, Catch::Contains("\"httpAddress\":\"sched-b:7080\""));
    CHECK_THAT(res->body, Catch::Contains("\"code\":14"));
    CHECK_THAT(res->body, Catch::Contains("\"message\":\"trainctld at sched-a:7080 is a standby; "
                                          "the leader is at sched-b:7080 (epoch 7)\""));
  }
  auto posted = http.Post("/v1/jobs", "{}", "application/json");
  REQUIRE(posted);
  CHECK(posted->status == 503);

  // A leader with --http-listen off: its gRPC address, said to be one.
  v1::LeaderInfo grpc_only = Leader();
  grpc_only.clear_http_address();
  standby.set_leader(grpc_only);
  auto res = http.Get("/v1/jobs");
  REQUIRE(res);
  CHECK_THAT(res->body, Catch::Contains("the leader (epoch 7) serves no REST API; its gRPC "
                                        "address is sched-b:7070"));
  // Nobody leads: nobody is named.
  standby.set_leader(v1::LeaderInfo());
  res = http.Get("/v1/jobs");
  REQUIRE(res);
  CHECK_THAT(res->body, Catch::Contains("trainctld at sched-a:7080 is a standby and no trainctld "
                                        "leads yet"));
  standby.Stop();
}

TEST_CASE("the advertised address of a wildcard listen address is this host's name", "[standby]") {
  CHECK(AdvertisedAddress("127.0.0.1:0", 7070) == "127.0.0.1:7070");
  CHECK(AdvertisedAddress("[::1]:0", 7070) == "[::1]:7070");
  char name[256] = {};
  REQUIRE(gethostname(name, sizeof(name) - 1) == 0);
  CHECK(AdvertisedAddress("0.0.0.0:7070", 7070) == absl::StrCat(name, ":7070"));
  CHECK(AdvertisedAddress("[::]:7070", 7071) == absl::StrCat(name, ":7071"));
}

}  // namespace
}  // namespace trainctl::server
