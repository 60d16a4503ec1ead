#include "server/rest/request_guard.h"

#include <arpa/inet.h>

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/net_address.h"

namespace trainctl::server::rest {
namespace {

// A host and port as a browser sends them in Host ("name:port", "[::1]:port") and Origin.
struct Authority {
  // Lower case, without brackets or a trailing dot.
  std::string host;
  int port = 0;
};

// "name", "[v6]" or either with ":port"; `default_port` when none. nullopt when malformed.
std::optional<Authority> ParseAuthority(absl::string_view text, int default_port) {
  Authority out;
  out.port = default_port;
  absl::string_view port;
  if (absl::ConsumePrefix(&text, "[")) {
    const size_t close = text.find(']');
    if (close == absl::string_view::npos) return std::nullopt;
    out.host = std::string(text.substr(0, close));
    text.remove_prefix(close + 1);
    if (!text.empty() && !absl::ConsumePrefix(&text, ":")) return std::nullopt;
    port = text;
  } else {
    const size_t colon = text.rfind(':');
    if (colon != absl::string_view::npos && text.find(':') != colon) {
      return std::nullopt;  // a bare IPv6 address: Host and Origin bracket it
    }
    out.host = std::string(text.substr(0, colon));
    if (colon != absl::string_view::npos) port = text.substr(colon + 1);
    if (absl::EndsWith(out.host, ".")) out.host.pop_back();
  }
  if (!port.empty() && (!absl::SimpleAtoi(port, &out.port) || out.port < 1 || out.port > 65535)) {
    return std::nullopt;
  }
  if (out.host.empty()) return std::nullopt;
  absl::AsciiStrToLower(&out.host);
  return out;
}

bool IsIpLiteral(const std::string& host) {
  unsigned char addr[16];
  return inet_pton(AF_INET, host.c_str(), addr) == 1 ||
         inet_pton(AF_INET6, host.c_str(), addr) == 1;
}

// `name` as the site lists it: lower case, without brackets.
std::string Normal(absl::string_view name) {
  absl::ConsumePrefix(&name, "[");
  absl::ConsumeSuffix(&name, "]");
  return absl::AsciiStrToLower(name);
}

bool Contains(const std::vector<std::string>& names, const std::string& host) {
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& n) { return n != "*" && Normal(n) == host; });
}

// Loopback, or a name or address trainctld knows as its own.
bool IsOwnName(const SiteNames& site, const std::string& host) {
  return IsLoopbackAddress(host) || Contains(site.own, host);
}

// How a host is written in a URL.
std::string UrlHost(const std::string& host) {
  return host.find(':') != std::string::npos ? absl::StrCat("[", host, "]") : host;
}

int DefaultPort(absl::string_view scheme) { return scheme == "https" ? 443 : 80; }

// localhost, 127.0.0.1, [::1] and the site's own names, each once, in that order.
std::vector<std::string> OwnNames(const SiteNames& site) {
  std::vector<std::string> out = {"localhost", "127.0.0.1", "::1"};
  for (const std::string& n : site.own) {
    if (std::find(out.begin(), out.end(), Normal(n)) == out.end()) out.push_back(Normal(n));
  }
  return out;
}

Refusal Forbidden(std::string message) {
  return Refusal{403, absl::PermissionDeniedError(std::move(message))};
}

std::optional<Refusal> CheckHost(const SiteNames& site, const std::string& header) {
  std::optional<Authority> host = ParseAuthority(header, DefaultPort(site.scheme));
  if (host.has_value() && HostAllowed(site, host->host)) return std::nullopt;
  std::vector<std::string> names;
  for (const std::string& n : OwnNames(site)) names.push_back(UrlHost(n));
  for (const std::string& n : site.allowed) names.push_back(UrlHost(Normal(n)));
  return Forbidden(absl::StrCat(
      "Host \"", header, "\" is not one of this trainctld's names (", absl::StrJoin(names, ", "),
      ", or an IP address), so a web page that rebinds its own name to this address is not "
      "served; if trainctld is reached by that name, add it with --http-allowed-hosts"));
}

bool OriginAllowed(const SiteNames& site, const std::optional<std::string>& host_header,
                   absl::string_view origin) {
  std::string scheme;
  if (absl::ConsumePrefix(&origin, "http://")) {
    scheme = "http";
  } else if (absl::ConsumePrefix(&origin, "https://")) {
    scheme = "https";
  } else {
    return false;  // "null", or no web origin
  }
  std::optional<Authority> o = ParseAuthority(origin, DefaultPort(scheme));
  if (!o.has_value()) return false;
  // A name the operator listed: whatever scheme and port a load balancer serves it on.
  if (Contains(site.allowed, o->host)) return true;
  if (scheme != site.scheme) return false;
  if (o->port == site.port && IsOwnName(site, o->host)) return true;
  // Same-origin: the page came from where the request goes (its Host passed the Host check).
  if (!host_header.has_value()) return false;
  std::optional<Authority> h = ParseAuthority(*host_header, DefaultPort(site.scheme));
  return h.has_value() && h->host == o->host && h->port == o->port;
}

std::optional<Refusal> CheckOrigin(const SiteNames& site,
                                   const std::optional<std::string>& host_header,
                                   const std::string& origin) {
  if (OriginAllowed(site, host_header, origin)) return std::nullopt;
  std::vector<std::string> origins;
  for (const std::string& n : OwnNames(site)) {
    origins.push_back(absl::StrCat(site.scheme, "://", UrlHost(n), ":", site.port));
  }
  for (const std::string& n : site.allowed) {
    if (n != "*") origins.push_back(absl::StrCat("http(s)://", UrlHost(Normal(n))));
  }
  return Forbidden(absl::StrCat(
      "Origin \"", origin, "\" is not one of this trainctld's origins (",
      absl::StrJoin(origins, ", "),
      "), so a web page of another site may not call its API; if the page is trainctld's console "
      "under another name, add that name with --http-allowed-hosts"));
}

bool ChangesState(const std::string& method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
}

std::optional<Refusal> CheckContentType(const RequestFacts& request) {
  if (!ChangesState(request.method)) return std::nullopt;
  if (request.content_type.has_value()) {
    absl::string_view media = *request.content_type;
    media = media.substr(0, media.find(';'));
    if (absl::AsciiStrToLower(absl::StripAsciiWhitespace(media)) == request.body_type) {
      return std::nullopt;
    }
  }
  const std::string got = request.content_type.has_value()
                              ? absl::StrCat("\"", *request.content_type, "\"")
                              : std::string("none");
  return Refusal{415, absl::InvalidArgumentError(absl::StrCat(
                          request.method, " needs Content-Type: ", request.body_type,
                          " (also with an empty body), got ", got,
                          ": a web page of another site can send other types without the "
                          "browser asking first; with curl, add -H 'Content-Type: ",
                          request.body_type, "'"))};
}

}  // namespace

bool HostAllowed(const SiteNames& site, const std::string& name) {
  const std::string host = Normal(name);
  if (std::find(site.allowed.begin(), site.allowed.end(), "*") != site.allowed.end()) return true;
  return IsOwnName(site, host) || IsIpLiteral(host) || Contains(site.allowed, host);
}

std::optional<Refusal> CheckRequest(const SiteNames& site, const RequestFacts& request) {
  if (request.host.has_value()) {
    if (std::optional<Refusal> no = CheckHost(site, *request.host)) return no;
  }
  if (request.origin.has_value()) {
    if (std::optional<Refusal> no = CheckOrigin(site, request.host, *request.origin)) return no;
  }
  return CheckContentType(request);
}

}  // namespace trainctl::server::rest
