// BindHttp (http_listen.h).
#include "common/http_listen.h"

#include <httplib.h>
#include <sys/socket.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/net_address.h"

namespace trainctl {

absl::StatusOr<std::unique_ptr<httplib::Server>> NewHttpServer(const std::string& tls_cert,
                                                               const std::string& tls_key) {
  if (tls_cert.empty()) return std::make_unique<httplib::Server>();
  auto https = std::make_unique<httplib::SSLServer>(tls_cert.c_str(), tls_key.c_str());
  if (!https->is_valid()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot serve HTTPS with ", tls_cert, " and ", tls_key));
  }
  return std::unique_ptr<httplib::Server>(std::move(https));
}

absl::StatusOr<int> BindHttp(httplib::Server& server, const std::string& listen,
                             const std::string& what) {
  const size_t colon = listen.rfind(':');
  int want = -1;
  if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &want) ||
      want < 0 || want > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot listen on \"", listen, "\" for ", what, ": expected HOST:PORT"));
  }
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  const std::string host = HostOf(listen);
  int port = want;
  if (want == 0) {
    port = server.bind_to_any_port(host);
  } else if (!server.bind_to_port(host, want)) {
    port = -1;
  }
  if (port <= 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", listen, " for ", what,
                     ": another process uses the port, or the address is not this host's"));
  }
  return port;
}

}  // namespace trainctl
