// Binding a cpp-httplib server the way every trainctl HTTP listener does (trainctld's REST port,
// trainctl-agent's --metrics-listen): HOST:PORT, port 0 picking a free one, SO_REUSEADDR without
// cpp-httplib's default SO_REUSEPORT, so that a second process on the same port fails to start
// instead of taking half of the connections.
//
//   absl::StatusOr<int> port = BindHttp(*server, "127.0.0.1:0", "HTTP (--http-listen)");
//   std::thread([&] { server->listen_after_bind(); });
//
// Thread-safety: call before the server listens.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace httplib {
class Server;
}

namespace trainctl {

// Binds `server` to `listen` ("HOST:PORT", "[::1]:PORT"); returns the port bound. `what` names
// the listener in errors ("metrics (--metrics-listen)"): INVALID_ARGUMENT when `listen` is not
// HOST:PORT, UNAVAILABLE when the port is taken or the address is not this host's.
absl::StatusOr<int> BindHttp(httplib::Server& server, const std::string& listen,
                             const std::string& what);

// A new server: HTTPS with the PEM files `tls_cert` and `tls_key`, or plain HTTP when both are
// empty. INVALID_ARGUMENT naming the files when they cannot serve.
absl::StatusOr<std::unique_ptr<httplib::Server>> NewHttpServer(const std::string& tls_cert,
                                                               const std::string& tls_key);

}  // namespace trainctl
