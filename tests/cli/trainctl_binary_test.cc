// Runs the trainctl binary against an in-process fake JobService and checks what it prints and
// its exit status: the contract scripts rely on (ids alone on stdout, "error: CODE: message" on
// stderr, 0/1/2 exit statuses), paging, reconnecting watches and log following.
#include <grpcpp/grpcpp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/spec_parse.h"
#include "trainctl/v1/job.grpc.pb.h"

namespace trainctl::cli {
namespace {

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
    job->set_id(absl::StrCat("j-", ++created_));
    job->set_display_name(request->spec().display_name());
    job->set_project(request->spec().project().empty() ? "default" : request->spec().project());
    job->set_state(v1::JOB_STATE_QUEUED);
    *job->mutable_spec() = request->spec();
    v1::Replica* replica = job->add_replicas();
    replica->set_name("chief-0");
    replica->set_state(v1::REPLICA_STATE_PENDING);
    jobs_[job->id()] = *job;
    return grpc::Status::OK;
  }

  grpc::Status GetJob(grpc::ServerContext*, const v1::GetJobRequest* request,
                      v1::Job* job) override {
    absl::MutexLock lock(&mu_);
    return Find(request->id(), job);
  }

  // Pages hold at most 2 jobs whatever the page size, so that the client has to follow tokens.
  grpc::Status ListJobs(grpc::ServerContext*, const v1::ListJobsRequest* request,
                        v1::ListJobsResponse* response) override {
    absl::MutexLock lock(&mu_);
    std::vector<const v1::Job*> matching;
    for (const auto& [id, job] : jobs_) {
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
    auto it = jobs_.find(request->id());
    if (it != jobs_.end()) it->second.set_state(v1::JOB_STATE_CANCELLED);
    return Find(request->id(), job);
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

 private:
  grpc::Status Find(const std::string& id, v1::Job* job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("job ", id, " not found"));
    }
    *job = it->second;
    return grpc::Status::OK;
  }

  absl::Mutex mu_;
  std::map<std::string, v1::Job> jobs_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> watch_calls_ ABSL_GUARDED_BY(mu_);
  int created_ ABSL_GUARDED_BY(mu_) = 0;
  int growing_calls_ ABSL_GUARDED_BY(mu_) = 0;
};

struct Result {
  int exit_status = -1;
  std::string out;
  std::string err;
};

// One fake server for the whole test binary.
class Fixture {
 public:
  Fixture() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }

  // Runs `trainctl --server <fake> ARGS` from the source folder, with `input` on stdin.
  Result Run(const std::string& args, const std::string& input = "") {
    return RunBinary(absl::StrCat("--server 127.0.0.1:", port_, " ", args), input);
  }

  static Result RunBinary(const std::string& args, const std::string& input = "") {
    const std::string base = absl::StrCat("/tmp/trainctl_binary_test_", getpid());
    std::ofstream(base + ".in") << input;
    const std::string command = absl::StrCat("cd ", TRAINCTL_SOURCE_DIR, " && ", TRAINCTL_BIN, " ",
                                             args, " <", base, ".in 2>", base, ".err");
    Result result;
    std::FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) result.out.append(buf, n);
    const int status = pclose(pipe);
    result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::stringstream err;
    err << std::ifstream(base + ".err").rdbuf();
    result.err = err.str();
    std::remove((base + ".in").c_str());
    std::remove((base + ".err").c_str());
    return result;
  }

 private:
  FakeJobService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

Fixture& Fake() {
  static Fixture* fixture = new Fixture();
  return *fixture;
}

TEST_CASE("submit prints the job id alone; get shows it in every format", "[binary]") {
  Result submit = Fake().Run("submit -f examples/hello.yaml");
  INFO(submit.err);
  REQUIRE(submit.exit_status == 0);
  CHECK_THAT(submit.out, Catch::Matches("j-[0-9]+\n"));
  const std::string id = submit.out.substr(0, submit.out.size() - 1);

  for (const char* format : {"json", "yaml"}) {
    Result get = Fake().Run(absl::StrCat("get ", id, " -o ", format));
    REQUIRE(get.exit_status == 0);
    v1::Job job;  // JSON and YAML both read back through the spec parser
    REQUIRE(ParseYamlToMessage(get.out, &job).ok());
    CHECK(job.id() == id);
    CHECK(job.state() == v1::JOB_STATE_QUEUED);
    CHECK(job.spec().worker_pools(1).replica_count() == 3);
  }
  Result table = Fake().Run(absl::StrCat("get ", id));
  CHECK_THAT(table.out, Catch::Contains("State:     QUEUED\n"));
  CHECK_THAT(table.out, Catch::Contains("chief-0   0      -      PENDING"));
}

TEST_CASE("every example spec parses", "[binary]") {
  for (const char* name : {"hello", "fails", "long"}) {
    INFO(name);
    absl::StatusOr<v1::JobSpec> spec =
        ParseJobSpecFile(absl::StrCat(TRAINCTL_SOURCE_DIR, "/examples/", name, ".yaml"));
    REQUIRE(spec.ok());
    CHECK(spec->worker_pools(0).replica_count() == 1);
  }
}

TEST_CASE("errors go to stderr as CODE: message with exit status 2", "[binary]") {
  Result bad = Fake().Run("submit -f -", "workerPools: [{replicaCount: 0}]");
  CHECK(bad.exit_status == 2);
  CHECK(bad.out.empty());
  CHECK(bad.err == "error: INVALID_ARGUMENT: workerPools[0].replicaCount must be 1..4096, got 0\n");

  Result malformed = Fake().Run("submit -f -", "a: [b\n");
  CHECK(malformed.exit_status == 2);
  CHECK_THAT(malformed.err,
             Catch::StartsWith("error: INVALID_ARGUMENT: <stdin>: invalid YAML at line "));

  Result missing = Fake().Run("get j-nope");
  CHECK(missing.exit_status == 2);
  CHECK(missing.err == "error: NOT_FOUND: job j-nope not found\n");

  Result usage = Fake().Run("get");
  CHECK(usage.exit_status == 2);
  CHECK_THAT(usage.err, Catch::StartsWith("error: INVALID_ARGUMENT: \"get\" needs ID\n"));

  Result down = Fixture::RunBinary("--server 127.0.0.1:1 list");
  CHECK(down.exit_status == 2);
  CHECK_THAT(down.err, Catch::StartsWith(
                           "error: UNAVAILABLE: cannot reach the trainctl server at 127.0.0.1:1"));
}

TEST_CASE("list follows page tokens up to --limit and filters", "[binary]") {
  for (int i = 0; i < 3; ++i) REQUIRE(Fake().Run("submit -f examples/long.yaml").exit_status == 0);
  Result all = Fake().Run("list -o json");
  REQUIRE(all.exit_status == 0);
  v1::ListJobsResponse listed;
  REQUIRE(ParseYamlToMessage(all.out, &listed).ok());
  CHECK(listed.jobs_size() >= 7);  // 4 seeded + 3 submitted here, in pages of 2

  Result limited = Fake().Run("list --limit 3");
  CHECK_THAT(limited.out, Catch::StartsWith("ID "));
  CHECK(std::count(limited.out.begin(), limited.out.end(), '\n') == 4);  // header + 3

  Result queued = Fake().Run("list --state queued,QUEUED -o yaml");
  REQUIRE(ParseYamlToMessage(queued.out, &listed).ok());
  CHECK(listed.jobs_size() >= 3);
  for (const v1::Job& job : listed.jobs()) CHECK(job.state() == v1::JOB_STATE_QUEUED);

  Result none = Fake().Run("list --project nobody");
  CHECK(none.exit_status == 0);
  CHECK(none.out.empty());
  CHECK(none.err == "No jobs found.\n");
}

TEST_CASE("wait exits 0, 1 or 2 and rides out a broken stream", "[binary]") {
  Result ok = Fake().Run("wait j-ok");
  CHECK(ok.exit_status == 0);
  CHECK(ok.out == "j-ok SUCCEEDED\n");

  Result failed = Fake().Run("wait j-fail");
  CHECK(failed.exit_status == 1);
  CHECK(failed.out == "j-fail FAILED: Replica worker-1 exited with a non-zero status of 3.\n");

  Result flaky = Fake().Run("wait j-flaky");
  CHECK(flaky.exit_status == 0);
  CHECK(flaky.out == "j-flaky SUCCEEDED\n");
  CHECK_THAT(flaky.err, Catch::Contains("reconnecting"));

  Result slow = Fake().Run("wait j-slow --timeout 300ms");
  CHECK(slow.exit_status == 2);
  CHECK(slow.err ==
        "error: DEADLINE_EXCEEDED: timed out after 300ms waiting for job j-slow (last state "
        "RUNNING)\n");

  CHECK(Fake().Run("wait j-nope").exit_status == 2);
}

TEST_CASE("logs reads to the end, and -f follows through transient errors", "[binary]") {
  Result logs = Fake().Run("logs j-ok --replica chief-0");
  CHECK(logs.exit_status == 0);
  CHECK(logs.out == "hello\nworld\n");

  Result follow = Fake().Run("logs j-ok -f --replica growing");
  CHECK(follow.exit_status == 0);
  CHECK(follow.out == "line 1\nline 2\nline 3\n");

  Result missing = Fake().Run("logs j-ok --replica nope");
  CHECK(missing.exit_status == 2);
  CHECK(missing.err == "error: NOT_FOUND: no replica nope\n");
}

TEST_CASE("cancel prints the id and the new state", "[binary]") {
  Result submit = Fake().Run("submit -f examples/long.yaml");
  REQUIRE(submit.exit_status == 0);
  const std::string id = submit.out.substr(0, submit.out.size() - 1);
  Result cancel = Fake().Run("cancel " + id);
  CHECK(cancel.exit_status == 0);
  CHECK(cancel.out == id + " CANCELLED\n");
}

}  // namespace
}  // namespace trainctl::cli
