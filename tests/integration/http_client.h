// cpp-httplib clients of a MiniCluster's REST port (its http_address()), for the integration
// tests that speak HTTP: the REST API, the console, GET /metrics.
//
//   auto http = Http(c);                    // plaintext cluster
//   auto https = Https(c);                  // ClusterOptions::tls: verifies with the cluster's CA
//   httplib::Result r = http->Get("/v1/nodes");
#pragma once

#include <httplib.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {

// The port of the cluster's REST address.
inline int HttpPort(const MiniCluster& c) {
  const std::string& addr = c.http_address();
  int port = 0;
  REQUIRE(absl::SimpleAtoi(addr.substr(addr.rfind(':') + 1), &port));
  return port;
}

inline std::unique_ptr<httplib::Client> Http(const MiniCluster& c) {
  const std::string& addr = c.http_address();
  auto client = std::make_unique<httplib::Client>(addr.substr(0, addr.rfind(':')), HttpPort(c));
  client->set_read_timeout(60);
  return client;
}

inline std::unique_ptr<httplib::SSLClient> Https(const MiniCluster& c) {
  auto client = std::make_unique<httplib::SSLClient>("127.0.0.1", HttpPort(c));
  client->set_ca_cert_path((c.PkiDir() + "/ca.crt").c_str());
  client->enable_server_certificate_verification(true);
  client->set_read_timeout(60);
  return client;
}

}  // namespace trainctl::testing
