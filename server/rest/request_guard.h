// RequestGuard: the checks every HTTP request to trainctld's REST port passes before any route,
// so that a web page of another site, open in a browser on a host that reaches trainctld, can
// neither drive the API nor read from it:
//
//   1. Host (all methods): one of trainctld's names, or a page could rebind its own DNS name to
//      trainctld's address and be served as if it were trainctld's (DNS rebinding). Allowed:
//      loopback (localhost, 127.0.0.0/8, [::1]), any IP address literal (a name can be rebound,
//      an address cannot: a page at another address is another origin), this host's name, the
//      addresses trainctld listens on and advertises, with TLS the DNS names of its
//      certificate, and the names of --http-allowed-hosts
//      ("*": any Host, for a load balancer that checks Host itself). A request without Host
//      (not a browser's) passes.
//   2. Origin (all methods), when present: one of trainctld's own origins: the request's own
//      (the scheme trainctld serves and the Host the request was sent to, a same-origin request),
//      the scheme served with a name of trainctld's and the port it is bound to, or any scheme
//      and port with a name of --http-allowed-hosts (a load balancer may serve HTTPS before a
//      plaintext trainctld). "null" (a sandboxed frame, a file) is no origin of trainctld's.
//   3. Content-Type (POST, PUT, PATCH, DELETE, also with an empty body): the type the route
//      takes (RequestFacts::body_type): application/json, or application/x-tar for a workdir
//      upload; parameters allowed. A form, or a fetch() that needs no CORS preflight, can send
//      only text/plain, application/x-www-form-urlencoded or multipart/form-data.
//
// A refusal names the check and how to pass it: 403 PERMISSION_DENIED for Host and Origin, 415
// (INVALID_ARGUMENT) for Content-Type. The checks are pure: the server gathers what they need.
//
//   SiteNames site{"http", 7080, {"127.0.0.1", "gpu-3"}, {"trainctl.example.com"}};
//   if (std::optional<Refusal> no = CheckRequest(site, {"POST", "localhost:7080",
//                                                      "https://evil.example", "text/plain"})) {
//     reply no->http_status with no->status;
//   }
//
// Thread-safe: the functions keep no state.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace trainctl::server::rest {

// Whom trainctld's REST port answers to.
struct SiteNames {
  // "http", or "https" with TLS.
  std::string scheme = "http";
  // The port bound.
  int port = 0;
  // Names and addresses trainctld knows as its own beside loopback: the host it listens on
  // (unless 0.0.0.0 or ::), the one it advertises, this host's name, its certificate's names.
  std::vector<std::string> own;
  // --http-allowed-hosts: names trainctld cannot know (behind a load balancer, a DNS name of
  // a 0.0.0.0 listener, the shared name of an HA pair); "*" admits any Host. Lower case.
  std::vector<std::string> allowed;
};

// What the checks read of one request; a header absent is nullopt.
struct RequestFacts {
  std::string method;
  std::optional<std::string> host;
  std::optional<std::string> origin;
  std::optional<std::string> content_type;
  // The media type the request's route takes (Route::consumes); lower case, never a type a page
  // of another site can send without a preflight.
  std::string body_type = "application/json";
};

struct Refusal {
  // 403 or 415.
  int http_status = 403;
  absl::Status status;
};

// nullopt when the request may be served; else why not (checks in the order above).
std::optional<Refusal> CheckRequest(const SiteNames& site, const RequestFacts& request);

// Whether `name` (a host, without port; IPv6 with or without brackets) is loopback or an IP
// address literal, or one of `site`'s own or allowed names. Exposed for tests.
bool HostAllowed(const SiteNames& site, const std::string& name);

}  // namespace trainctl::server::rest
