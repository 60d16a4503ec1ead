// The REST port's checks against a web page of another site (server/rest/request_guard.h), on a
// real trainctld: a cross-site form or fetch (text/plain, form-encoded, a foreign Origin) creates
// no job and drains no node; a rebound Host is refused, reads included; --http-allowed-hosts
// admits its names, as do the server certificate's; the same with TLS and a token.
#include <httplib.h>
#include <signal.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "tests/integration/http_client.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

const char kJob[] = R"({"displayName":"csrf","workerPools":[{"name":"main","replicaCount":1,)"
                    R"("command":["sh","-c","sleep 300"],"resources":{"cpu":0.1,"memoryMb":64}}]})";

// A request as a page of another site would make it.
struct Forged {
  const char* what;
  httplib::Headers headers;
  const char* content_type;
  const char* body;
  int status;
  const char* says;
};

std::vector<Forged> ForgedRequests() {
  return {
      {"a text/plain fetch from another site",
       {{"Origin", "https://evil.example"}},
       "text/plain",
       kJob,
       403,
       R"(Origin \"https://evil.example\" is not one of this trainctld's origins)"},
      {"a form of another site",
       {{"Origin", "https://evil.example"}},
       "application/x-www-form-urlencoded",
       "reason=x",
       403,
       "Origin"},
      {"a text/plain body without Origin",
       {},
       "text/plain",
       kJob,
       415,
       "needs Content-Type: application/json"},
      {"a form-encoded body without Origin",
       {},
       "application/x-www-form-urlencoded",
       "reason=x",
       415,
       "needs Content-Type: application/json"},
      {"JSON from another site's page",
       {{"Origin", "https://evil.example"}},
       "application/json",
       kJob,
       403,
       "Origin"},
      {"a rebound Host",
       {{"Host", "attacker.example"}},
       "application/json",
       kJob,
       403,
       R"(Host \"attacker.example\" is not one of this trainctld's names)"},
  };
}

// The number of jobs GET /v1/jobs lists.
int JobCount(httplib::Client& http) {
  httplib::Result r = http.Get("/v1/jobs");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  int n = 0;
  for (size_t p = r->body.find("\"id\":\"j-"); p != std::string::npos;
       p = r->body.find("\"id\":\"j-", p + 1)) {
    ++n;
  }
  return n;
}

TEST_CASE("a web page of another site creates no job and drains no node over REST",
          "[integration][rest]") {
  MiniCluster c(1);
  auto http = Http(c);
  for (const Forged& f : ForgedRequests()) {
    INFO(f.what);
    for (const std::string path : {"/v1/jobs", "/v1/nodes/node-0:drain"}) {
      INFO(path);
      httplib::Result r = http->Post(path, f.headers, f.body, f.content_type);
      REQUIRE(r);
      INFO(r->body);
      CHECK(r->status == f.status);
      CHECK_THAT(r->body, Catch::Contains(f.says));
    }
  }
  // Nothing happened: no job, and the node takes work (a call is done when it is answered).
  CHECK(JobCount(*http) == 0);
  CHECK(c.GetNode("node-0").state() == v1::NODE_STATE_READY);
  CHECK(c.Cli({"list", "-o", "json"}).out.find("j-") == std::string::npos);

  // A DELETE without a body needs the type too.
  httplib::Result bare = http->Delete("/v1/nodes/node-0");
  REQUIRE(bare);
  CHECK(bare->status == 415);

  // The console's own requests (its Origin is where it was loaded from) are served.
  const std::string own = absl::StrCat("http://", c.http_address());
  httplib::Result created = http->Post("/v1/jobs", {{"Origin", own}}, kJob, "application/json");
  REQUIRE(created);
  INFO(created->body);
  CHECK(created->status == 200);
  httplib::Result drained =
      http->Post("/v1/nodes/node-0:drain", {{"Origin", own}}, R"({"reason": "kernel upgrade"})",
                 "application/json; charset=utf-8");
  REQUIRE(drained);
  INFO(drained->body);
  CHECK(drained->status == 200);
  CHECK(JobCount(*http) == 1);
}

TEST_CASE("a rebound Host is refused for reads too, --http-allowed-hosts admits its names",
          "[integration][rest]") {
  ClusterOptions opts;
  opts.agents = 0;
  opts.daemon_args = {"--http-allowed-hosts", "trainctl.example.com"};
  MiniCluster c(opts);
  auto http = Http(c);
  for (const char* path : {"/v1/jobs", "/", "/metrics", "/v1/openapi.json"}) {
    INFO(path);
    httplib::Result r = http->Get(path, {{"Host", "attacker.example"}});
    REQUIRE(r);
    CHECK(r->status == 403);
    CHECK_THAT(r->body, Catch::Contains("add it with --http-allowed-hosts"));
    httplib::Result listed = http->Get(path, {{"Host", "trainctl.example.com:7080"}});
    REQUIRE(listed);
    CHECK(listed->status == 200);
  }
  // Behind a load balancer that serves HTTPS under the listed name.
  httplib::Result created = http->Post(
      "/v1/jobs", {{"Host", "trainctl.example.com"}, {"Origin", "https://trainctl.example.com"}},
      kJob, "application/json");
  REQUIRE(created);
  INFO(created->body);
  CHECK(created->status == 200);
  // Reads from another site's page are refused too (a GET of a log could leak it).
  httplib::Result read = http->Get("/v1/jobs", {{"Origin", "https://evil.example"}});
  REQUIRE(read);
  CHECK(read->status == 403);
}

TEST_CASE("with TLS and a token the same checks hold", "[integration][rest][tls]") {
  ClusterOptions opts;
  opts.agents = 0;
  opts.tls = true;
  MiniCluster c(opts);
  const auto https = Https(c);
  const std::string token(absl::StripSuffix(ReadTextFile(c.AdminTokenPath()), "\n"));
  const httplib::Headers auth = {{"Authorization", "Bearer " + token}};
  httplib::Headers evil = auth;
  evil.emplace("Origin", "https://evil.example");
  httplib::Result foreign = https->Post("/v1/jobs", evil, kJob, "application/json");
  REQUIRE(foreign);
  CHECK(foreign->status == 403);
  httplib::Result plain = https->Post("/v1/jobs", auth, kJob, "text/plain");
  REQUIRE(plain);
  CHECK(plain->status == 415);
  httplib::Headers rebound = auth;
  rebound.emplace("Host", "attacker.example");
  httplib::Result host = https->Get("/v1/jobs", rebound);
  REQUIRE(host);
  CHECK(host->status == 403);
  // The console's origin is https.
  httplib::Headers own = auth;
  own.emplace("Origin", absl::StrCat("https://127.0.0.1:", HttpPort(c)));
  httplib::Result created = https->Post("/v1/jobs", own, kJob, "application/json");
  REQUIRE(created);
  INFO(created->body);
  CHECK(created->status == 200);

  // The names of the server certificate are trainctld's own.
  httplib::Headers named = auth;
  named.emplace("Host", "sched.test");
  httplib::Result before = https->Get("/v1/jobs", named);
  REQUIRE(before);
  CHECK(before->status == 403);
  REQUIRE(
      c.Pki({"issue-server", c.PkiDir(), "--hosts", "localhost,127.0.0.1,sched.test"}).exit_code ==
      0);
  c.KillDaemon(SIGTERM);
  c.StartDaemon();
  httplib::Result after = Https(c)->Get("/v1/jobs", named);
  REQUIRE(after);
  INFO(after->body);
  CHECK(after->status == 200);
}

}  // namespace
}  // namespace trainctl::testing
