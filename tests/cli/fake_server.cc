#include "tests/cli/fake_server.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/job_states.h"
#include "common/time_util.h"
#include "tests/cli/fake_jobs.h"
#include "tests/cli/fake_nodes.h"
#include "tests/cli/fake_quota_service.h"
#include "tests/cli/view_clock.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace trainctl::cli {
// Named, not anonymous: Fixture::Services holds them.
namespace fakes {

// Serves a scripted cluster: jobs by id, watches whose behaviour depends on the id, logs that
// come in 5-byte pieces.
class FakeJobService final : public v1::JobService::Service {
 public:
  FakeJobService() {
    for (const auto& [id, state] :
         std::map<std::string, v1::JobState>{{"j-ok", v1::JOB_STATE_RUNNING},
                                             {"j-fail", v1::JOB_STATE_RUNNING},
                                             {"j-flaky", v1::JOB_STATE_RUNNING},
                                             {"j-slow", v1::JOB_STATE_RUNNING}}) {
      v1::Job& job = jobs_[id];
      job.set_id(id);
      job.set_state(state);
    }
    jobs_["j-described"] = DescribedJob();
  }

  grpc::Status CreateJob(grpc::ServerContext*, const v1::CreateJobRequest* request,
                         v1::Job* job) override {
    for (int i = 0; i < request->spec().worker_pools_size(); ++i) {
      const int count = request->spec().worker_pools(i).replica_count();
      if (count < 1 || count > 4096) {
        return grpc::Status(
            grpc::StatusCode::INVALID_ARGUMENT,
            absl::StrCat("workerPools[", i, "].replicaCount must be 1..4096, got ", count));
      }
    }
    absl::MutexLock lock(&mu_);
    calls_.push_back("CreateJob");
    job->set_id(absl::StrCat("j-", created_ + 1));
    job->set_display_name(request->spec().display_name());
    job->set_project(request->spec().project().empty() ? "default" : request->spec().project());
    job->set_state(v1::JOB_STATE_QUEUED);
    *job->mutable_spec() = request->spec();
    v1::Replica* replica = job->add_replicas();
    replica->set_name("chief-0");
    replica->set_state(v1::REPLICA_STATE_PENDING);
    // A job array: the array's row and a job per element (fake_jobs.h).
    if (request->spec().has_array()) {
      absl::StatusOr<std::vector<v1::Job>> elements = FakeArrayElements(job);
      if (!elements.ok()) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            std::string(elements.status().message()));
      }
      for (v1::Job& element : *elements) jobs_[element.id()] = std::move(element);
    }
    ++created_;
    jobs_[job->id()] = *job;
    return grpc::Status::OK;
  }

  grpc::Status GetJob(grpc::ServerContext*, const v1::GetJobRequest* request,
                      v1::Job* job) override {
    if (request->id() == "j-retrying") {
      *job = RetryingJob(WallNowMs());
      return grpc::Status::OK;
    }
    if (request->id() == "j-waiting") {
      *job = WaitingJob(WallNowMs());
      return grpc::Status::OK;
    }
    absl::MutexLock lock(&mu_);
    return Find(request->id(), job);
  }

  // Pages hold at most 2 jobs whatever the page size, so that the client has to follow tokens.
  // With `array`, only that array's elements; without, every job but array elements.
  grpc::Status ListJobs(grpc::ServerContext*, const v1::ListJobsRequest* request,
                        v1::ListJobsResponse* response) override {
    absl::MutexLock lock(&mu_);
    last_list_request_ = *request;
    std::vector<const v1::Job*> matching;
    for (const auto& [id, job] : jobs_) {
      if (request->array().empty() ? job.has_element()
                                   : job.element().array() != request->array()) {
        continue;
      }
      bool state_ok = request->states().empty();
      for (int s : request->states()) state_ok |= s == job.state();
      if (state_ok && (request->project().empty() || request->project() == job.project())) {
        matching.push_back(&job);
      }
    }
    size_t start = 0;
    if (!request->page_token().empty()) (void)absl::SimpleAtoi(request->page_token(), &start);
    const size_t end =
        std::min({matching.size(), start + 2, start + static_cast<size_t>(request->page_size())});
    for (size_t i = start; i < end; ++i) *response->add_jobs() = *matching[i];
    if (end < matching.size()) response->set_next_page_token(absl::StrCat(end));
    return grpc::Status::OK;
  }

  grpc::Status CancelJob(grpc::ServerContext*, const v1::CancelJobRequest* request,
                         v1::Job* job) override {
    absl::MutexLock lock(&mu_);
    calls_.push_back("CancelJob " + request->id());
    auto it = jobs_.find(request->id());
    if (it != jobs_.end()) it->second.set_state(v1::JOB_STATE_CANCELLED);
    return Find(request->id(), job);
  }

  // Deletes a job that ended (an array with its elements); FAILED_PRECONDITION for one that did
  // not.
  grpc::Status DeleteJob(grpc::ServerContext*, const v1::DeleteJobRequest* request,
                         v1::DeleteJobResponse*) override {
    absl::MutexLock lock(&mu_);
    calls_.push_back("DeleteJob " + request->id());
    v1::Job job;
    if (grpc::Status found = Find(request->id(), &job); !found.ok()) return found;
    if (!IsTerminal(job.state())) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          absl::StrCat("job ", job.id(), " is ", v1::JobState_Name(job.state()),
                                       "; only a job that ended can be deleted"));
    }
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      const bool element_of = it->second.element().array() == job.id() && !job.id().empty();
      it = it->first == job.id() || element_of ? jobs_.erase(it) : std::next(it);
    }
    return grpc::Status::OK;
  }

  // The queue operations, as trainctld answers them for a job that may change: each records its
  // request (LastQueueRequest) and returns the job as changed.
  grpc::Status HoldJob(grpc::ServerContext*, const v1::HoldJobRequest* request,
                       v1::Job* job) override {
    absl::MutexLock lock(&mu_);
    calls_.push_back("HoldJob " + request->id());
    last_queue_request_.reset(request->New());
    last_queue_request_->CopyFrom(*request);
    auto it = jobs_.find(request->id());
    if (it != jobs_.end()) {
      it->second.set_held(true);
      it->second.set_held_by("alice");
      it->second.set_hold_reason(request->reason());
    }
    return Find(request->id(), job);
  }

  grpc::Status ReleaseJob(grpc::ServerContext*, const v1::ReleaseJobRequest* request,
                          v1::Job* job) override {
    absl::MutexLock lock(&mu_);
    calls_.push_back("ReleaseJob " + request->id());
    last_queue_request_.reset(request->New());
    last_queue_request_->CopyFrom(*request);
    auto it = jobs_.find(request->id());
    if (it != jobs_.end() && !it->second.held()) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          absl::StrCat("job ", request->id(), " is not held"));
    }
    if (it != jobs_.end()) it->second.set_held(false);
    return Find(request->id(), job);
  }

  grpc::Status UpdateJob(grpc::ServerContext*, const v1::UpdateJobRequest* request,
                         v1::Job* job) override {
    absl::MutexLock lock(&mu_);
    last_queue_request_.reset(request->New());
    last_queue_request_->CopyFrom(*request);
    auto it = jobs_.find(request->id());
    if (it != jobs_.end() && request->has_priority()) it->second.set_priority(request->priority());
    return Find(request->id(), job);
  }

  grpc::Status RequeueJob(grpc::ServerContext*, const v1::RequeueJobRequest* request,
                          v1::Job* job) override {
    absl::MutexLock lock(&mu_);
    last_queue_request_.reset(request->New());
    last_queue_request_->CopyFrom(*request);
    return Find(request->id(), job);
  }

  // The last HoldJob, ReleaseJob, UpdateJob or RequeueJob request, copied into `out` when of its
  // type; false otherwise.
  bool LastQueueRequest(google::protobuf::Message* out) const {
    absl::MutexLock lock(&mu_);
    if (last_queue_request_ == nullptr ||
        last_queue_request_->GetDescriptor() != out->GetDescriptor()) {
      return false;
    }
    out->CopyFrom(*last_queue_request_);
    return true;
  }

  grpc::Status WatchJob(grpc::ServerContext* context, const v1::WatchJobRequest* request,
                        grpc::ServerWriter<v1::Job>* writer) override {
    v1::Job job;
    {
      absl::MutexLock lock(&mu_);
      grpc::Status found = Find(request->id(), &job);
      if (!found.ok()) return found;
      ++watch_calls_[request->id()];
    }
    writer->Write(job);
    if (job.id() == "j-ok") {
      job.set_state(v1::JOB_STATE_SUCCEEDED);
    } else if (job.id() == "j-fail") {
      job.set_state(v1::JOB_STATE_FAILED);
      job.mutable_error()->set_message("Replica worker-1 exited with a non-zero status of 3.");
    } else if (job.id() == "j-flaky") {
      absl::MutexLock lock(&mu_);
      // The first stream breaks as if the scheduler restarted.
      if (watch_calls_["j-flaky"] == 1) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "scheduler restarting");
      }
      job.set_state(v1::JOB_STATE_SUCCEEDED);
    } else {
      while (!context->IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return grpc::Status::CANCELLED;
    }
    writer->Write(job);
    return grpc::Status::OK;
  }

  // chief-0's log is fixed; "growing" gains a line per call up to 3 lines, and fails once with
  // UNAVAILABLE on the second call.
  grpc::Status ReadLogs(grpc::ServerContext*, const v1::ReadLogsRequest* request,
                        v1::ReadLogsResponse* response) override {
    absl::MutexLock lock(&mu_);
    std::string log = "hello\nworld\n";
    bool ended = true;
    if (request->replica() == "growing") {
      const int call = ++growing_calls_;
      if (call == 2) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "agent restarting");
      log.clear();
      for (int i = 1; i <= std::min(call, 3); ++i) absl::StrAppend(&log, "line ", i, "\n");
      ended = call >= 3;
    } else if (request->replica() != "chief-0") {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "no replica " + request->replica());
    }
    const size_t offset = std::min<size_t>(request->offset(), log.size());
    response->set_data(log.substr(offset, 5));
    response->set_next_offset(offset + response->data().size());
    response->set_complete(ended && response->next_offset() == static_cast<int64_t>(log.size()));
    return grpc::Status::OK;
  }

  // Records the request; every job accepts progress.
  grpc::Status ReportProgress(grpc::ServerContext*, const v1::ReportProgressRequest* request,
                              v1::ReportProgressResponse*) override {
    absl::MutexLock lock(&mu_);
    last_progress_ = *request;
    return grpc::Status::OK;
  }

  v1::ReportProgressRequest LastProgressRequest() const {
    absl::MutexLock lock(&mu_);
    return last_progress_;
  }

  v1::ListJobsRequest LastListRequest() const {
    absl::MutexLock lock(&mu_);
    return last_list_request_;
  }

  std::vector<std::string> JobCalls() const {
    absl::MutexLock lock(&mu_);
    return calls_;
  }

 private:
  grpc::Status Find(const std::string& id, v1::Job* job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("job ", id, " not found"));
    }
    *job = it->second;
    return grpc::Status::OK;
  }

  mutable absl::Mutex mu_;
  std::map<std::string, v1::Job> jobs_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> watch_calls_ ABSL_GUARDED_BY(mu_);
  int created_ ABSL_GUARDED_BY(mu_) = 0;
  std::unique_ptr<google::protobuf::Message> last_queue_request_ ABSL_GUARDED_BY(mu_);
  v1::ReportProgressRequest last_progress_ ABSL_GUARDED_BY(mu_);
  v1::ListJobsRequest last_list_request_ ABSL_GUARDED_BY(mu_);
  // "CreateJob", and "CancelJob ID", "DeleteJob ID", "HoldJob ID", "ReleaseJob ID", in order.
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
  int growing_calls_ ABSL_GUARDED_BY(mu_) = 0;
};

// Serves the nodes of fake_nodes.h and an event log dated back from the time of each request;
// remembers the last request of each node RPC.
class FakeClusterService final : public v1::ClusterService::Service {
 public:
  grpc::Status ListNodes(grpc::ServerContext*, const v1::ListNodesRequest*,
                         v1::ListNodesResponse* response) override {
    for (v1::Node& node : FakeNodes(WallNowMs())) *response->add_nodes() = std::move(node);
    return grpc::Status::OK;
  }

  grpc::Status GetNode(grpc::ServerContext*, const v1::GetNodeRequest* request,
                       v1::Node* node) override {
    Remember(*request);
    return FindFakeNode(request->name(), WallNowMs(), node);
  }

  grpc::Status CordonNode(grpc::ServerContext*, const v1::CordonNodeRequest* request,
                          v1::Node* node) override {
    Remember(*request);
    return FakeCordon(*request, WallNowMs(), node);
  }

  grpc::Status UncordonNode(grpc::ServerContext*, const v1::UncordonNodeRequest* request,
                            v1::Node* node) override {
    Remember(*request);
    return FakeUncordon(*request, WallNowMs(), node);
  }

  grpc::Status DrainNode(grpc::ServerContext*, const v1::DrainNodeRequest* request,
                         v1::Node* node) override {
    Remember(*request);
    return FakeDrain(*request, WallNowMs(), node);
  }

  int NodeRequests() {
    absl::MutexLock lock(&mu_);
    return node_requests_;
  }

  // The last request of `message`'s type, copied into it; false before the first.
  bool LastRequest(google::protobuf::Message* message) {
    absl::MutexLock lock(&mu_);
    auto it = last_requests_.find(message->GetTypeName());
    if (it == last_requests_.end()) return false;
    return message->ParseFromString(it->second);
  }

  // Filters like the real service: every filter must match; the newest `limit` matches (1..10000,
  // default 1000), oldest first.
  grpc::Status ListEvents(grpc::ServerContext*, const v1::ListEventsRequest* request,
                          v1::ListEventsResponse* response) override {
    {
      absl::MutexLock lock(&mu_);
      last_events_request_ = *request;
    }
    const int limit = request->limit() == 0 ? 1000 : request->limit();
    if (limit < 1 || limit > 10000) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat("limit must be 1..10000, got ", request->limit()));
    }
    std::vector<v1::Event> matching;
    for (const v1::Event& e : Events(WallNowMs())) {
      if ((request->job_id().empty() || request->job_id() == e.job_id()) &&
          (request->node().empty() || request->node() == e.node()) &&
          (request->type().empty() || request->type() == e.type()) &&
          TimestampToMs(e.time()) >= TimestampToMs(request->since())) {
        matching.push_back(e);
      }
    }
    const size_t skip = matching.size() > static_cast<size_t>(limit) ? matching.size() - limit : 0;
    for (size_t i = skip; i < matching.size(); ++i) *response->add_events() = matching[i];
    return grpc::Status::OK;
  }

  v1::ListEventsRequest LastEventsRequest() {
    absl::MutexLock lock(&mu_);
    return last_events_request_;
  }

 private:
  void Remember(const google::protobuf::Message& request) {
    absl::MutexLock lock(&mu_);
    last_requests_[request.GetTypeName()] = request.SerializeAsString();
    ++node_requests_;
  }

  static std::vector<v1::Event> Events(int64_t now_ms) {
    struct Row {
      int64_t age_ms;
      const char* type;
      const char* job;
      const char* replica;
      const char* node;
      const char* reason;
    };
    std::vector<v1::Event> events;
    for (const Row& row : std::vector<Row>{
             {60 * kMinuteMs, "NodeRegistered", "", "", "node-a", "agent 0.1.0"},
             {40 * kMinuteMs, "NodeRegistered", "", "", "node-c", "agent 0.2.0"},
             {30 * kMinuteMs, "JobQueued", "j-described", "", "", "submitted"},
             {20 * kMinuteMs, "ReplicaStarted", "j-described", "worker-0", "node-b", "pid 4321"},
             {12 * kMinuteMs, "NodeIsolated", "", "", "node-c",
              "failed preflight check disk-size root: 3.1 GB free, need > 32 GB"},
             {12 * kMinuteMs, "NodeFlapping", "", "", "node-c", "isolated 3 times within 1h"},
             {5 * kMinuteMs, "ReplicaExited", "j-described", "worker-0", "node-b",
              "killed by signal 9"},
             {150 * 1000, "JobFailed", "j-described", "", "", "worker-0 killed"},
             {150 * 1000, "NodeDisconnected", "", "", "node-b", "no heartbeat for 30s"},
         }) {
      v1::Event& e = events.emplace_back();
      *e.mutable_time() = MsToTimestamp(now_ms - row.age_ms);
      e.set_type(row.type);
      e.set_job_id(row.job);
      e.set_replica(row.replica);
      e.set_node(row.node);
      e.set_reason(row.reason);
    }
    return events;
  }

  absl::Mutex mu_;
  v1::ListEventsRequest last_events_request_ ABSL_GUARDED_BY(mu_);
  // By the request's full type name, serialized.
  std::map<std::string, std::string> last_requests_ ABSL_GUARDED_BY(mu_);
  int node_requests_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace fakes

class Fixture::Services {
 public:
  fakes::FakeJobService jobs;
  fakes::FakeClusterService cluster;
  FakeQuotaService quota;
};

Fixture::Fixture() : services_(std::make_unique<Services>()) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
  builder.RegisterService(&services_->jobs);
  builder.RegisterService(&services_->cluster);
  builder.RegisterService(&services_->quota);
  server_ = builder.BuildAndStart();
}

Fixture::~Fixture() {
  if (server_ != nullptr) server_->Shutdown();
}

Result Fixture::Run(const std::string& args, const std::string& input) {
  return RunBinary(absl::StrCat("--server 127.0.0.1:", port_, " ", args), input);
}

Result Fixture::RunShell(const std::string& command) {
  Result result;
  std::FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) result.out.append(buf, n);
  const int status = pclose(pipe);
  result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

Result Fixture::RunBinary(const std::string& args, const std::string& input) {
  const std::string base = absl::StrCat("/tmp/trainctl_binary_test_", getpid());
  std::ofstream(base + ".in") << input;
  const std::string command = absl::StrCat("cd ", TRAINCTL_SOURCE_DIR, " && ", TRAINCTL_BIN, " ",
                                           args, " <", base, ".in 2>", base, ".err");
  Result result = RunShell(command);
  std::stringstream err;
  err << std::ifstream(base + ".err").rdbuf();
  result.err = err.str();
  std::remove((base + ".in").c_str());
  std::remove((base + ".err").c_str());
  return result;
}

v1::ListEventsRequest Fixture::LastEventsRequest() const {
  return services_->cluster.LastEventsRequest();
}

bool Fixture::LastNodeRequest(google::protobuf::Message* request) const {
  return services_->cluster.LastRequest(request);
}

int Fixture::NodeRequests() const { return services_->cluster.NodeRequests(); }

v1::ReportProgressRequest Fixture::LastProgressRequest() const {
  return services_->jobs.LastProgressRequest();
}

v1::ListJobsRequest Fixture::LastListRequest() const { return services_->jobs.LastListRequest(); }

std::vector<std::string> Fixture::JobCalls() const { return services_->jobs.JobCalls(); }

bool Fixture::LastQueueRequest(google::protobuf::Message* request) const {
  return services_->jobs.LastQueueRequest(request);
}

v1::SetQuotaRequest Fixture::LastSetQuotaRequest() const {
  return services_->quota.LastSetQuotaRequest();
}

Fixture& Fake() {
  static Fixture* fixture = new Fixture();
  return *fixture;
}

}  // namespace trainctl::cli
