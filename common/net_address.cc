#include "common/net_address.h"

#include <arpa/inet.h>

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"

namespace trainctl {

std::string HostOf(absl::string_view address) {
  if (absl::ConsumePrefix(&address, "[")) {
    size_t close = address.find(']');
    return std::string(address.substr(0, close));
  }
  // One colon: HOST:PORT. More: a bare IPv6 address without a port.
  size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos || address.find(':') != colon) return std::string(address);
  return std::string(address.substr(0, colon));
}

bool IsLoopbackAddress(absl::string_view address) {
  std::string host = absl::AsciiStrToLower(HostOf(address));
  if (host == "localhost") return true;
  unsigned char v4[4];
  if (inet_pton(AF_INET, host.c_str(), v4) == 1) return v4[0] == 127;
  unsigned char v6[16];
  if (inet_pton(AF_INET6, host.c_str(), v6) == 1) {
    static const unsigned char kLoopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    return std::memcmp(v6, kLoopback, sizeof(v6)) == 0;
  }
  return false;
}

}  // namespace trainctl
