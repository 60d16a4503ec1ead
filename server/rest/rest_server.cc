#include "server/rest/rest_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <string_view>

#include "absl/strings/numbers.h"
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

// A route's path template as regexes, with the field each captured segment sets.
struct CompiledRoute {
  const Route* route;
  // Each parameter one segment without ':', which starts a custom verb ("/v1/jobs/{id}:cancel").
  std::regex pattern;
  // Each parameter one segment, ':' allowed ("/v1/projects/p/workdirs/sha256:...").
  std::regex loose;
  std::vector<std::string> fields;
};

std::vector<CompiledRoute> Compile() {
  std::vector<CompiledRoute> out;
  static const std::regex kParam(R"(\{([A-Za-z0-9_]+)(=([A-Za-z0-9_.]+))?\})");
  for (const Route& r : Routes()) {
    CompiledRoute c{&r, {}, {}, {}};
    std::string path = r.path;
    std::string strict = "^";
    std::string loose = "^";
    std::smatch m;
    while (std::regex_search(path, m, kParam)) {
      strict += m.prefix().str() + "([^/:]+)";
      loose += m.prefix().str() + "([^/]+)";
      c.fields.push_back(m[3].matched ? m[3].str() : m[1].str());
      path = m.suffix().str();
    }
    c.pattern = std::regex(strict + path + "$");
    c.loose = std::regex(loose + path + "$");
    out.push_back(std::move(c));
  }
  return out;
}

// The route a request goes to, with its path parameters; or none, with the methods its path
// takes (none: no route has the path).
struct RouteMatch {
  const Route* route = nullptr;
  Params params;
  std::set<std::string> allowed;
};

// Parameters hold no ':' first, so that "/v1/jobs/j-1:watch" is the watch of j-1, not a job
// "j-1:watch". Only a path no route matches so is tried again with parameters that do
// ("/v1/projects/p/workdirs/sha256:..."), and then only against routes of its method: a verb
// misspelt ("/v1/jobs/j-1:cancle") is no route rather than a method the path does not take.
RouteMatch FindRoute(const std::vector<CompiledRoute>& routes, const std::string& method,
                     const std::string& path) {
  RouteMatch out;
  for (const bool loose : {false, true}) {
    for (const CompiledRoute& c : routes) {
      std::smatch m;
      if (!std::regex_match(path, m, loose ? c.loose : c.pattern)) continue;
      if (method != c.route->method) {
        if (!loose) out.allowed.insert(c.route->method);
        continue;
      }
      out.route = c.route;
      for (size_t i = 0; i < c.fields.size(); ++i) out.params.emplace(c.fields[i], m[i + 1].str());
      return out;
    }
    if (!out.allowed.empty()) return out;
  }
  return out;
}

// The request's Content-Length; -1 when it has none (or a chunked body, whose length the header
// does not give).
int64_t ContentLengthOf(const httplib::Request& req) {
  int64_t n = -1;
  if (req.has_header("Transfer-Encoding") || !req.has_header("Content-Length") ||
      !absl::SimpleAtoi(req.get_header_value("Content-Length"), &n) || n < 0) {
    return -1;
  }
  return n;
}

// The body of a request that has one (POST, PUT, PATCH, DELETE; cpp-httplib reads none of it
// itself), read at most once, as its route needs it: whole under a cap, or as it comes. What no
// route read is discarded after the reply (Finish), so that a client still sending it reads the
// reply rather than a reset connection.
class HttpBody {
 public:
  // `reader`: null for a request without a body (GET). A body is read to its end, if dropped, up
  // to `max_read` bytes (cpp-httplib's cap).
  HttpBody(const httplib::ContentReader* reader, int64_t max_read)
      : reader_(reader), max_read_(max_read) {}

  // The whole body; RESOURCE_EXHAUSTED past `max` bytes, refused by its Content-Length before a
  // byte is read when it has one (a chunked one over `max` is read on and dropped).
  absl::StatusOr<std::string> ReadAll(const httplib::Request& req, int64_t max) {
    if (reader_ == nullptr) return std::string();
    if (ContentLengthOf(req) > max) return TooLarge(max);
    std::string out;
    int64_t seen = 0;
    read_ = true;
    whole_ = (*reader_)([this, &out, &seen, max](const char* data, size_t size) {
      seen += static_cast<int64_t>(size);
      if (seen > max) {
        std::string().swap(out);
        return seen <= max_read_;
      }
      out.append(data, size);
      return true;
    });
    const bool over = seen > max;
    if (over) return TooLarge(max);
    if (!whole_) return absl::InvalidArgumentError("the request body could not be read whole");
    return out;
  }

  // The body as it comes (HttpRequest::read_body).
  BodyReader Stream() {
    return [this](const std::function<bool(const char*, size_t)>& receive) {
      if (reader_ == nullptr) return true;
      if (read_) return false;
      read_ = true;
      whole_ =
          (*reader_)([&receive](const char* data, size_t size) { return receive(data, size); });
      return whole_;
    };
  }

  // After the reply: discards what was not read; a body left part read closes the connection.
  void Finish(httplib::Response& res) {
    if (reader_ == nullptr) return;
    if (!read_) {
      read_ = true;
      // cpp-httplib sets the status of a read that fails: the reply's stands.
      const int status = res.status;
      whole_ = (*reader_)([](const char*, size_t) { return true; });
      res.status = status;
    }
    if (!whole_) res.set_header("Connection", "close");
  }

  static absl::Status TooLarge(int64_t max) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the request body is larger than the ", max,
                     " bytes trainctld accepts (its --max-request-bytes)"));
  }

 private:
  const httplib::ContentReader* const reader_;
  const int64_t max_read_;
  // The body was read (whole_: to its end).
  bool read_ = false;
  bool whole_ = true;
};

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

// What the guard checks of a request to `found`.
RequestFacts FactsOf(const httplib::Request& req, const RouteMatch& found) {
  RequestFacts facts{req.method, HeaderOf(req, "Host"), HeaderOf(req, "Origin"),
                     HeaderOf(req, "Content-Type")};
  if (found.route != nullptr) facts.body_type = found.route->consumes;
  return facts;
}

HttpReply RefusalReply(const Refusal& no) {
  return HttpReply{no.http_status, "application/json", StatusJson(no.status), nullptr};
}

// Serves every request: the guard's checks, the document, metrics, the console, the routes.
struct Dispatcher {
  std::vector<CompiledRoute> routes;
  Api* api = nullptr;
  StreamRegistry* streams = nullptr;
  MetricsHandler metrics;
  // --max-request-bytes: a JSON body's cap.
  int64_t max_body = 0;
  // cpp-httplib's cap on every body: the larger of max_body and the largest upload.
  int64_t max_read = 0;
  // Filled once the port is bound, before the first request.
  SiteNames site;

  void Serve(const httplib::Request& req, httplib::Response& res, HttpBody& body) const {
    RouteMatch found = FindRoute(routes, req.method, req.path);
    if (std::optional<Refusal> no = CheckRequest(site, FactsOf(req, found))) {
      return Send(RefusalReply(*no), res);
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
    if (found.route != nullptr)
      return ServeRoute(*found.route, std::move(found.params), req, res, body);
    if (!found.allowed.empty()) {
      res.set_header("Allow", absl::StrJoin(found.allowed, ", "));
      Send(HttpReply{405, "application/json",
                     StatusJson(absl::InvalidArgumentError(
                         absl::StrCat(req.method, " is not allowed on ", req.path, "; it takes ",
                                      absl::StrJoin(found.allowed, ", ")))),
                     nullptr},
           res);
      return;
    }
    SendError(absl::NotFoundError(absl::StrCat("no route ", req.method, " ", req.path,
                                               "; GET /v1/openapi.json lists every route")),
              res);
  }

  // Answers `Expect: 100-continue`: 100 (send the body), or the refusal that needs no body (the
  // guard's, a JSON body over the cap, a route's check_first), written into `res`.
  int Expect(const httplib::Request& req, httplib::Response& res) const {
    RouteMatch found = FindRoute(routes, req.method, req.path);
    HttpReply refused;
    if (std::optional<Refusal> no = CheckRequest(site, FactsOf(req, found))) {
      refused = RefusalReply(*no);
    } else if (found.route == nullptr) {
      return 100;
    } else if (std::string_view(found.route->consumes) == "application/json") {
      if (ContentLengthOf(req) <= max_body) return 100;
      refused =
          HttpReply{413, "application/json", StatusJson(HttpBody::TooLarge(max_body)), nullptr};
    } else if (found.route->check_first != nullptr) {
      HttpRequest in = RequestOf(req, std::move(found.params));
      in.content_length = ContentLengthOf(req);
      absl::Status s = found.route->check_first(api, in);
      if (s.ok()) return 100;
      refused = ErrorReply(s);
    } else {
      return 100;
    }
    Send(refused, res);
    // The client may send the body all the same: it is not read.
    res.set_header("Connection", "close");
    return refused.status;
  }

  // The request as a route sees it, without its body.
  static HttpRequest RequestOf(const httplib::Request& req, Params params) {
    HttpRequest in;
    in.params = std::move(params);
    // The query string only: cpp-httplib also puts a form-encoded body into req.params.
    if (size_t q = req.target.find('?'); q != std::string::npos) {
      httplib::Params query;
      httplib::detail::parse_query_text(req.target.substr(q + 1), query);
      for (const auto& [k, v] : query) in.params.emplace(k, v);
    }
    if (req.has_header("Authorization")) {
      in.call.authorization = req.get_header_value("Authorization");
    }
    in.call.peer = PeerOf(req);
    return in;
  }

  void ServeRoute(const Route& route, Params params, const httplib::Request& req,
                  httplib::Response& res, HttpBody& body) const {
    HttpRequest in = RequestOf(req, std::move(params));
    if (std::string_view(route.consumes) == "application/json") {
      absl::StatusOr<std::string> whole = body.ReadAll(req, max_body);
      if (whole.status().code() == absl::StatusCode::kResourceExhausted) {
        Send(HttpReply{413, "application/json", StatusJson(whole.status()), nullptr}, res);
        return;
      }
      if (!whole.ok()) return SendError(whole.status(), res);
      in.body = *std::move(whole);
    } else {
      in.content_length = ContentLengthOf(req);
      in.read_body = body.Stream();
    }
    HttpReply reply = route.handle(api, streams, in);
    if (!reply.stream) return Send(reply, res);
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
  }
};

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
  // cpp-httplib's cap binds every body, also one read as it comes: the largest of an upload's and a
  // JSON body's. A JSON body is held to --max-request-bytes by the dispatcher (HttpBody).
  const int64_t max_read = std::max(options_.max_body_bytes, api_->max_workdir_bytes());
  http_->set_payload_max_length(static_cast<size_t>(max_read));
  // An idle keep-alive connection holds a thread: let it go soon.
  http_->set_keep_alive_timeout(2);
  http_->set_read_timeout(10);

  auto dispatcher = std::make_shared<Dispatcher>();
  dispatcher->routes = Compile();
  dispatcher->api = api_;
  dispatcher->streams = streams_.get();
  dispatcher->metrics = options_.metrics;
  dispatcher->max_body = options_.max_body_bytes;
  dispatcher->max_read = max_read;
  // Every path goes to the dispatcher, which tells a 404 from a 405. A request with a body gets
  // it unread: the dispatcher reads it as its route needs.
  const char* const kAnyPath = R"(/.*)";
  http_->Get(kAnyPath, [dispatcher](const httplib::Request& req, httplib::Response& res) {
    HttpBody body(nullptr, 0);
    dispatcher->Serve(req, res, body);
  });
  const auto with_body = [dispatcher](const httplib::Request& req, httplib::Response& res,
                                      const httplib::ContentReader& reader) {
    HttpBody body(&reader, dispatcher->max_read);
    dispatcher->Serve(req, res, body);
    body.Finish(res);
  };
  http_->Post(kAnyPath, with_body);
  http_->Put(kAnyPath, with_body);
  http_->Delete(kAnyPath, with_body);
  http_->Patch(kAnyPath, with_body);
  http_->set_expect_100_continue_handler(
      [dispatcher](const httplib::Request& req, httplib::Response& res) {
        return dispatcher->Expect(req, res);
      });
  // cpp-httplib would read the body of a method no handler takes (PRI) under its own cap, which
  // is the largest upload's: refuse it unread.
  http_->set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    if (req.method != "PRI") return httplib::Server::HandlerResponse::Unhandled;
    Send(HttpReply{405, "application/json",
                   StatusJson(absl::InvalidArgumentError("PRI is not allowed")), nullptr},
         res);
    res.set_header("Connection", "close");
    return httplib::Server::HandlerResponse::Handled;
  });
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
  dispatcher->site = SiteOf(options_, *port);
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
