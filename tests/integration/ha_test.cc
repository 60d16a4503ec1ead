// High availability (docs/operators/postgresql-ha.md): two trainctld share one PostgreSQL database;
// one leads, the other stands by. A SIGKILLed leader's standby takes over within the lease plus
// 2 s while replicas keep running with their PIDs; ten failovers by SIGKILL and SIGSTOP while a
// client submits lose and duplicate no acknowledged job; a stopped leader that wakes up steps
// down instead of committing. Runs in ctest's PostgreSQL pass (TRAINCTL_TEST_PG).
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/leader_hint.h"
#include "tests/integration/ha_cluster.h"
#include "tests/storage/test_store.h"

namespace trainctl::testing {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// A chief and a worker that write their pids to DIR/pid-<replica> and exit 0 once DIR/go exists.
constexpr char kWaitingJob[] = R"(
displayName: survives-failover
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sh, -c, 'exec WORKLOAD --pidfile DIR/pid-$TRAINCTL_REPLICA_NAME --wait-file DIR/go --exit 0']
  resources: {cpu: 0.5, memoryMb: 64}
- name: worker
  replicaCount: 1
  command: [/bin/sh, -c, 'exec WORKLOAD --pidfile DIR/pid-$TRAINCTL_REPLICA_NAME --wait-file DIR/go --exit 0']
  resources: {cpu: 0.5, memoryMb: 64}
scheduling:
  maxReplicaRestarts: 0
)";

bool AllRunning(const v1::Job& job) {
  if (job.state() != v1::JOB_STATE_RUNNING || job.replicas_size() != 2) return false;
  for (const v1::Replica& r : job.replicas()) {
    if (r.state() != v1::REPLICA_STATE_RUNNING || r.pid() <= 0) return false;
  }
  return true;
}

TEST_CASE(
    "HA: the standby leads within the lease plus 2 s of a SIGKILL of the leader and the "
    "job's replicas keep their PIDs",
    "[integration][postgres]") {
  HaOptions o;
  o.store = storage::NewPgDatabase();
  HaCluster c(o);
  const int leader = c.WaitForLeader();
  REQUIRE(leader >= 0);
  const std::string id = c.Submit(c.Spec(kWaitingJob));
  const v1::Job running = c.WaitForJob(id, AllRunning);
  const pid_t chief = WaitForPidFile(c.dir() + "/pid-chief-0");
  const pid_t worker = WaitForPidFile(c.dir() + "/pid-worker-0");
  CHECK(running.replicas(0).pid() == chief);
  CHECK(running.replicas(1).pid() == worker);

  c.daemon(leader).Signal(SIGKILL);
  const auto killed = Clock::now();
  REQUIRE(c.daemon(leader).Wait(std::chrono::seconds(10)) != -1);
  const int next = c.WaitForLeader(std::chrono::seconds(10), leader);
  const double took = Seconds(Clock::now() - killed);
  INFO("the standby served " << took << " s after the SIGKILL");
  REQUIRE(next >= 0);
  CHECK(took <= 2 + 2);
  CHECK(Contains(c.DaemonLog(next), "took the leader lease: epoch 2"));
  // The event log says who leads and why.
  const std::string elected = absl::StrCat("trainctld at ", c.address(next),
                                           " leads (epoch 2): the lease of the leader at ",
                                           c.address(leader), " (epoch 1) lapsed");
  REQUIRE(Eventually([&] {
    grpc::ClientContext ctx;
    v1::ListEventsRequest req;
    req.set_type("LeaderElected");
    v1::ListEventsResponse resp;
    if (!c.cluster(next).ListEvents(&ctx, req, &resp).ok()) return false;
    for (const v1::Event& e : resp.events()) {
      if (Contains(e.reason(), elected)) return true;
    }
    return false;
  }));

  // The agents find the new leader, which adopts the replicas where they run.
  c.WaitForConnectedNodes(2);
  const v1::Job adopted = c.WaitForJob(id, AllRunning);
  CHECK(adopted.replicas(0).pid() == chief);
  CHECK(adopted.replicas(1).pid() == worker);
  CHECK(adopted.attempts_size() == 1);
  CHECK(PidAlive(chief));
  CHECK(PidAlive(worker));
  std::ofstream(c.dir() + "/go") << "go\n";
  const v1::Job done =
      c.WaitForJob(id, [](const v1::Job& j) { return j.state() == v1::JOB_STATE_SUCCEEDED; });
  CHECK(done.attempts_size() == 1);
  CHECK(done.replicas(0).restart_count() == 0);
  CHECK(done.replicas(1).restart_count() == 0);

  // The killed trainctld comes back as a standby that names the new leader.
  c.StartDaemon(leader);
  REQUIRE(Eventually([&] {
    grpc::ClientContext ctx;
    v1::ListJobsResponse resp;
    const grpc::Status s = c.jobs(leader).ListJobs(&ctx, v1::ListJobsRequest(), &resp);
    const std::optional<v1::LeaderInfo> hint = LeaderHint(s, &ctx);
    return hint.has_value() && hint->address() == c.address(next) && hint->epoch() == 2;
  }));
}

// Submits jobs one after another with request ids, each until some trainctld acknowledges it,
// going where a standby points; records every acknowledged job.
class Submitter {
 public:
  explicit Submitter(HaCluster* c) : c_(c) {
    thread_ = std::thread([this] { Run(); });
  }
  ~Submitter() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  size_t acked() {
    std::lock_guard<std::mutex> lock(mu_);
    return acked_.size();
  }
  std::map<std::string, std::string> acked_jobs() {
    std::lock_guard<std::mutex> lock(mu_);
    return acked_;
  }

 private:
  void Run() {
    int target = 0;
    for (int n = 0; !stop_; ++n) {
      v1::CreateJobRequest req;
      req.set_request_id(absl::StrCat("req-", n));
      v1::JobSpec* spec = req.mutable_spec();
      spec->set_display_name(absl::StrCat("submitted-", n));
      v1::WorkerPool* pool = spec->add_worker_pools();
      pool->set_name("chief");
      pool->set_replica_count(1);
      pool->add_command("/bin/true");
      pool->mutable_resources()->set_cpu(0.1);
      pool->mutable_resources()->set_memory_mb(16);
      while (!stop_) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
        v1::Job job;
        const grpc::Status s = c_->jobs(target).CreateJob(&ctx, req, &job);
        if (s.ok()) {
          std::lock_guard<std::mutex> lock(mu_);
          acked_[req.request_id()] = job.id();
          break;
        }
        const std::optional<v1::LeaderInfo> hint = LeaderHint(s, &ctx);
        int next = (target + 1) % 2;
        if (hint.has_value() && !hint->address().empty()) {
          for (int k = 0; k < 2; ++k) {
            if (c_->address(k) == hint->address()) next = k;
          }
        }
        target = next;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }

  HaCluster* const c_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::map<std::string, std::string> acked_;
  std::thread thread_;
};

TEST_CASE(
    "HA: ten failovers by SIGKILL and SIGSTOP while a client submits lose and duplicate "
    "no acknowledged job",
    "[integration][postgres]") {
  HaOptions o;
  o.store = storage::NewPgDatabase();
  o.agents = 0;
  HaCluster c(o);
  Submitter submitter(&c);
  std::vector<double> failovers;
  for (int round = 0; round < 10; ++round) {
    const int leader = c.WaitForLeader();
    REQUIRE(leader >= 0);
    const size_t before = submitter.acked();
    REQUIRE(Eventually([&] { return submitter.acked() >= before + 5; }));
    const bool stop = round % 2 == 1;
    c.daemon(leader).Signal(stop ? SIGSTOP : SIGKILL);
    const auto at = Clock::now();
    const int next = c.WaitForLeader(std::chrono::seconds(15), leader);
    REQUIRE(next >= 0);
    failovers.push_back(Seconds(Clock::now() - at));
    if (stop) {
      // Woken, the old leader finds its lease gone and steps down without committing.
      c.daemon(leader).Signal(SIGCONT);
      const int status = c.daemon(leader).Wait(std::chrono::seconds(10));
      INFO(c.DaemonLog(leader));
      REQUIRE(status != -1);
      CHECK(WIFEXITED(status));
      CHECK(WEXITSTATUS(status) == 75);
    } else {
      REQUIRE(c.daemon(leader).Wait(std::chrono::seconds(10)) != -1);
    }
    c.StartDaemon(leader);
  }
  const size_t before = submitter.acked();
  REQUIRE(Eventually([&] { return submitter.acked() >= before + 5; }));
  submitter.Stop();

  std::sort(failovers.begin(), failovers.end());
  WARN("failover (signal to the standby serving, --lease-duration 2s) over 10: median "
       << (failovers[4] + failovers[5]) / 2 << " s, max " << failovers.back() << " s");
  CHECK(failovers.back() <= 2 + 2);

  // Every acknowledged job is there once; no request made two jobs.
  const int leader = c.WaitForLeader();
  REQUIRE(leader >= 0);
  std::map<std::string, std::vector<std::string>> by_request;
  std::string token;
  do {
    grpc::ClientContext ctx;
    v1::ListJobsRequest req;
    req.set_page_size(500);
    req.set_page_token(token);
    v1::ListJobsResponse resp;
    const grpc::Status s = c.jobs(leader).ListJobs(&ctx, req, &resp);
    INFO(s.error_message());
    REQUIRE(s.ok());
    for (const v1::Job& job : resp.jobs()) by_request[job.request_id()].push_back(job.id());
    token = resp.next_page_token();
  } while (!token.empty());
  const std::map<std::string, std::string> acked = submitter.acked_jobs();
  INFO(acked.size() << " jobs acknowledged, " << by_request.size() << " request ids stored");
  CHECK(acked.size() >= 55);
  for (const auto& [request, id] : acked) {
    INFO(request);
    REQUIRE(by_request.count(request) == 1);
    CHECK(by_request[request] == std::vector<std::string>{id});
  }
  for (const auto& [request, ids] : by_request) {
    INFO(request);
    CHECK(ids.size() == 1);
  }
}

}  // namespace
}  // namespace trainctl::testing
