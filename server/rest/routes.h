// The REST routes: one per RPC of JobService, QuotaService, ClusterService, AuthService,
// SecretService and WorkdirService, and AdminService's GetVersion (a backup streams a database
// file: gRPC only), in Google's resource style (`GET /v1/jobs/{id}`, `POST /v1/jobs/{id}:cancel`).
// Each names its RPC, its request and response messages and where the request comes from (path,
// query, body), so that the server dispatches with it and the OpenAPI document (openapi.h) is
// written from it: a route cannot be served without being documented.
//
// Path parameters and query parameters are the JSON names of the request's fields ("{jobId}");
// a path parameter may name a nested field ("{project=quota.project}"). A parameter's value may
// hold ':' ("/v1/projects/p/workdirs/sha256:...") only where no route matches the path with
// parameters without one: ':' starts a custom verb first (rest_server.cc).
//
// Bodies are JSON, read whole under --max-request-bytes, except a workdir upload's
// (`POST /v1/projects/{project}/workdirs?digest=sha256:...`, workdir_upload.h): a tar archive
// (application/x-tar, its Content-Length required) that the route reads as it comes, under
// --max-workdir-mb, into the WorkdirStore (Route::consumes, HttpRequest::read_body).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "google/protobuf/descriptor.h"
#include "server/api.h"
#include "server/rest/rest_json.h"

namespace trainctl::server::rest {

// The streams being served: their number against the cap, and the server's stop.
class StreamRegistry {
 public:
  explicit StreamRegistry(int64_t max) : max_(max) {}
  // A place for one more stream; RESOURCE_EXHAUSTED past the cap. Release it with Release().
  absl::Status Acquire();
  void Release();
  int64_t open() const;
  // Waits up to `d` or until Stop(); false once stopping.
  bool Wait(std::chrono::milliseconds d);
  // Wakes every waiting stream to end.
  void Stop();
  bool stopping() const;

 private:
  const int64_t max_;
  mutable absl::Mutex mu_;
  int64_t open_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

// Reads a request's body as it comes, calling `receive` with each piece (a few KiB); false when
// the body could not be read whole (the client left or stalled, or `receive` returned false).
// Called at most once.
using BodyReader =
    std::function<bool(const std::function<bool(const char* data, size_t size)>& receive)>;

// One request, as the routes see it.
struct HttpRequest {
  // The whole body, for routes that consume JSON.
  std::string body;
  // For a route that consumes another type: its Content-Length (-1: none) and a reader of its
  // body (`body` stays empty). What the route does not read is discarded after its reply.
  int64_t content_length = -1;
  BodyReader read_body;
  // Path parameters (by field path) and query parameters.
  Params params;
  CallContext call;
};

// Where a stream writes; false once the client is gone.
using StreamWrite = std::function<bool(const std::string& chunk)>;

// A route's answer: a body, or a stream.
struct HttpReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // Set for streams: called once with the writer; it returns when the stream is over.
  std::function<void(const StreamWrite& write)> stream;
};

struct Route {
  const char* method;
  // The path template.
  const char* path;
  // "trainctl.v1.JobService/CancelJob".
  const char* rpc;
  const google::protobuf::Descriptor* request;
  const google::protobuf::Descriptor* response;
  // Where the body goes: "" (no body), "*" (the whole request), or a field of the request.
  const char* body;
  const char* summary;
  // "application/json", or "text/event-stream" for watches (logs add a stream of their own).
  const char* produces;
  // Query parameters that are not fields of the request.
  std::vector<std::string> extra_params;
  std::function<HttpReply(Api* api, StreamRegistry* streams, HttpRequest& req)> handle;
  // The body's media type: "application/json" (read whole, under --max-request-bytes), or
  // another for a route that reads its body as it comes (HttpRequest::read_body, under a cap of
  // its own): its bytes are then the request's `body` field, and the field `length_field` is its
  // Content-Length, required.
  const char* consumes = "application/json";
  const char* length_field = "";
  // For such a route: the checks made before its body is read (the caller's right, the
  // parameters, the Content-Length), which also answer `Expect: 100-continue`, so that a client
  // that asks first sends no body to be refused. `req` has no body reader.
  absl::Status (*check_first)(Api* api, const HttpRequest& req) = nullptr;
};

// Every route, in the order they are documented.
const std::vector<Route>& Routes();

// The reply for a failed call: google.rpc.Status JSON with the code's HTTP status.
HttpReply ErrorReply(const absl::Status& status);

}  // namespace trainctl::server::rest
