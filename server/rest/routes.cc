#include "server/rest/routes.h"

#include <future>
#include <memory>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/job_states.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "server/rest/workdir_upload.h"

namespace trainctl::server::rest {
namespace {

namespace pb = google::protobuf;

// How long a request waits for trainctld's answer before it is UNAVAILABLE.
constexpr std::chrono::seconds kCallTimeout(60);
// A watch stream with nothing to say sends a comment this often, so that proxies keep it and a
// client that left is noticed.
constexpr std::chrono::seconds kKeepAlive(15);
// How often a log follow asks the agent again while the log does not grow.
constexpr std::chrono::milliseconds kFollowPoll(250);

// Runs one Api operation and waits for its reply, at most `wait`.
template <class Req, class Resp>
absl::StatusOr<Resp> Call(Api* api, void (Api::*op)(const CallContext&, const Req&, Reply<Resp>),
                          const CallContext& call, const Req& req,
                          std::chrono::seconds wait = kCallTimeout) {
  auto reply = std::make_shared<std::promise<absl::StatusOr<Resp>>>();
  std::future<absl::StatusOr<Resp>> got = reply->get_future();
  (api->*op)(call, req, [reply](absl::StatusOr<Resp> r) { reply->set_value(std::move(r)); });
  if (got.wait_for(wait) != std::future_status::ready) {
    return absl::UnavailableError(
        absl::StrCat("trainctld did not answer within ", wait.count(), "s"));
  }
  return got.get();
}

// Fills `out` from the request: the body (where the route puts it), then the path and query
// parameters, which win over the body.
absl::Status ParseRequest(const HttpRequest& req, const std::string& body,
                          const std::vector<std::string>& extra, pb::Message* out) {
  out->Clear();
  if (!body.empty() && !absl::StripAsciiWhitespace(req.body).empty()) {
    if (body == "*") {
      if (absl::Status s = FromJson(req.body, "body", out); !s.ok()) return s;
    } else {
      const pb::FieldDescriptor* field = out->GetDescriptor()->FindFieldByName(body);
      pb::Message* target = out->GetReflection()->MutableMessage(out, field);
      if (absl::Status s = FromJson(req.body, "body", target); !s.ok()) return s;
    }
  }
  return SetFields(req.params, extra, out);
}

HttpReply JsonReply(const pb::Message& m) {
  HttpReply r;
  r.body = ToJson(m);
  return r;
}

template <class Req, class Resp>
Route Unary(const char* method, const char* path, const char* rpc, const char* body,
            const char* summary, void (Api::*op)(const CallContext&, const Req&, Reply<Resp>)) {
  Route r{
      method, path,   rpc, Req::descriptor(), Resp::descriptor(), body, summary, "application/json",
      {},     nullptr};
  r.handle = [op, body = std::string(body)](Api* api, StreamRegistry*, HttpRequest& req) {
    Req message;
    if (absl::Status s = ParseRequest(req, body, {}, &message); !s.ok()) return ErrorReply(s);
    absl::StatusOr<Resp> resp = Call(api, op, req.call, message);
    if (!resp.ok()) return ErrorReply(resp.status());
    return JsonReply(*resp);
  };
  return r;
}

// POST /v1/jobs takes a CreateJobRequest ({"spec": ..., "requestId": ...}) or a bare JobSpec.
HttpReply CreateJob(Api* api, StreamRegistry*, HttpRequest& req) {
  v1::CreateJobRequest message;
  pb::Struct top;
  if (!pb::util::JsonStringToMessage(req.body, &top).ok()) {
    return ErrorReply(absl::InvalidArgumentError(
        "body must be a JSON object: a JobSpec, or {\"spec\": JobSpec, \"requestId\": \"...\"}"));
  }
  const bool wrapped = top.fields().count("spec") > 0 || top.fields().count("requestId") > 0 ||
                       top.fields().count("request_id") > 0;
  absl::Status parsed = ParseRequest(req, wrapped ? "*" : "spec", {}, &message);
  if (!parsed.ok()) return ErrorReply(parsed);
  absl::StatusOr<v1::Job> job = Call(api, &Api::CreateJob, req.call, message);
  if (!job.ok()) return ErrorReply(job.status());
  return JsonReply(*job);
}

// Holds a stream's place until the stream (or its reply, never sent) is gone.
class StreamSlot {
 public:
  explicit StreamSlot(StreamRegistry* streams) : streams_(streams) {}
  ~StreamSlot() { streams_->Release(); }
  StreamSlot(const StreamSlot&) = delete;
  StreamSlot& operator=(const StreamSlot&) = delete;

 private:
  StreamRegistry* const streams_;
};

absl::StatusOr<std::shared_ptr<StreamSlot>> AcquireStream(StreamRegistry* streams) {
  if (absl::Status s = streams->Acquire(); !s.ok()) return s;
  return std::make_shared<StreamSlot>(streams);
}

// The newest state of a watched job, handed from the loop's thread to the stream's.
class LatestJob : public JobWatcher {
 public:
  bool Push(const v1::Job& job) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (closed_) return false;
    pending_ = job;
    return true;
  }
  // The next state, waiting up to `d`; nullopt when none came.
  std::optional<v1::Job> Take(absl::Duration d) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(
                             +[](std::optional<v1::Job>* p) { return p->has_value(); }, &pending_),
                         d);
    std::optional<v1::Job> out = std::move(pending_);
    pending_.reset();
    return out;
  }
  void Close() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }

 private:
  absl::Mutex mu_;
  std::optional<v1::Job> pending_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

// GET /v1/jobs/{id}:watch: server-sent events, one Job per event, ending after a terminal state.
HttpReply WatchJob(Api* api, StreamRegistry* streams, HttpRequest& req) {
  v1::WatchJobRequest message;
  if (absl::Status s = ParseRequest(req, "", {}, &message); !s.ok()) return ErrorReply(s);
  absl::StatusOr<std::shared_ptr<StreamSlot>> place = AcquireStream(streams);
  if (!place.ok()) return ErrorReply(place.status());
  auto latest = std::make_shared<LatestJob>();
  absl::StatusOr<PeerStreamLimiter::Slot> watch = api->WatchJob(req.call, message, latest);
  if (!watch.ok()) return ErrorReply(watch.status());
  HttpReply reply;
  reply.content_type = "text/event-stream";
  reply.stream = [latest, streams, place = *place, watch = *watch](const StreamWrite& write) {
    auto quiet_since = std::chrono::steady_clock::now();
    while (!streams->stopping()) {
      std::optional<v1::Job> job = latest->Take(absl::Seconds(1));
      if (job) {
        if (!write(absl::StrCat("data: ", ToJson(*job), "\n\n"))) break;
        if (IsTerminal(job->state())) break;
        quiet_since = std::chrono::steady_clock::now();
      } else if (std::chrono::steady_clock::now() - quiet_since >= kKeepAlive) {
        if (!write(": keep-alive\n\n")) break;
        quiet_since = std::chrono::steady_clock::now();
      }
    }
    latest->Close();
  };
  return reply;
}

// GET .../logs: one ReadLogsResponse, or with follow=true the log's bytes as they come, ending
// when the run ended and every byte went out. A copy that stops short while its node is away is
// said once, in a line of the stream, and followed on.
HttpReply ReadLogs(Api* api, StreamRegistry* streams, HttpRequest& req) {
  v1::ReadLogsRequest message;
  if (absl::Status s = ParseRequest(req, "", {"follow"}, &message); !s.ok()) return ErrorReply(s);
  bool follow = false;
  if (auto it = req.params.find("follow"); it != req.params.end()) {
    if (it->second != "true" && it->second != "false") {
      return ErrorReply(absl::InvalidArgumentError(
          absl::StrCat("parameter \"follow\" must be true or false, got \"", it->second, "\"")));
    }
    follow = it->second == "true";
  }
  if (!follow) {
    absl::StatusOr<v1::ReadLogsResponse> read = Call(api, &Api::ReadLogs, req.call, message);
    if (!read.ok()) return ErrorReply(read.status());
    return JsonReply(*read);
  }
  absl::StatusOr<std::shared_ptr<StreamSlot>> place = AcquireStream(streams);
  if (!place.ok()) return ErrorReply(place.status());
  // The first read answers for the route: an unknown job is a 404, not an empty stream.
  absl::StatusOr<v1::ReadLogsResponse> first = Call(api, &Api::ReadLogs, req.call, message);
  if (!first.ok()) return ErrorReply(first.status());
  HttpReply reply;
  // Not text/*: cpp-httplib compresses text for clients that accept it (browsers do), and its
  // compressor holds the stream back until the end.
  reply.content_type = "application/octet-stream";
  reply.stream = [api, streams, call = req.call, message, first = *first,
                  place = *place](const StreamWrite& write) mutable {
    v1::ReadLogsResponse read = std::move(first);
    // The start asked for (sinceMs, tailLines) is found by the first read; the rest continue.
    message.clear_since_ms();
    message.clear_tail_lines();
    std::string said_incomplete;
    while (true) {
      if (!read.data().empty() && !write(read.data())) return;
      if (read.complete()) return;
      if (!read.incomplete().empty() && read.incomplete() != said_incomplete) {
        // In the text, as a capped log's dropped range is: the stream has no other channel.
        said_incomplete = read.incomplete();
        if (!write(
                absl::StrCat("\n[trainctl: the log is not complete: ", said_incomplete, "]\n"))) {
          return;
        }
      }
      if (read.data().empty() && !streams->Wait(kFollowPoll)) return;
      message.set_offset(read.next_offset());
      absl::StatusOr<v1::ReadLogsResponse> next = Call(api, &Api::ReadLogs, call, message);
      if (!next.ok()) {
        write(absl::StrCat("\n[trainctl: the log stopped: ", next.status().ToString(), "]\n"));
        return;
      }
      read = *std::move(next);
    }
  };
  return reply;
}

// POST /v1/nodes:prepull: answered once every node answered or the request's timeout (default
// 10m) passed, so it waits that long and kCallTimeout more, not kCallTimeout alone.
HttpReply PrepullImage(Api* api, StreamRegistry*, HttpRequest& req) {
  v1::PrepullImageRequest message;
  if (absl::Status s = ParseRequest(req, "*", {}, &message); !s.ok()) return ErrorReply(s);
  const int64_t seconds = message.timeout().seconds();
  const std::chrono::seconds wait =
      std::chrono::seconds(seconds > 0 && seconds <= 3600 ? seconds + 1 : 600) + kCallTimeout;
  absl::StatusOr<v1::PrepullImageResponse> resp =
      Call(api, &Api::PrepullImage, req.call, message, wait);
  if (!resp.ok()) return ErrorReply(resp.status());
  return JsonReply(*resp);
}

Route Custom(const char* method, const char* path, const char* rpc, const pb::Descriptor* request,
             const pb::Descriptor* response, const char* body, const char* summary,
             const char* produces, std::vector<std::string> extra,
             HttpReply (*handle)(Api*, StreamRegistry*, HttpRequest&)) {
  return Route{method, path,    rpc,      request,          response,
               body,   summary, produces, std::move(extra), handle};
}

// `r`, whose body is not JSON but of type `consumes`, read as it comes: its bytes are the
// request's `body` field, their Content-Length its `length_field`.
// `check_first` checks the request before its body is read.
Route RawBody(Route r, const char* consumes, const char* length_field,
              absl::Status (*check_first)(Api*, const HttpRequest&)) {
  r.consumes = consumes;
  r.length_field = length_field;
  r.check_first = check_first;
  return r;
}

std::vector<Route> MakeRoutes() {
  return {
      Custom("POST", "/v1/jobs", "trainctl.v1.JobService/CreateJob",
             v1::CreateJobRequest::descriptor(), v1::Job::descriptor(), "*",
             "Submit a job. The body is a CreateJobRequest ({\"spec\": ..., \"requestId\": ...}) "
             "or a bare JobSpec; a retry with the same requestId returns the same job.",
             "application/json", {}, &CreateJob),
      Unary("GET", "/v1/jobs/{id}", "trainctl.v1.JobService/GetJob", "", "A job.", &Api::GetJob),
      Unary("GET", "/v1/jobs", "trainctl.v1.JobService/ListJobs", "",
            "Jobs, newest first, by pages.", &Api::ListJobs),
      Unary("POST", "/v1/jobs/{id}:cancel", "trainctl.v1.JobService/CancelJob", "*",
            "Cancel a job.", &Api::CancelJob),
      Unary("POST", "/v1/jobs/{id}:resize", "trainctl.v1.JobService/ResizeJob", "*",
            "Grow a shrunk elastic job back toward its spec's size.", &Api::ResizeJob),
      Unary("POST", "/v1/jobs/{id}:hold", "trainctl.v1.JobService/HoldJob", "*",
            "Keep a queued job from being admitted until it is released; the body may give a "
            "reason ({\"reason\": ...}).",
            &Api::HoldJob),
      Unary("POST", "/v1/jobs/{id}:release", "trainctl.v1.JobService/ReleaseJob", "*",
            "Let a held job be admitted again.", &Api::ReleaseJob),
      Unary("PATCH", "/v1/jobs/{id}", "trainctl.v1.JobService/UpdateJob", "*",
            "Change a queued job's priority, queueTimeout or labels (an UpdateJobRequest: "
            "{\"priority\", \"queueTimeout\", \"labels\", \"removeLabels\"}).",
            &Api::UpdateJob),
      Unary("POST", "/v1/jobs/{id}:requeue", "trainctl.v1.JobService/RequeueJob", "*",
            "Send a pending or running job back to the queue, as a preemption charged to no "
            "budget; the body may give a reason ({\"reason\": ...}).",
            &Api::RequeueJob),
      Unary("DELETE", "/v1/jobs/{id}", "trainctl.v1.JobService/DeleteJob", "",
            "Delete a job that ended, with its attempts, runs and events.", &Api::DeleteJob),
      Custom("GET", "/v1/jobs/{id}:watch", "trainctl.v1.JobService/WatchJob",
             v1::WatchJobRequest::descriptor(), v1::Job::descriptor(), "",
             "Server-sent events: the job now and after every change, one Job per event, "
             "ending after a terminal state.",
             "text/event-stream", {}, &WatchJob),
      Custom("GET", "/v1/jobs/{jobId}/replicas/{replica}/logs", "trainctl.v1.JobService/ReadLogs",
             v1::ReadLogsRequest::descriptor(), v1::ReadLogsResponse::descriptor(), "",
             "A replica's log from offset: a ReadLogsResponse, or with follow=true the log's "
             "bytes (application/octet-stream) as they are written, ending when the run ended.",
             "application/json", {"follow"}, &ReadLogs),
      Unary("POST", "/v1/jobs/{jobId}/replicas/{replica}:reportProgress",
            "trainctl.v1.JobService/ReportProgress", "*", "Report a replica's progress.",
            &Api::ReportProgress),
      Unary("GET", "/v1/nodes", "trainctl.v1.ClusterService/ListNodes", "", "Every node.",
            &Api::ListNodes),
      Unary("GET", "/v1/nodes/{name}", "trainctl.v1.ClusterService/GetNode", "", "A node.",
            &Api::GetNode),
      Unary("POST", "/v1/nodes/{name}:cordon", "trainctl.v1.ClusterService/CordonNode", "*",
            "No new work on the node.", &Api::CordonNode),
      Unary("POST", "/v1/nodes/{name}:uncordon", "trainctl.v1.ClusterService/UncordonNode", "*",
            "Lift a cordon, drain or flapping hold.", &Api::UncordonNode),
      Unary("POST", "/v1/nodes/{name}:drain", "trainctl.v1.ClusterService/DrainNode", "*",
            "Cordon the node and move its replicas elsewhere.", &Api::DrainNode),
      Unary("POST", "/v1/nodes/{name}:maintenance", "trainctl.v1.ClusterService/SetNodeMaintenance",
            "*", "Record (or clear) the node's upcoming maintenance window.",
            &Api::SetNodeMaintenance),
      Unary("POST", "/v1/nodes/{name}:revoke", "trainctl.v1.ClusterService/RevokeNode", "*",
            "Revoke the node's agent certificate.", &Api::RevokeNode),
      Unary("DELETE", "/v1/nodes/{name}", "trainctl.v1.ClusterService/DeleteNode", "",
            "Forget a node that is gone.", &Api::DeleteNode),
      Custom("POST", "/v1/nodes:prepull", "trainctl.v1.ClusterService/PrepullImage",
             v1::PrepullImageRequest::descriptor(), v1::PrepullImageResponse::descriptor(), "*",
             "Pull an image into the cache of nodes that run images, ahead of a job; answered "
             "once every node answered or the timeout (default 10m) passed.",
             "application/json", {}, &PrepullImage),
      Unary("GET", "/v1/events", "trainctl.v1.ClusterService/ListEvents", "",
            "The event log, oldest first.", &Api::ListEvents),
      Unary("GET", "/v1/jobs/{jobId}/stacks", "trainctl.v1.JobService/GetStacks", "",
            "The stacks of the job's replicas captured before they were stopped (hung, or their "
            "attempt ended), of ?attempt (default: the latest with any); with ?now=true captured "
            "from its running replicas now.",
            &Api::GetStacks),
      Unary("GET", "/v1/usage", "trainctl.v1.UsageService/GetUsage", "",
            "Who used what: allocated GPU-, CPU- and memory-seconds, runs, wall time and queue "
            "wait, summed by ?by=project|user|node|label:KEY over the hours that overlap "
            "[?since, ?until).",
            &Api::GetUsage),
      Unary("GET", "/v1/projects", "trainctl.v1.QuotaService/ListProjects", "",
            "Projects with their quotas and usage.", &Api::ListProjects),
      Unary("GET", "/v1/projects/{project}/quota", "trainctl.v1.QuotaService/GetQuota", "",
            "A project's quota and usage.", &Api::GetQuota),
      Unary("PUT", "/v1/projects/{project=quota.project}/quota",
            "trainctl.v1.QuotaService/SetQuota", "quota",
            "Replace a project's quota (the body is a Quota).", &Api::SetQuota),
      Unary("GET", "/v1/projects/{project}/secrets", "trainctl.v1.SecretService/ListSecrets", "",
            "A project's secrets: names, sizes and update times, never values.", &Api::ListSecrets),
      Unary("PUT", "/v1/projects/{project}/secrets/{name}", "trainctl.v1.SecretService/SetSecret",
            "*", "Create or replace a project's secret (the body is {\"value\": \"...\"}).",
            &Api::SetSecret),
      Unary("DELETE", "/v1/projects/{project}/secrets/{name}",
            "trainctl.v1.SecretService/DeleteSecret", "", "Delete a project's secret.",
            &Api::DeleteSecret),
      Unary("GET", "/v1/projects/{project}/workdirs/{digest}",
            "trainctl.v1.WorkdirService/GetWorkdir", "",
            "A working directory the project holds, by its digest (\"sha256:...\", the colon as it "
            "is or as %3A).",
            &Api::GetWorkdir),
      RawBody(Custom("POST", "/v1/projects/{project}/workdirs",
                     "trainctl.v1.WorkdirService/UploadWorkdir",
                     v1::UploadWorkdirRequest::descriptor(), v1::Workdir::descriptor(), "data",
                     "Upload a job's working directory for JobSpec.workdir: the body is a tar "
                     "archive (Content-Type: application/x-tar) of at most trainctld's "
                     "--max-workdir-mb, with its Content-Length, and ?digest=sha256:<hex> its "
                     "SHA-256. Project, digest and size are checked before the body is read; bytes "
                     "that do not match are refused and nothing is kept. Uploading what the "
                     "project holds already stores nothing (deduplicated).",
                     "application/json", {}, &UploadWorkdir),
              "application/x-tar", "size_bytes", &CheckWorkdirUpload),
      Unary("GET", "/v1/queue", "trainctl.v1.QuotaService/ListQueue", "",
            "Queued jobs in admission order, with their blockers.", &Api::ListQueue),
      Unary("POST", "/v1/tokens", "trainctl.v1.AuthService/CreateToken", "*",
            "Create an API token; its secret is shown once.", &Api::CreateToken),
      Unary("GET", "/v1/tokens", "trainctl.v1.AuthService/ListTokens", "", "Every API token.",
            &Api::ListTokens),
      Unary("POST", "/v1/tokens/{id}:revoke", "trainctl.v1.AuthService/RevokeToken", "*",
            "Revoke an API token.", &Api::RevokeToken),
      Unary("GET", "/v1/whoami", "trainctl.v1.AuthService/WhoAmI", "",
            "The token the call is made with.", &Api::WhoAmI),
      Unary("GET", "/v1/version", "trainctl.v1.AdminService/GetVersion", "",
            "trainctld's version, build and store, and when it started.", &Api::GetVersion),
  };
}

}  // namespace

absl::Status StreamRegistry::Acquire() {
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::UnavailableError("trainctld is shutting down");
  if (open_ >= max_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("trainctld serves ", max_,
                     " HTTP streams (watches, log follows, uploads) at once, its "
                     "--http-max-streams; try again later"));
  }
  ++open_;
  return absl::OkStatus();
}

void StreamRegistry::Release() {
  absl::MutexLock lock(&mu_);
  --open_;
}

int64_t StreamRegistry::open() const {
  absl::MutexLock lock(&mu_);
  return open_;
}

bool StreamRegistry::Wait(std::chrono::milliseconds d) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::FromChrono(d));
  return !stopping_;
}

void StreamRegistry::Stop() {
  absl::MutexLock lock(&mu_);
  stopping_ = true;
}

bool StreamRegistry::stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

const std::vector<Route>& Routes() {
  static const std::vector<Route>* routes = new std::vector<Route>(MakeRoutes());
  return *routes;
}

HttpReply ErrorReply(const absl::Status& status) {
  HttpReply r;
  r.status = HttpStatusOf(status.code());
  r.body = StatusJson(status);
  return r;
}

}  // namespace trainctl::server::rest
