// The agent's replica runtime seam (agents/replica_runtime.h), from both sides:
// - the agent drives whatever runtime Options::runtime builds: a recording runtime sees each
//   scheduler command as its call, and its reports reach the scheduler like the launcher's;
// - the runtime contract, written once against the interface (CheckRuntimeContract) and run on
//   ProcessLauncher, for every later runtime to pass too.
#include "agents/replica_runtime.h"

#include <catch2/catch.hpp>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "agents/launcher.h"
#include "tests/agents/agent_fixture.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent::testing {
namespace {

using ::trainctl::v1::AgentMessage;
using ::trainctl::v1::SchedulerMessage;

// Records every call; reports only what the test makes it report.
class RecordingRuntime final : public ReplicaRuntime {
 public:
  explicit RecordingRuntime(Options options) : options_(std::move(options)) {}

  std::vector<std::string> AdoptRecordedRuns(const std::set<std::string>& reported) override {
    Note(absl::StrCat("adopt ", reported.size()));
    return {};
  }
  void Launch(const trainctl::v1::LaunchReplica& launch) override {
    Note("launch " + launch.run_id());
    absl::MutexLock lock(&mu_);
    running_.insert(launch.run_id());
  }
  absl::Status Stop(const std::string& run_id, int64_t grace_ms,
                    const std::string& reason) override {
    Note(absl::StrCat("stop ", run_id, " ", grace_ms, " ", reason));
    return absl::OkStatus();
  }
  void StopAll(int64_t, const std::string& reason) override { Note("stop all: " + reason); }
  absl::Status Notice(const trainctl::v1::NoticeReplica& notice) override {
    Note(absl::StrCat("notice ", notice.run_id(), " ", notice.kind(), " ", notice.signal()));
    return absl::OkStatus();
  }
  int Fence(int64_t, const std::string&) override { return 0; }
  void Unfence() override {}
  void RefuseFencedLaunch(const std::string&, const std::string&) override {}
  void RejectNewLaunches(const std::string& reason) override { Note("reject: " + reason); }
  void ForgetRun(const std::string& run_id) const override { Note("forget " + run_id); }
  trainctl::v1::LogData ReadLog(const std::string&, int64_t, int64_t) const override {
    trainctl::v1::LogData data;
    data.set_data("from the recording runtime\n");
    data.set_complete(true);
    return data;
  }
  pid_t ProcessGroupOf(const std::string&) const override { return 0; }
  bool LogFinal(const std::string& run_id) const override {
    absl::MutexLock lock(&mu_);
    return running_.count(run_id) == 0;
  }
  std::vector<trainctl::v1::KnownRun> KnownRuns() const override {
    absl::MutexLock lock(&mu_);
    std::vector<trainctl::v1::KnownRun> runs;
    for (const std::string& id : running_) {
      trainctl::v1::KnownRun& run = runs.emplace_back();
      run.set_run_id(id);
      run.set_running(true);
    }
    return runs;
  }
  int ActiveCount() const override {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(running_.size());
  }
  bool WaitUntilIdle(absl::Time) const override { return true; }

  // The test's hand on the runtime's reports.
  void ReportStarted(const std::string& run_id) {
    trainctl::v1::ReplicaStarted started;
    started.set_run_id(run_id);
    started.set_pid(4242);
    options_.on_started(started);
  }
  void ReportExited(const std::string& run_id, int code) {
    {
      absl::MutexLock lock(&mu_);
      running_.erase(run_id);
    }
    trainctl::v1::ReplicaExited exited;
    exited.set_run_id(run_id);
    exited.set_exit_code(code);
    options_.on_exited(exited);
  }
  const Options& options() const { return options_; }
  std::vector<std::string> Calls() const {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  bool Called(const std::string& call) const {
    absl::MutexLock lock(&mu_);
    return std::find(calls_.begin(), calls_.end(), call) != calls_.end();
  }

 private:
  void Note(std::string call) const {
    absl::MutexLock lock(&mu_);
    calls_.push_back(std::move(call));
  }

  const Options options_;
  mutable absl::Mutex mu_;
  mutable std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> running_ ABSL_GUARDED_BY(mu_);
};

TEST_CASE("the agent runs replicas through the runtime its options build", "[agent][runtime]") {
  RecordingRuntime* runtime = nullptr;
  AgentFixture f([&](Agent::Options& o) {
    o.runtime = [&](ReplicaRuntime::Options options) {
      auto built = std::make_unique<RecordingRuntime>(std::move(options));
      runtime = built.get();
      return built;
    };
  });
  REQUIRE(runtime != nullptr);
  // What the agent hands every runtime: its work dir, where reports go, what replicas get.
  CHECK(runtime->options().work_dir == f.work_dir());
  CHECK(runtime->options().replica_env.count("TRAINCTL_SERVER") == 1);
  CHECK(runtime->options().on_started != nullptr);
  CHECK(runtime->options().on_exited != nullptr);
  CHECK(runtime->options().preflight != nullptr);  // preflight is on by default
  // Recovery comes first, before the first Register.
  REQUIRE_FALSE(runtime->Calls().empty());
  CHECK(runtime->Calls().front() == "adopt 0");
  REQUIRE(f.scheduler().Next(IsRegister));

  f.scheduler().Send(Launch("worker-0", {"/bin/true"}));
  const std::string run = "j-agent/1/worker-0/0";
  REQUIRE(WaitUntil([&] { return runtime->Called("launch " + run); }));
  CHECK(f.agent().ActiveRuns() == 1);

  runtime->ReportStarted(run);
  std::optional<AgentMessage> started = f.scheduler().Next(IsStarted);
  REQUIRE(started);
  CHECK(started->replica_started().run_id() == run);
  CHECK(started->replica_started().pid() == 4242);

  // A reconnect lists the runtime's runs as running.
  f.scheduler().DropStream();
  std::optional<AgentMessage> reg = f.scheduler().Next(IsRegister);
  REQUIRE(reg);
  REQUIRE(reg->register_().runs_size() == 1);
  CHECK(reg->register_().runs(0).run_id() == run);
  CHECK(reg->register_().runs(0).running());

  SchedulerMessage read;
  read.mutable_read_log()->set_request_id(5);
  read.mutable_read_log()->set_run_id(run);
  f.scheduler().Send(read);
  std::optional<AgentMessage> log =
      f.scheduler().Next([](const AgentMessage& m) { return m.has_log_data(); });
  REQUIRE(log);
  CHECK(log->log_data().request_id() == 5);
  CHECK(log->log_data().data() == "from the recording runtime\n");

  // A notice reaches the runtime as it is; one for a run the agent never had, too (the
  // runtime answers NOT_FOUND and the agent goes on).
  SchedulerMessage notice;
  notice.mutable_notice()->set_run_id(run);
  notice.mutable_notice()->set_kind("preemption");
  notice.mutable_notice()->set_deadline_ms(1'800'000'000'000);
  notice.mutable_notice()->set_signal(10);
  f.scheduler().Send(notice);
  REQUIRE(WaitUntil([&] { return runtime->Called("notice " + run + " preemption 10"); }));

  f.scheduler().Send(Stop(run));
  REQUIRE(WaitUntil([&] { return runtime->Called("stop " + run + " 5000 "); }));

  // The end: reported to the scheduler, and forgotten by the runtime once journaled.
  runtime->ReportExited(run, 0);
  std::optional<AgentMessage> exited = f.scheduler().Next(IsExited);
  REQUIRE(exited);
  CHECK(exited->replica_exited().run_id() == run);
  CHECK(exited->replica_exited().exit_code() == 0);
  CHECK(runtime->Called("forget " + run));
  CHECK(f.agent().ActiveRuns() == 0);

  // Stopping the node's replicas: no launch after it, then every run stopped.
  f.agent().StopReplicas(absl::ZeroDuration());
  const std::vector<std::string> calls = runtime->Calls();
  auto at = [&](const std::string& call) {
    return std::find(calls.begin(), calls.end(), call) - calls.begin();
  };
  CHECK(at("reject: the agent is stopping its replicas") <
        at("stop all: the agent is stopping its replicas"));
  CHECK(at("stop all: the agent is stopping its replicas") < static_cast<long>(calls.size()));
}

// The contract of replica_runtime.h, through the interface alone. `make` builds the runtime
// under test on `work_dir`, with the options given.
void CheckRuntimeContract(const ReplicaRuntime::Factory& make) {
  TempDir dir;
  absl::Mutex mu;
  std::vector<std::string> events;  // "started RUN", "exited RUN CODE", "failed RUN"
  ReplicaRuntime::Options options;
  options.work_dir = dir.path();
  options.run_as = RootReplicas();
  options.on_started = [&](trainctl::v1::ReplicaStarted s) {
    absl::MutexLock lock(&mu);
    events.push_back("started " + s.run_id());
  };
  options.on_exited = [&](trainctl::v1::ReplicaExited e) {
    absl::MutexLock lock(&mu);
    events.push_back(e.launch_failed() ? "failed " + e.run_id()
                                       : absl::StrCat("exited ", e.run_id(), " ", e.exit_code()));
  };
  std::unique_ptr<ReplicaRuntime> runtime = make(options);
  auto seen = [&](const std::string& event) {
    absl::MutexLock lock(&mu);
    return std::count(events.begin(), events.end(), event);
  };
  auto launch = [&](const std::string& id, std::vector<std::string> argv) {
    trainctl::v1::LaunchReplica l;
    l.set_job_id("j-contract");
    l.set_attempt(1);
    l.set_replica_name(id);
    l.set_run_id("j-contract/1/" + id + "/0");
    for (std::string& arg : argv) l.add_argv(std::move(arg));
    runtime->Launch(l);
    return l.run_id();
  };

  CHECK(runtime->AdoptRecordedRuns({}).empty());
  // One start, then one end with the replica's exit code; launching the run id again is ignored.
  const std::string ok = launch("ok", {kWorkload, "--exit", "7"});
  launch("ok", {kWorkload, "--exit", "7"});
  REQUIRE(WaitUntil([&] { return seen("exited " + ok + " 7") == 1; }));
  CHECK(seen("started " + ok) == 1);
  // A launch that cannot start: one launch failure, no start.
  const std::string bad = launch("bad", {"/no/such/program"});
  REQUIRE(WaitUntil([&] { return seen("failed " + bad) == 1; }));
  CHECK(seen("started " + bad) == 0);
  // Stop: the replica ends; an unknown run is NOT_FOUND.
  const std::string sleeper = launch("sleeper", {kWorkload, "--sleep", "60"});
  REQUIRE(WaitUntil([&] { return seen("started " + sleeper) == 1; }));
  CHECK(runtime->ActiveCount() == 1);
  REQUIRE(runtime->KnownRuns().size() == 1);
  CHECK(runtime->KnownRuns()[0].run_id() == sleeper);
  CHECK(runtime->Stop("j-contract/1/nobody/0", 0, "test").code() == absl::StatusCode::kNotFound);
  CHECK(runtime->Stop(sleeper, 0, "test").ok());
  CHECK(runtime->WaitUntilIdle(absl::Now() + absl::Seconds(10)));
  {
    absl::MutexLock lock(&mu);
    CHECK(std::count_if(events.begin(), events.end(), [&](const std::string& e) {
            return e.rfind("exited " + sleeper, 0) == 0;
          }) == 1);
  }
  // Its log stays readable through the runtime.
  CHECK(runtime->ReadLog(ok, 0, 0).error().empty());
  // Fenced: a new launch starts nothing and is one launch failure.
  CHECK(runtime->Fence(0, "test fence") == 0);
  const std::string fenced = launch("fenced", {kWorkload, "--exit", "0"});
  REQUIRE(WaitUntil([&] { return seen("failed " + fenced) == 1; }));
  CHECK(seen("started " + fenced) == 0);
  runtime->Unfence();
  for (const std::string& id : {ok, bad, sleeper, fenced}) runtime->ForgetRun(id);
}

TEST_CASE("ProcessLauncher keeps the replica runtime's contract", "[launcher][runtime]") {
  CheckRuntimeContract([](ReplicaRuntime::Options options) {
    return std::unique_ptr<ReplicaRuntime>(std::make_unique<ProcessLauncher>(std::move(options)));
  });
}

}  // namespace
}  // namespace trainctl::agent::testing
