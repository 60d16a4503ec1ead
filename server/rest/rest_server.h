// RestServer: trainctld's REST API and web console over HTTP (cpp-httplib), beside gRPC.
//
// Every request passes request_guard.h's checks first (Host, Origin, Content-Type), so that a
// web page of another site cannot drive the API through a browser. Every route of routes.h
// calls the same Api the gRPC services call, so both transports authorize, validate and decide
// alike; bodies are the protobuf JSON mapping, read whole under max_body_bytes, except a workdir
// upload's (a tar archive, read as it comes under --max-workdir-mb, routes.h); errors are
// google.rpc.Status JSON with their HTTP status. cpp-httplib reads no body itself: a route reads
// it, and what no route read (a request refused) is discarded after the reply is decided, so
// that the client reads the reply; `Expect: 100-continue` is answered with the refusals that need
// no body. `GET /v1/openapi.json` describes every route; `GET /` serves the console
// (console_assets.h), and `GET /metrics` trainctld's metrics (RestOptions::metrics,
// metrics_daemon.h).
//
// Threads: cpp-httplib serves each connection on a thread of one pool. Long-lived streams (job
// watches as server-sent events, log follows, workdir uploads) hold their thread while they last,
// so the pool has max_streams threads for them plus kOrdinaryThreads for everything else, and a
// stream past max_streams is refused with 429: ordinary requests are served however many streams
// are open.
//
// Thread-safe: Start once, Stop once (or let the destructor stop it).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "server/api.h"
#include "server/metrics_daemon.h"

namespace httplib {
class Server;
}

namespace trainctl::server::rest {

class StreamRegistry;

struct RestOptions {
  // HOST:PORT; port 0 picks a free one.
  std::string listen = "127.0.0.1:7080";
  // Long-lived streams served at once.
  int64_t max_streams = 64;
  // The largest JSON request body accepted (413 past it).
  int64_t max_body_bytes = int64_t{4} << 20;
  // PEM files: serve HTTPS. Both or neither.
  std::string tls_cert;
  std::string tls_key;
  // Serves `GET /metrics` (Prometheus) when set; it authenticates the caller itself.
  MetricsHandler metrics;
  // --http-allowed-hosts: Host names served beside trainctld's own; "*" any (SiteNames::allowed).
  std::vector<std::string> allowed_hosts;
  // --advertise-http-address (HOST:PORT), whose host is one of trainctld's own names; "" none.
  std::string advertised;
};

class RestServer {
 public:
  // Threads kept for requests that are not streams.
  static constexpr int kOrdinaryThreads = 8;

  // `api` (not owned) must outlive the server.
  RestServer(Api* api, RestOptions options);
  ~RestServer();

  RestServer(const RestServer&) = delete;
  RestServer& operator=(const RestServer&) = delete;

  // Binds and starts serving; returns the port bound. UNAVAILABLE naming the address when it
  // cannot be bound (in use, not local).
  absl::StatusOr<int> Start();
  // Ends every stream, stops accepting and waits for the serving thread.
  void Stop();

  // Streams open now.
  int64_t open_streams() const;

 private:
  Api* const api_;
  const RestOptions options_;
  std::unique_ptr<httplib::Server> http_;
  std::unique_ptr<StreamRegistry> streams_;
  std::thread thread_;
  std::atomic<bool> stopped_{false};
};

}  // namespace trainctl::server::rest
