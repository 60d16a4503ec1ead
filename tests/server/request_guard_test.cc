// The REST port's checks before any route (server/rest/request_guard.h): Host, Origin and
// Content-Type, as pure decisions.
#include "server/rest/request_guard.h"

#include <catch2/catch.hpp>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace trainctl::server::rest {
namespace {

SiteNames Site() { return SiteNames{"http", 7080, {"gpu-3"}, {}}; }

// The refusal's HTTP status and message; 0 and "" when the request is served.
std::pair<int, std::string> Decide(const SiteNames& site, const RequestFacts& request) {
  std::optional<Refusal> no = CheckRequest(site, request);
  if (!no.has_value()) return {0, ""};
  return {no->http_status, std::string(no->status.message())};
}

TEST_CASE("a state-changing request needs Content-Type: application/json") {
  for (const char* method : {"POST", "PUT", "PATCH", "DELETE"}) {
    INFO(method);
    CHECK(Decide(Site(), {method, "127.0.0.1:7080", std::nullopt, "application/json"}).first == 0);
    CHECK(
        Decide(Site(), {method, "127.0.0.1:7080", std::nullopt, "Application/JSON; charset=utf-8"})
            .first == 0);
    for (const char* type : {"text/plain", "application/x-www-form-urlencoded",
                             "multipart/form-data; boundary=x", "application/json-seq"}) {
      INFO(type);
      auto [status, message] = Decide(Site(), {method, "127.0.0.1:7080", std::nullopt, type});
      CHECK(status == 415);
      CHECK_THAT(message, Catch::Contains("needs Content-Type: application/json") &&
                              Catch::Contains(type) &&
                              Catch::Contains("-H 'Content-Type: application/json'"));
    }
    auto [status, message] = Decide(Site(), {method, "127.0.0.1:7080", std::nullopt, std::nullopt});
    CHECK(status == 415);
    CHECK_THAT(message, Catch::Contains("got none"));
  }
  // Reads need none.
  CHECK(Decide(Site(), {"GET", "127.0.0.1:7080", std::nullopt, std::nullopt}).first == 0);
  CHECK(Decide(Site(), {"HEAD", "127.0.0.1:7080", std::nullopt, "text/plain"}).first == 0);
  // A refusal carries INVALID_ARGUMENT for the google.rpc.Status body.
  std::optional<Refusal> no =
      CheckRequest(Site(), {"POST", std::nullopt, std::nullopt, "text/plain"});
  REQUIRE(no.has_value());
  CHECK(no->status.code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("Host must be one of trainctld's names, for every method") {
  for (const char* host :
       {"localhost", "localhost:7080", "LOCALHOST.:7080", "127.0.0.1:7080", "127.3.4.5",
        "[::1]:7080", "[::1]", "gpu-3:7080", "10.1.2.3:7080", "[fe80::1]:7080"}) {
    INFO(host);
    CHECK(Decide(Site(), {"GET", host, std::nullopt, std::nullopt}).first == 0);
  }
  for (const char* method : {"GET", "POST"}) {
    auto [status, message] =
        Decide(Site(), {method, "attacker.example:7080", std::nullopt, "application/json"});
    CHECK(status == 403);
    CHECK_THAT(message,
               Catch::StartsWith("Host \"attacker.example:7080\" is not one of this "
                                 "trainctld's names (localhost, 127.0.0.1, [::1], gpu-3") &&
                   Catch::Contains("add it with --http-allowed-hosts"));
  }
  // Lookalikes of a loopback name are names an attacker controls.
  for (const char* host : {"localhost.attacker.example", "127.0.0.1.nip.io", "gpu-3.evil", "",
                           "[::1", "a:b:c", "host:port"}) {
    INFO(host);
    CHECK(Decide(Site(), {"GET", host, std::nullopt, std::nullopt}).first == 403);
  }
  std::optional<Refusal> no = CheckRequest(Site(), {"GET", "evil", std::nullopt, std::nullopt});
  REQUIRE(no.has_value());
  CHECK(no->status.code() == absl::StatusCode::kPermissionDenied);
  // No Host at all is no browser's request.
  CHECK(Decide(Site(), {"GET", std::nullopt, std::nullopt, std::nullopt}).first == 0);
}

TEST_CASE("trainctld --http-allowed-hosts admits its names, and * any Host") {
  SiteNames site = Site();
  site.allowed = {"trainctl.example.com", "[2001:db8::7]"};
  CHECK(Decide(site, {"GET", "trainctl.example.com", std::nullopt, std::nullopt}).first == 0);
  CHECK(Decide(site, {"GET", "Trainctl.Example.com:8443", std::nullopt, std::nullopt}).first == 0);
  CHECK(Decide(site, {"GET", "other.example.com", std::nullopt, std::nullopt}).first == 403);
  CHECK_THAT(Decide(site, {"GET", "other.example.com", std::nullopt, std::nullopt}).second,
             Catch::Contains("gpu-3, trainctl.example.com, [2001:db8::7], or an IP address"));
  site.allowed = {"*"};
  CHECK(Decide(site, {"GET", "anything.example", std::nullopt, std::nullopt}).first == 0);
  CHECK(HostAllowed(site, "whatever"));
}

TEST_CASE("Origin, when present, must be one of trainctld's own") {
  const SiteNames site = Site();
  // The console, same-origin: its Origin is the Host it was loaded from.
  for (auto [host, origin] : std::vector<std::pair<const char*, const char*>>{
           {"127.0.0.1:7080", "http://127.0.0.1:7080"},
           {"localhost:7080", "http://localhost:7080"},
           {"[::1]:7080", "http://[::1]:7080"},
           {"gpu-3:7080", "http://gpu-3:7080"},
           {"10.1.2.3:7080", "http://10.1.2.3:7080"},
           // Through `ssh -L 8080:localhost:7080`: the browser's port, not trainctld's.
           {"localhost:8080", "http://localhost:8080"},
           // Another of trainctld's own names on its port.
           {"127.0.0.1:7080", "http://localhost:7080"}}) {
    INFO(host << " " << origin);
    CHECK(Decide(site, {"POST", host, origin, "application/json"}).first == 0);
  }
  for (auto [host, origin] : std::vector<std::pair<const char*, const char*>>{
           {"127.0.0.1:7080", "https://evil.example"},
           {"127.0.0.1:7080", "null"},
           {"127.0.0.1:7080", "http://localhost:8888"},   // another local server
           {"127.0.0.1:7080", "https://127.0.0.1:7080"},  // not the scheme served
           {"10.1.2.3:7080", "http://10.9.9.9:7080"},     // another host by address
           {"127.0.0.1:7080", "http://127.0.0.1:7080.evil"},
           {"127.0.0.1:7080", "file://"}}) {
    INFO(host << " " << origin);
    for (const char* method : {"GET", "POST"}) {
      auto [status, message] = Decide(site, {method, host, origin, "application/json"});
      CHECK(status == 403);
      CHECK_THAT(message, Catch::StartsWith(absl::StrCat("Origin \"", origin,
                                                         "\" is not one of this trainctld's "
                                                         "origins (http://localhost:7080, ")) &&
                              Catch::Contains("--http-allowed-hosts"));
    }
  }
  // Host is checked first: a rebound page is same-origin with itself.
  CHECK_THAT(
      Decide(site, {"POST", "attacker.example", "http://attacker.example", "text/plain"}).second,
      Catch::StartsWith("Host \"attacker.example\""));
  // Then Origin, then Content-Type.
  CHECK(Decide(site, {"POST", "127.0.0.1:7080", "https://evil.example", "text/plain"}).first ==
        403);
}

TEST_CASE("with TLS the origins are https, a listed name may come through a load balancer") {
  SiteNames site{"https", 7443, {}, {"trainctl.example.com"}};
  CHECK(Decide(site, {"POST", "localhost:7443", "https://localhost:7443", "application/json"})
            .first == 0);
  CHECK(
      Decide(site, {"POST", "localhost:7443", "http://localhost:7443", "application/json"}).first ==
      403);
  CHECK(Decide(site,
               {"POST", "trainctl.example.com", "https://trainctl.example.com", "application/json"})
            .first == 0);
  // A plaintext trainctld behind a load balancer that serves HTTPS: the listed name's origin.
  site.scheme = "http";
  CHECK(Decide(site, {"POST", "10.0.0.5:7080", "https://trainctl.example.com", "application/json"})
            .first == 0);
  CHECK(Decide(site, {"POST", "10.0.0.5:7080", "https://evil.example", "application/json"}).first ==
        403);
  // "*" admits any Host, not any Origin: the page must still be trainctld's.
  site.allowed = {"*"};
  CHECK(Decide(site, {"POST", "lb.example", "http://lb.example", "application/json"}).first == 0);
  CHECK(Decide(site, {"POST", "lb.example", "https://evil.example", "application/json"}).first ==
        403);
}

}  // namespace
}  // namespace trainctl::server::rest
