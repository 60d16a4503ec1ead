// trainctld's REST API against a real daemon and agents: jobs created, watched (server-sent
// events), read, listed and cancelled; logs read and followed; quotas; a drain; idempotent
// creates across a SIGKILL; bad input; the stream cap; the OpenAPI document against every RPC the
// gRPC server registers; HTTPS with tokens; the console's files.
#include <httplib.h>
#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/integration/http_client.h"
#include "tests/integration/mini_cluster.h"
#include "tests/integration/reflection_client.h"

namespace trainctl::testing {
namespace {

namespace pb = google::protobuf;

pb::Struct Json(const std::string& text) {
  pb::Struct s;
  INFO(text);
  REQUIRE(pb::util::JsonStringToMessage(text, &s).ok());
  return s;
}

std::string Field(const pb::Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? "" : it->second.string_value();
}

// A job of one replica running `script`.
std::string JobSpec(const std::string& name, const std::string& script) {
  return absl::StrCat(R"({"displayName":")", name,
                      R"(","workerPools":[{"name":"main","replicaCount":1,"command":["sh","-c",")",
                      script, R"("],"resources":{"cpu":0.1,"memoryMb":64}}]})");
}

std::string Create(httplib::Client& http, const std::string& body) {
  httplib::Result r = http.Post("/v1/jobs", body, "application/json");
  REQUIRE(r);
  INFO(r->body);
  REQUIRE(r->status == 200);
  return Field(Json(r->body), "id");
}

// The Jobs of a job's watch stream, until it ends.
std::vector<pb::Struct> Watch(httplib::Client& http, const std::string& id, int* status,
                              std::atomic<int>* events_seen = nullptr) {
  std::vector<pb::Struct> jobs;
  std::string buffer;
  httplib::Result r =
      http.Get(absl::StrCat("/v1/jobs/", id, ":watch"), [&](const char* data, size_t n) {
        buffer.append(data, n);
        size_t end;
        while ((end = buffer.find("\n\n")) != std::string::npos) {
          const std::string event = buffer.substr(0, end);
          buffer.erase(0, end + 2);
          absl::string_view data = event;
          if (absl::ConsumePrefix(&data, "data: ")) {
            pb::Struct job;
            if (pb::util::JsonStringToMessage(std::string(data), &job).ok()) jobs.push_back(job);
            if (events_seen != nullptr) ++*events_seen;
          }
        }
        return true;
      });
  *status = r ? r->status : -1;
  return jobs;
}

TEST_CASE("a job is created, watched, read, listed, cancelled and deleted over REST",
          "[integration][rest]") {
  MiniCluster c(1);
  auto http = Http(c);
  // A bare JobSpec is a body too.
  const std::string id = Create(*http, JobSpec("rest-long", "sleep 300"));
  c.WaitForState(id, v1::JOB_STATE_RUNNING);

  httplib::Result got = http->Get(absl::StrCat("/v1/jobs/", id));
  REQUIRE(got);
  CHECK(got->status == 200);
  CHECK(got->get_header_value("Content-Type") == "application/json");
  CHECK(Field(Json(got->body), "state") == "JOB_STATE_RUNNING");

  httplib::Result listed = http->Get("/v1/jobs?states=JOB_STATE_RUNNING&pageSize=10");
  REQUIRE(listed);
  REQUIRE(listed->status == 200);
  CHECK_THAT(listed->body, Catch::Contains(id));
  httplib::Result none = http->Get("/v1/jobs?states=JOB_STATE_FAILED");
  REQUIRE(none);
  CHECK_FALSE(absl::StrContains(none->body, id));

  int status = 0;
  std::atomic<int> seen{0};
  std::vector<pb::Struct> events;
  std::thread watcher([&] {
    auto own = Http(c);
    events = Watch(*own, id, &status, &seen);
  });
  REQUIRE(Eventually([&] { return seen.load() >= 1; }));
  httplib::Result cancelled =
      http->Post(absl::StrCat("/v1/jobs/", id, ":cancel"), "", "application/json");
  REQUIRE(cancelled);
  CHECK(cancelled->status == 200);
  watcher.join();  // The stream ends by itself at the terminal state.
  CHECK(status == 200);
  REQUIRE_FALSE(events.empty());
  CHECK(Field(events.front(), "state") == "JOB_STATE_RUNNING");
  CHECK(Field(events.back(), "state") == "JOB_STATE_CANCELLED");
  for (const pb::Struct& e : events) CHECK(Field(e, "id") == id);

  // A job that ended can be deleted; then it is gone.
  httplib::Result deleted = http->Delete(absl::StrCat("/v1/jobs/", id), "", "application/json");
  REQUIRE(deleted);
  CHECK(deleted->status == 200);
  httplib::Result gone = http->Get(absl::StrCat("/v1/jobs/", id));
  REQUIRE(gone);
  CHECK(gone->status == 404);
}

TEST_CASE("a replica's log is read and followed over REST", "[integration][rest]") {
  MiniCluster c(1);
  auto http = Http(c);
  const std::string id =
      Create(*http, JobSpec("rest-logs", "echo one; sleep 0.5; echo two; sleep 0.5; echo three"));
  c.WaitForJob(id, [](const v1::Job& j) { return j.state() >= v1::JOB_STATE_RUNNING; });
  std::string followed;
  httplib::Result r = http->Get(absl::StrCat("/v1/jobs/", id, "/replicas/main-0/logs?follow=true"),
                                [&](const char* data, size_t n) {
                                  followed.append(data, n);
                                  return true;
                                });
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(followed == "one\ntwo\nthree\n");
  c.WaitForState(id, v1::JOB_STATE_SUCCEEDED);

  httplib::Result once = http->Get(absl::StrCat("/v1/jobs/", id, "/replicas/main-0/logs?offset=4"));
  REQUIRE(once);
  REQUIRE(once->status == 200);
  pb::Struct read = Json(once->body);
  std::string data;
  REQUIRE(absl::Base64Unescape(Field(read, "data"), &data));
  CHECK(data == "two\nthree\n");
  CHECK(read.fields().at("complete").bool_value());
  httplib::Result missing = http->Get(absl::StrCat("/v1/jobs/", id, "/replicas/nope-0/logs"));
  REQUIRE(missing);
  CHECK(missing->status == 404);
}

TEST_CASE("quotas are set and read, and a node is drained, over REST", "[integration][rest]") {
  MiniCluster c(2);
  auto http = Http(c);
  httplib::Result set =
      http->Put("/v1/projects/vision/quota", R"({"gpus": 2, "cpu": 8})", "application/json");
  REQUIRE(set);
  INFO(set->body);
  REQUIRE(set->status == 200);
  httplib::Result quota = http->Get("/v1/projects/vision/quota");
  REQUIRE(quota);
  REQUIRE(quota->status == 200);
  CHECK_THAT(quota->body, Catch::Contains(R"("gpus":2)") && Catch::Contains(R"("cpu":8)"));
  httplib::Result projects = http->Get("/v1/projects");
  REQUIRE(projects);
  CHECK_THAT(projects->body, Catch::Contains("vision"));

  httplib::Result drained =
      http->Post("/v1/nodes/node-1:drain", R"({"reason": "kernel upgrade"})", "application/json");
  REQUIRE(drained);
  INFO(drained->body);
  REQUIRE(drained->status == 200);
  c.WaitForNode("node-1", [](const v1::Node& n) {
    return n.state() == v1::NODE_STATE_DRAINING || n.state() == v1::NODE_STATE_CORDONED;
  });
  httplib::Result events = http->Get("/v1/events?node=node-1");
  REQUIRE(events);
  CHECK_THAT(events->body, Catch::Contains("kernel upgrade"));
  httplib::Result undrained = http->Post("/v1/nodes/node-1:uncordon", "{}", "application/json");
  REQUIRE(undrained);
  CHECK(undrained->status == 200);
  c.WaitForNodeState("node-1", v1::NODE_STATE_READY);
  httplib::Result queue = http->Get("/v1/queue?project=vision");
  REQUIRE(queue);
  CHECK(queue->status == 200);
}

TEST_CASE("the same requestId gives one job, also after a SIGKILL of trainctld",
          "[integration][rest]") {
  MiniCluster c(1);
  const std::string spec = JobSpec("once", "sleep 300");
  const std::string body = absl::StrCat(R"({"requestId": "pipeline-7f3a", "spec": )", spec, "}");
  const std::string id = Create(*Http(c), body);
  CHECK(Create(*Http(c), body) == id);
  c.KillDaemon(SIGKILL);
  c.StartDaemon();
  auto http = Http(c);
  CHECK(Create(*http, body) == id);
  const std::string other =
      absl::StrCat(R"({"requestId": "pipeline-7f3a", "spec": )", JobSpec("twice", "sleep 1"), "}");
  httplib::Result conflict = http->Post("/v1/jobs", other, "application/json");
  REQUIRE(conflict);
  CHECK(conflict->status == 409);
  CHECK_THAT(conflict->body, Catch::Contains(R"("code":6)") && Catch::Contains(id));
  httplib::Result listed = http->Get("/v1/jobs");
  REQUIRE(listed);
  CHECK(Json(listed->body).fields().at("jobs").list_value().values_size() == 1);
}

TEST_CASE("bad input over HTTP is refused with a status that says why", "[integration][rest]") {
  MiniCluster c(1);
  auto http = Http(c);
  struct Row {
    const char* body;
    const char* says;
  };
  for (
      const Row& row : std::vector<Row>{
          {"{bad", "must be a JSON object"},
          {R"({"spec": {"displayName": "x", "nme": 1}})", "nme"},
          {R"({"spec": {"workerPools": [{"replicaCount": "many"}]}})",
           R"(spec.workerPools[0].replicaCount: invalid value \"many\" for type int32)"},
          {R"({"displayName": 5, "workerPools": []})",
           "JobSpec: displayName: invalid value 5 for type string"},
          {R"({"spec": {"displayName": "x", "workerPools": [{"name": "w", "replicaCount": 0, "command": ["x"]}]}})",
           "replicaCount"},
      }) {
    INFO(row.body);
    httplib::Result r = http->Post("/v1/jobs", row.body, "application/json");
    REQUIRE(r);
    INFO(r->body);
    CHECK(r->status == 400);
    CHECK_THAT(r->body, Catch::Contains(R"("code":3)") && Catch::Contains(row.says));
  }
  httplib::Result param = http->Get("/v1/jobs?pageSize=lots");
  REQUIRE(param);
  CHECK(param->status == 400);
  CHECK_THAT(param->body, Catch::Contains(R"(pageSize: invalid value \"lots\" for type int32)"));
  httplib::Result selector = http->Get("/v1/jobs?labelSelector=team");
  REQUIRE(selector);
  CHECK(selector->status == 400);
  CHECK_THAT(selector->body, Catch::Contains("labelSelector must be KEY=VALUE"));
  httplib::Result unknown_param = http->Get("/v1/nodes?colour=blue");
  REQUIRE(unknown_param);
  CHECK(unknown_param->status == 400);
  CHECK_THAT(unknown_param->body, Catch::Contains("unknown parameter \\\"colour\\\""));

  const std::string huge(50 << 20, 'x');
  httplib::Result big = http->Post("/v1/jobs", huge, "application/json");
  REQUIRE(big);
  CHECK(big->status == 413);
  CHECK_THAT(big->body, Catch::Contains("--max-request-bytes"));

  httplib::Result nowhere = http->Get("/v1/nothing");
  REQUIRE(nowhere);
  CHECK(nowhere->status == 404);
  CHECK_THAT(nowhere->body, Catch::Contains(R"("code":5)") && Catch::Contains("openapi.json"));
  httplib::Result method = http->Delete("/v1/jobs", "", "application/json");
  REQUIRE(method);
  CHECK(method->status == 405);
  CHECK(method->get_header_value("Allow") == "GET, POST");
  httplib::Result missing = http->Get("/v1/jobs/j-nope");
  REQUIRE(missing);
  CHECK(missing->status == 404);
  // Nothing half-made: no job exists.
  CHECK(c.Cli({"list", "-o", "json"}).out.find("j-") == std::string::npos);
}

TEST_CASE("streams past --http-max-streams get 429 while ordinary requests are served",
          "[integration][rest]") {
  ClusterOptions opts;
  opts.agents = 1;
  opts.daemon_args = {"--http-max-streams", "2"};
  MiniCluster c(opts);
  auto http = Http(c);
  const std::string id = Create(*http, JobSpec("held", "sleep 300"));
  std::atomic<int> seen[2] = {0, 0};
  int status[2] = {0, 0};
  std::vector<std::thread> watchers;
  for (int i = 0; i < 2; ++i) {
    watchers.emplace_back([&, i] {
      auto own = Http(c);
      Watch(*own, id, &status[i], &seen[i]);
    });
  }
  REQUIRE(Eventually([&] { return seen[0] >= 1 && seen[1] >= 1; }));
  int refused = 0;
  Watch(*http, id, &refused);
  CHECK(refused == 429);
  httplib::Result follow =
      http->Get(absl::StrCat("/v1/jobs/", id, "/replicas/main-0/logs?follow=true"));
  REQUIRE(follow);
  CHECK(follow->status == 429);
  CHECK_THAT(follow->body, Catch::Contains("--http-max-streams"));
  // Ordinary requests have threads of their own.
  for (int i = 0; i < 20; ++i) {
    httplib::Result r = i % 2 == 0 ? http->Get("/v1/nodes") : http->Get("/v1/jobs/" + id);
    REQUIRE(r);
    CHECK(r->status == 200);
  }
  REQUIRE(http->Post(absl::StrCat("/v1/jobs/", id, ":cancel"), "{}", "application/json"));
  for (std::thread& t : watchers) t.join();
  CHECK(status[0] == 200);
  CHECK(status[1] == 200);
  // The places are free again.
  int again = 0;
  CHECK(Watch(*http, id, &again).size() == 1);
  CHECK(again == 200);
}

TEST_CASE("a second trainctld on a gRPC or HTTP port in use fails to start, naming it",
          "[integration][rest]") {
  MiniCluster c(0);
  CliResult grpc_taken = c.Run({BinDir() + "/trainctld", "--data-dir", c.dir() + "/second",
                                "--listen", c.address(), "--http-listen", "127.0.0.1:0"});
  CHECK(grpc_taken.exit_code == 1);
  CHECK_THAT(grpc_taken.out + grpc_taken.err,
             Catch::Contains("cannot listen on " + c.address() + " (--listen)"));
  CliResult http_taken = c.Run({BinDir() + "/trainctld", "--data-dir", c.dir() + "/third",
                                "--listen", "127.0.0.1:0", "--http-listen", c.http_address()});
  CHECK(http_taken.exit_code == 1);
  CHECK_THAT(http_taken.out + http_taken.err,
             Catch::Contains("cannot listen on " + c.http_address() + " for HTTP (--http-listen)"));
  // The first one serves on.
  httplib::Result nodes = Http(c)->Get("/v1/nodes");
  REQUIRE(nodes);
  CHECK(nodes->status == 200);
}

TEST_CASE("every RPC the gRPC server registers has a route in the OpenAPI document",
          "[integration][rest]") {
  MiniCluster c(0);
  httplib::Result doc = Http(c)->Get("/v1/openapi.json");
  REQUIRE(doc);
  REQUIRE(doc->status == 200);
  pb::Struct openapi = Json(doc->body);
  CHECK(openapi.fields().at("openapi").string_value().rfind("3.", 0) == 0);
  std::set<std::string> documented;
  for (const auto& [path, item] : openapi.fields().at("paths").struct_value().fields()) {
    for (const auto& [method, op] : item.struct_value().fields()) {
      documented.insert(op.struct_value().fields().at("x-grpc-method").string_value());
    }
  }
  auto channel = grpc::CreateChannel(c.address(), grpc::InsecureChannelCredentials());
  absl::StatusOr<std::string> listed = ReflectionExchange(channel, ListServicesRequest());
  REQUIRE(listed.ok());
  std::vector<std::string> services = ServiceNames(*listed);
  int checked = 0;
  for (const std::string& service : services) {
    // Agents' own stream and gRPC's services are not the user API.
    if (!absl::StartsWith(service, "trainctl.") || service == "trainctl.v1.AgentService") continue;
    absl::StatusOr<std::string> file =
        ReflectionExchange(channel, FileContainingSymbolRequest(service));
    REQUIRE(file.ok());
    bool found = false;
    for (const pb::FileDescriptorProto& f : FileDescriptors(*file)) {
      for (const pb::ServiceDescriptorProto& s : f.service()) {
        if (absl::StrCat(f.package(), ".", s.name()) != service) continue;
        found = true;
        for (const pb::MethodDescriptorProto& m : s.method()) {
          const std::string rpc = absl::StrCat(service, "/", m.name());
          // A backup streams a database file with its checksum at the end: gRPC only.
          if (rpc == "trainctl.v1.AdminService/Backup") continue;
          INFO(rpc << " has no route in /v1/openapi.json");
          CHECK(documented.count(rpc) == 1);
          ++checked;
        }
      }
    }
    CHECK(found);
  }
  CHECK(checked >= 20);
}

TEST_CASE("REST over HTTPS needs a token, and the console's files are served",
          "[integration][rest][tls]") {
  ClusterOptions opts;
  opts.agents = 0;
  opts.tls = true;
  MiniCluster c(opts);
  const std::unique_ptr<httplib::SSLClient> https = Https(c);
  httplib::Result anonymous = https->Get("/v1/nodes");
  REQUIRE(anonymous);
  CHECK(anonymous->status == 401);
  CHECK_THAT(anonymous->body, Catch::Contains(R"("code":16)"));
  const std::string token(absl::StripSuffix(ReadTextFile(c.AdminTokenPath()), "\n"));
  httplib::Result bad = https->Get("/v1/nodes", {{"Authorization", "Bearer tct_nope"}});
  REQUIRE(bad);
  CHECK(bad->status == 401);
  httplib::Result ok = https->Get("/v1/whoami", {{"Authorization", "Bearer " + token}});
  REQUIRE(ok);
  CHECK(ok->status == 200);
  CHECK_THAT(ok->body, Catch::Contains(R"("owner":"admin")"));

  // The console is static: it loads without a token and asks for one.
  httplib::Result page = https->Get("/");
  REQUIRE(page);
  CHECK(page->status == 200);
  CHECK(page->get_header_value("Content-Type") == "text/html; charset=utf-8");
  const std::string etag = page->get_header_value("ETag");
  CHECK_FALSE(etag.empty());
  httplib::Result cached = https->Get("/", {{"If-None-Match", etag}});
  REQUIRE(cached);
  CHECK(cached->status == 304);
  httplib::Result script = https->Get("/app.js");
  REQUIRE(script);
  CHECK(script->get_header_value("Content-Type") == "text/javascript; charset=utf-8");
  httplib::Result style = https->Get("/style.css");
  REQUIRE(style);
  CHECK(style->get_header_value("Content-Type") == "text/css; charset=utf-8");
}

}  // namespace
}  // namespace trainctl::testing
