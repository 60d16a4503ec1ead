#include "server/rest/rest_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/http_listen.h"
#include "common/metrics.h"
#include "common/net_address.h"
#include "server/pki.h"
#include "server/rest/console_assets.h"
#include "server/rest/openapi.h"
#include "server/rest/request_guard.h"
#include "server/rest/routes.h"

namespace trainctl::server::rest {
namespace {

// A route's path template as a regex, with the field each captured segment sets.
struct CompiledRoute {
  const Route* route;
  std::regex pattern;
  std::vector<std::string> fields;
};

std::vector<CompiledRoute> Compile() {
  std::vector<CompiledRoute> out;
  static const std::regex kParam(R"(\{([A-Za-z0-9_]+)(=([A-Za-z0-9_.]+))?\})");
  for (const Route& r : Routes()) {
    CompiledRoute c{&r, {}, {}};
    std::string path = r.path;
    std::string regex = "^";
    std::smatch m;
    while (std::regex_search(path, m, kParam)) {
      regex += m.prefix().str();
      regex += "([^/:]+)";
      c.fields.push_back(m[3].matched ? m[3].str() : m[1].str());
      path = m.suffix().str();
    }
    regex += path + "$";
    c.pattern = std::regex(regex);
    out.push_back(std::move(c));
  }
  return out;
}

// "ipv4:127.0.0.1:5000", as gRPC words a peer.
std::string PeerOf(const httplib::Request& req) {
  if (req.remote_addr.find(':') != std::string::npos) {
    return absl::StrCat("ipv6:[", req.remote_addr, "]:", req.remote_port);
  }
  return absl::StrCat("ipv4:", req.remote_addr, ":", req.remote_port);
}

void Send(const HttpReply& reply, httplib::Response& res) {
  res.status = reply.status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(reply.body, reply.content_type.c_str());
}

void SendError(const absl::Status& status, httplib::Response& res) {
  Send(ErrorReply(status), res);
}

// A weak validator of an asset's bytes, for If-None-Match.
std::string ETagOf(std::string_view body) {
  return absl::StrCat("\"", std::hash<std::string_view>()(body), "\"");
}

bool ServeConsole(const httplib::Request& req, httplib::Response& res) {
  const std::string path = req.path == "/" ? "/index.html" : req.path;
  const ConsoleAsset* asset = FindConsoleAsset(path);
  if (asset == nullptr) return false;
  const std::string etag = ETagOf(asset->body);
  // Revalidated on every load (cheap with the ETag), so a new trainctld's console shows at once.
  res.set_header("Cache-Control", "no-cache");
  res.set_header("ETag", etag);
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
  if (req.get_header_value("If-None-Match") == etag) {
    res.status = 304;
    return true;
  }
  res.status = 200;
  res.set_content(std::string(asset->body), asset->content_type);
  return true;
}

std::optional<std::string> HeaderOf(const httplib::Request& req, const char* name) {
  if (!req.has_header(name)) return std::nullopt;
  return req.get_header_value(name);
}

// Whom the server bound to `port` answers to (request_guard.h).
SiteNames SiteOf(const RestOptions& options, int port) {
  SiteNames site;
  site.scheme = options.tls_cert.empty() ? "http" : "https";
  site.port = port;
  for (const std::string& address : {options.listen, options.advertised}) {
    if (address.empty()) continue;
    const std::string host = HostOf(address);
    if (!host.empty() && host != "0.0.0.0" && host != "::") site.own.push_back(host);
  }
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) == 0 && name[0] != '\0') site.own.emplace_back(name);
  // With TLS, the names its certificate holds: a browser reaches it by no other without a
  // warning.
  if (!options.tls_cert.empty()) {
    std::ifstream in(options.tls_cert);
    std::stringstream pem;
    pem << in.rdbuf();
    if (absl::StatusOr<CertificateInfo> cert = ParseCertificate(pem.str()); cert.ok()) {
      site.own.insert(site.own.end(), cert->dns_names.begin(), cert->dns_names.end());
    }
  }
  site.allowed = options.allowed_hosts;
  return site;
}

}  // namespace

RestServer::RestServer(Api* api, RestOptions options)
    : api_(api),
      options_(std::move(options)),
      streams_(std::make_unique<StreamRegistry>(options_.max_streams)) {}

RestServer::~RestServer() { Stop(); }

int64_t RestServer::open_streams() const { return streams_->open(); }

absl::StatusOr<int> RestServer::Start() {
  absl::StatusOr<std::unique_ptr<httplib::Server>> http =
      NewHttpServer(options_.tls_cert, options_.tls_key);
  if (!http.ok()) return http.status();
  http_ = *std::move(http);
  const size_t threads = static_cast<size_t>(options_.max_streams) + kOrdinaryThreads;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_payload_max_length(static_cast<size_t>(options_.max_body_bytes));
  // An idle keep-alive connection holds a thread: let it go soon.
  http_->set_keep_alive_timeout(2);
  http_->set_read_timeout(10);

  auto routes = std::make_shared<std::vector<CompiledRoute>>(Compile());
  Api* api = api_;
  StreamRegistry* streams = streams_.get();
  MetricsHandler metrics = options_.metrics;
  // Filled once the port is bound, before the first request.
  auto site = std::make_shared<SiteNames>();
  auto dispatch = [routes, api, streams, metrics, site](const httplib::Request& req,
                                                        httplib::Response& res) {
    const RequestFacts facts{req.method, HeaderOf(req, "Host"), HeaderOf(req, "Origin"),
                             HeaderOf(req, "Content-Type")};
    if (std::optional<Refusal> no = CheckRequest(*site, facts)) {
      Send(HttpReply{no->http_status, "application/json", StatusJson(no->status), nullptr}, res);
      return;
    }
    if (req.method == "GET" && req.path == "/v1/openapi.json") {
      res.set_content(OpenApiDocument(), "application/json");
      return;
    }
    if (req.method == "GET" && req.path == "/metrics" && metrics) {
      std::optional<std::string> authorization;
      if (req.has_header("Authorization")) authorization = req.get_header_value("Authorization");
      absl::StatusOr<std::string> text = metrics(authorization);
      if (!text.ok()) return SendError(text.status(), res);
      res.set_header("Cache-Control", "no-store");
      res.set_content(*text, trainctl::metrics::Registry::kContentType);
      return;
    }
    if (req.method == "GET" && ServeConsole(req, res)) return;
    std::set<std::string> allowed;
    for (const CompiledRoute& c : *routes) {
      std::smatch m;
      if (!std::regex_match(req.path, m, c.pattern)) continue;
      if (req.method != c.route->method) {
        allowed.insert(c.route->method);
        continue;
      }
      HttpRequest in;
      in.body = req.body;
      for (size_t i = 0; i < c.fields.size(); ++i) in.params.emplace(c.fields[i], m[i + 1].str());
      // The query string only: cpp-httplib also puts a form-encoded body into req.params.
      if (size_t q = req.target.find('?'); q != std::string::npos) {
        httplib::Params query;
        httplib::detail::parse_query_text(req.target.substr(q + 1), query);
        for (const auto& [k, v] : query) in.params.emplace(k, v);
      }
      if (req.has_header("Authorization"))
        in.call.authorization = req.get_header_value("Authorization");
      in.call.peer = PeerOf(req);
      HttpReply reply = c.route->handle(api, streams, in);
      if (!reply.stream) {
        Send(reply, res);
        return;
      }
      res.status = reply.status;
      res.set_header("Cache-Control", "no-store");
      res.set_chunked_content_provider(
          reply.content_type, [stream = std::move(reply.stream)](size_t, httplib::DataSink& sink) {
            stream([&sink](const std::string& chunk) {
              return sink.is_writable() && sink.write(chunk.data(), chunk.size());
            });
            sink.done();
            return true;
          });
      return;
    }
    if (!allowed.empty()) {
      res.set_header("Allow", absl::StrJoin(allowed, ", "));
      Send(HttpReply{405, "application/json",
                     StatusJson(absl::InvalidArgumentError(
                         absl::StrCat(req.method, " is not allowed on ", req.path, "; it takes ",
                                      absl::StrJoin(allowed, ", ")))),
                     nullptr},
           res);
      return;
    }
    SendError(absl::NotFoundError(absl::StrCat("no route ", req.method, " ", req.path,
                                               "; GET /v1/openapi.json lists every route")),
              res);
  };
  // Every path goes to `dispatch`, which tells a 404 from a 405.
  const char* const kAnyPath = R"(/.*)";
  http_->Get(kAnyPath, dispatch);
  http_->Post(kAnyPath, dispatch);
  http_->Put(kAnyPath, dispatch);
  http_->Delete(kAnyPath, dispatch);
  http_->Patch(kAnyPath, dispatch);
  const int64_t max_body = options_.max_body_bytes;
  // Errors cpp-httplib answers itself (a body over the limit, a bad request line) get a
  // google.rpc.Status body like every other.
  http_->set_error_handler([max_body](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    absl::Status status = absl::UnknownError(absl::StrCat("HTTP ", res.status));
    if (res.status == 413) {
      status = absl::ResourceExhaustedError(
          absl::StrCat("the request body is larger than the ", max_body,
                       " bytes trainctld accepts (its --max-request-bytes)"));
    } else if (res.status == 400) {
      status = absl::InvalidArgumentError("malformed HTTP request");
    }
    res.set_content(StatusJson(status), "application/json");
  });
  http_->set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        spdlog::error("REST {} {}: {}", req.method, req.path, what);
        SendError(absl::InternalError(absl::StrCat("internal error: ", what)), res);
      });

  // Without SO_REUSEPORT: a second trainctld on the same port fails to start.
  absl::StatusOr<int> port = BindHttp(*http_, options_.listen, "HTTP (--http-listen)");
  if (!port.ok()) return port.status();
  *site = SiteOf(options_, *port);
  thread_ = std::thread([this] { http_->listen_after_bind(); });
  // httplib's stop() does nothing until the thread listens: return once it does, so that a Stop
  // right after Start (a daemon whose start fails further on) is not lost.
  for (const absl::Time give_up = absl::Now() + absl::Seconds(5);
       !http_->is_running() && absl::Now() < give_up;) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  return port;
}

void RestServer::Stop() {
  if (stopped_.exchange(true)) return;
  streams_->Stop();
  if (http_ != nullptr) http_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace trainctl::server::rest
