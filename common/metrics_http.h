// MetricsHttpServer: a plain-HTTP listener that serves `GET /metrics` (Prometheus text format)
// and nothing else, for programs without an HTTP server of their own (trainctl-agent's
// --metrics-listen). trainctld serves its metrics on its REST port instead.
//
//   MetricsHttpServer server("127.0.0.1:9108", [&] { return metrics.Expose(); });
//   absl::StatusOr<int> port = server.Start();  // then serving on its own thread
//
// No authentication and no TLS: bind it to loopback or a management network.
//
// Thread-safe: Start once, Stop once (or let the destructor stop it). `expose` runs on the
// server's threads, one request at a time or several at once.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace httplib {
class Server;
}

namespace trainctl::metrics {

class MetricsHttpServer {
 public:
  // `listen` is HOST:PORT ("[::1]:9108"); port 0 picks a free one. `flag` names it in errors.
  MetricsHttpServer(std::string listen, std::function<std::string()> expose,
                    std::string flag = "--metrics-listen");
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // Binds and starts serving; returns the port bound. UNAVAILABLE naming the address and the
  // flag when it cannot be bound.
  absl::StatusOr<int> Start();
  void Stop();

 private:
  const std::string listen_;
  const std::function<std::string()> expose_;
  const std::string flag_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
};

}  // namespace trainctl::metrics
