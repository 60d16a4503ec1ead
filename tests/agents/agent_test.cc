// Agent against an in-process fake scheduler: registration, reports, acks, reconnects.
#include "agents/agent.h"

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agents/proc_stats.h"
#include "common/time_util.h"
#include "tests/agents/fake_host_probe.h"
#include "tests/agents/orphan_util.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::TempDir;
using ::trainctl::v1::AgentMessage;
using ::trainctl::v1::SchedulerMessage;

const char kWorkload[] = TRAINCTL_WORKLOAD_PATH;

// The scheduler's side of AgentService: records what agents send and sends what tests ask.
class FakeScheduler final : public trainctl::v1::AgentService::Service {
 public:
  grpc::Status Connect(grpc::ServerContext* context,
                       grpc::ServerReaderWriter<SchedulerMessage, AgentMessage>* stream) override {
    int id;
    {
      absl::MutexLock lock(&mu_);
      id = ++streams_;
      drop_ = false;
    }
    std::thread reader([&] {
      AgentMessage message;
      while (stream->Read(&message)) {
        absl::MutexLock lock(&mu_);
        received_.push_back({id, message});
      }
      absl::MutexLock lock(&mu_);
      reader_done_ = id;
    });
    while (true) {
      SchedulerMessage out;
      {
        absl::MutexLock lock(&mu_);
        auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return drop_ || reader_done_ == id || !outbox_.empty();
        };
        mu_.Await(absl::Condition(&ready));
        if (drop_ || reader_done_ == id) break;
        out = std::move(outbox_.front());
        outbox_.erase(outbox_.begin());
      }
      stream->Write(out);
    }
    context->TryCancel();
    reader.join();
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "dropped by the test");
  }

  void Send(SchedulerMessage message) {
    absl::MutexLock lock(&mu_);
    outbox_.push_back(std::move(message));
  }

  // Ends the current stream from the scheduler's side.
  void DropStream() {
    absl::MutexLock lock(&mu_);
    drop_ = true;
  }

  // Waits for the next received message (after those already returned) that matches; skips
  // the ones that do not.
  std::optional<AgentMessage> Next(const std::function<bool(const AgentMessage&)>& match,
                                   int* stream = nullptr) {
    absl::MutexLock lock(&mu_);
    absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (true) {
      for (; cursor_ < received_.size(); ++cursor_) {
        if (match(received_[cursor_].message)) {
          if (stream != nullptr) *stream = received_[cursor_].stream;
          return received_[cursor_++].message;
        }
      }
      size_t seen = received_.size();
      auto more = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return received_.size() > seen; };
      if (!mu_.AwaitWithDeadline(absl::Condition(&more), deadline)) return std::nullopt;
    }
  }

  // Every message received so far, in order.
  std::vector<AgentMessage> All() {
    absl::MutexLock lock(&mu_);
    std::vector<AgentMessage> all;
    for (const Received& r : received_) all.push_back(r.message);
    return all;
  }

  // Every seq received so far, in order.
  std::vector<uint64_t> Seqs() {
    absl::MutexLock lock(&mu_);
    std::vector<uint64_t> seqs;
    for (const Received& r : received_) seqs.push_back(r.message.seq());
    return seqs;
  }

 private:
  struct Received {
    int stream;
    AgentMessage message;
  };
  absl::Mutex mu_;
  int streams_ ABSL_GUARDED_BY(mu_) = 0;
  int reader_done_ ABSL_GUARDED_BY(mu_) = 0;
  bool drop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<SchedulerMessage> outbox_ ABSL_GUARDED_BY(mu_);
  std::vector<Received> received_ ABSL_GUARDED_BY(mu_);
  size_t cursor_ ABSL_GUARDED_BY(mu_) = 0;
};

bool IsRegister(const AgentMessage& m) { return m.has_register_(); }
bool IsStarted(const AgentMessage& m) { return m.has_replica_started(); }
bool IsExited(const AgentMessage& m) { return m.has_replica_exited(); }

SchedulerMessage Ack(uint64_t seq) {
  SchedulerMessage m;
  m.mutable_ack()->set_seq(seq);
  return m;
}

bool IsCheckReport(const AgentMessage& m, const std::string& phase) {
  return m.has_check_report() && m.check_report().run().phase() == phase;
}

SchedulerMessage Launch(const std::string& replica, std::vector<std::string> argv,
                        int attempt = 1) {
  SchedulerMessage m;
  trainctl::v1::LaunchReplica& launch = *m.mutable_launch();
  launch.set_job_id("j-agent");
  launch.set_attempt(attempt);
  launch.set_replica_name(replica);
  launch.set_run_id(absl::StrCat("j-agent/", attempt, "/", replica, "/0"));
  for (std::string& arg : argv) launch.add_argv(std::move(arg));
  launch.add_hostnames("worker-0");
  launch.add_hostnames("worker-1");
  return m;
}

SchedulerMessage Stop(const std::string& run_id) {
  SchedulerMessage m;
  m.mutable_stop()->set_run_id(run_id);
  m.mutable_stop()->set_grace_period_ms(5000);
  return m;
}

// Writes an executable /bin/sh script and returns its path.
std::string WriteScript(const std::string& path, const std::string& body) {
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  chmod(path.c_str(), 0755);
  return path;
}

// A fake scheduler on a local port and an agent connected to it, running on its own thread. The
// agent checks a fake host (FakeHostProbe, with room on the work dir) and runs no periodic
// checks unless `customize` turns them on.
class AgentFixture {
 public:
  using Customize = std::function<void(Agent::Options&)>;

  explicit AgentFixture(const Customize& customize = nullptr) {
    probe_->free_bytes[dir_.path()] = 500 * testing::kGb;
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&scheduler_);
    server_ = builder.BuildAndStart();
    Agent::Options options;
    options.scheduler = absl::StrCat("127.0.0.1:", port);
    options.node = "node-1";
    options.address = "10.1.2.3";
    options.work_dir = dir_.path();
    options.capacity.set_cpu(8);
    options.capacity.set_memory_mb(4096);
    options.allocatable.set_cpu(7);
    options.allocatable.set_memory_mb(3072);
    options.labels = {{"zone", "a"}};
    options.initial_backoff = absl::Milliseconds(20);
    options.max_backoff = absl::Milliseconds(100);
    options.progress_interval = absl::Milliseconds(50);
    options.probe = probe_;
    options.checks.health_check_interval = absl::ZeroDuration();
    if (customize) customize(options);
    agent_ = std::make_unique<Agent>(options);
    runner_ = std::thread([this] { agent_->Run(); });
  }
  ~AgentFixture() {
    if (!shut_down_) agent_->Shutdown(absl::Seconds(1), absl::Milliseconds(1));
    runner_.join();
    agent_.reset();
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  }

  FakeScheduler& scheduler() { return scheduler_; }
  const std::string& work_dir() const { return dir_.path(); }
  testing::FakeHostProbe& probe() { return *probe_; }
  Agent& agent() { return *agent_; }
  void Shutdown(absl::Duration grace, absl::Duration ack_wait) {
    shut_down_ = true;
    agent_->Shutdown(grace, ack_wait);
  }

 private:
  TempDir dir_;
  std::shared_ptr<testing::FakeHostProbe> probe_ = std::make_shared<testing::FakeHostProbe>();
  FakeScheduler scheduler_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Agent> agent_;
  std::thread runner_;
  bool shut_down_ = false;
};

TEST_CASE("the agent registers, heartbeats and reports runs until acked", "[agent]") {
  AgentFixture f;
  std::optional<AgentMessage> reg = f.scheduler().Next(IsRegister);
  REQUIRE(reg);
  const trainctl::v1::Register& r = reg->register_();
  CHECK(r.node() == "node-1");
  CHECK(r.address() == "10.1.2.3");
  CHECK(r.capacity().cpu() == 8);
  CHECK(r.allocatable().memory_mb() == 3072);
  CHECK(r.labels().at("zone") == "a");
  CHECK(r.agent_version() == "0.1.0");
  CHECK(r.agent_instance() == f.agent().instance());
  CHECK(r.runs().empty());
  CHECK(reg->seq() == 1);
  CHECK_FALSE(r.has_startup());  // No startup script.
  CHECK(r.config().at("preflight") == "on");
  CHECK(r.config().at("disk-size root") == "/ > 32 GB");
  CHECK(r.config().at("disk-size cache") == f.work_dir() + " > 32 GB");
  CHECK(r.config().at("health-check-interval") == "off");

  SchedulerMessage ack;
  ack.mutable_register_ack()->set_heartbeat_interval_ms(50);
  f.scheduler().Send(ack);
  REQUIRE(f.scheduler().Next([](const AgentMessage& m) { return m.has_heartbeat(); }));

  f.scheduler().Send(Launch("worker-0", {kWorkload, "--print", "hi", "--exit", "3"}));
  std::optional<AgentMessage> started = f.scheduler().Next(IsStarted);
  std::optional<AgentMessage> exited = f.scheduler().Next(IsExited);
  REQUIRE(started);
  REQUIRE(exited);
  CHECK(started->replica_started().run_id() == "j-agent/1/worker-0/0");
  CHECK(exited->replica_exited().exit_code() == 3);
  CHECK(exited->replica_exited().output_tail() == "hi");
  CHECK(exited->seq() > started->seq());

  SchedulerMessage read;
  read.mutable_read_log()->set_request_id(77);
  read.mutable_read_log()->set_run_id("j-agent/1/worker-0/0");
  f.scheduler().Send(read);
  std::optional<AgentMessage> log =
      f.scheduler().Next([](const AgentMessage& m) { return m.has_log_data(); });
  REQUIRE(log);
  CHECK(log->log_data().request_id() == 77);
  CHECK(log->log_data().data() == "hi\n");
  CHECK(log->log_data().complete());

  // Nothing acked: after a reconnect the exit is listed in Register and both reports come
  // again, after it, with new seqs.
  f.scheduler().DropStream();
  int stream = 0;
  reg = f.scheduler().Next(IsRegister, &stream);
  REQUIRE(reg);
  CHECK(stream == 2);
  REQUIRE(reg->register_().runs_size() == 1);
  CHECK(reg->register_().runs(0).run_id() == "j-agent/1/worker-0/0");
  CHECK_FALSE(reg->register_().runs(0).running());
  std::optional<AgentMessage> started_again = f.scheduler().Next(IsStarted);
  std::optional<AgentMessage> exited_again = f.scheduler().Next(IsExited);
  REQUIRE(started_again);
  REQUIRE(exited_again);
  CHECK(started_again->seq() > reg->seq());
  CHECK(exited_again->seq() > started_again->seq());
  CHECK(exited_again->replica_exited().exit_code() == 3);

  // Acked: gone for good.
  f.scheduler().Send(Ack(exited_again->seq()));
  REQUIRE(testing::WaitUntil([&] { return f.agent().UnackedReports() == 0; }));
  f.scheduler().DropStream();
  reg = f.scheduler().Next(IsRegister, &stream);
  REQUIRE(reg);
  CHECK(stream == 3);
  CHECK(reg->register_().runs().empty());

  // Seqs are 1, 2, 3, ... in the order the scheduler saw them.
  std::vector<uint64_t> seqs = f.scheduler().Seqs();
  for (size_t i = 0; i < seqs.size(); ++i) CHECK(seqs[i] == i + 1);
}

TEST_CASE("replicas inherit no file descriptor but stdin, stdout and stderr", "[agent]") {
  AgentFixture f;
  REQUIRE(f.scheduler().Next(IsRegister));
  f.scheduler().Send(Launch("worker-0", {"sh", "-c", "cd /proc/$$/fd && echo *"}));
  REQUIRE(f.scheduler().Next(IsExited));
  SchedulerMessage read;
  read.mutable_read_log()->set_run_id("j-agent/1/worker-0/0");
  f.scheduler().Send(read);
  std::optional<AgentMessage> log =
      f.scheduler().Next([](const AgentMessage& m) { return m.has_log_data(); });
  REQUIRE(log);
  CHECK(log->log_data().data() == "0 1 2 3\n");  // 3: the directory the glob is reading
}

TEST_CASE("signs of progress reach the scheduler", "[agent]") {
  AgentFixture f;
  REQUIRE(f.scheduler().Next(IsRegister));
  f.scheduler().Send(Launch(
      "worker-0", {"sh", "-c", "sleep 0.05; touch \"$TRAINCTL_PROGRESS_FILE\"; exec sleep 60"}));
  std::optional<AgentMessage> progress =
      f.scheduler().Next([](const AgentMessage& m) { return m.has_replica_progress(); });
  REQUIRE(progress);
  CHECK(progress->replica_progress().run_id() == "j-agent/1/worker-0/0");
  CHECK(progress->replica_progress().source() == "progress-file");
  CHECK(progress->replica_progress().time_ms() > 0);
}

TEST_CASE("a reconnect keeps replicas running and lists them in Register", "[agent]") {
  AgentFixture f;
  REQUIRE(f.scheduler().Next(IsRegister));
  f.scheduler().Send(Launch("worker-0", {kWorkload, "--sleep", "60"}));
  std::optional<AgentMessage> started = f.scheduler().Next(IsStarted);
  REQUIRE(started);
  f.scheduler().Send(Ack(started->seq()));
  REQUIRE(testing::WaitUntil([&] { return f.agent().UnackedReports() == 0; }));

  f.scheduler().DropStream();
  std::optional<AgentMessage> reg = f.scheduler().Next(IsRegister);
  REQUIRE(reg);
  REQUIRE(reg->register_().runs_size() == 1);
  CHECK(reg->register_().runs(0).running());
  CHECK(reg->register_().runs(0).pid() == started->replica_started().pid());

  SchedulerMessage stop;
  stop.mutable_stop()->set_run_id("j-agent/1/worker-0/0");
  stop.mutable_stop()->set_grace_period_ms(5000);
  f.scheduler().Send(stop);
  std::optional<AgentMessage> exited = f.scheduler().Next(IsExited);
  REQUIRE(exited);
  CHECK(exited->replica_exited().stopped_by_request());
  CHECK(exited->replica_exited().signal() == SIGTERM);
}

TEST_CASE("Shutdown stops replicas and waits for their exits to be acked", "[agent]") {
  AgentFixture f;
  REQUIRE(f.scheduler().Next(IsRegister));
  f.scheduler().Send(Launch("worker-0", {kWorkload, "--trap-term", "--sleep", "60"}));
  REQUIRE(f.scheduler().Next(IsStarted));
  std::thread shutdown([&] { f.Shutdown(absl::Seconds(5), absl::Seconds(10)); });
  std::optional<AgentMessage> exited = f.scheduler().Next(IsExited);
  REQUIRE(exited);
  CHECK_FALSE(exited->replica_exited().stopped_by_request());  // The agent's own stop.
  CHECK(exited->replica_exited().exit_code() == 0);
  f.scheduler().Send(Ack(exited->seq()));
  shutdown.join();
  CHECK(f.agent().UnackedReports() == 0);
}

// Sends a RegisterAck and returns once the agent handled it: the reader handles messages in
// order, so the answer to a ReadLog sent after it proves it.
void AckRegistration(FakeScheduler& scheduler) {
  SchedulerMessage ack;
  ack.mutable_register_ack()->set_heartbeat_interval_ms(2000);
  scheduler.Send(ack);
  SchedulerMessage read;
  read.mutable_read_log()->set_request_id(4711);
  read.mutable_read_log()->set_run_id("none/1/none/0");
  scheduler.Send(read);
  REQUIRE(scheduler.Next(
      [](const AgentMessage& m) { return m.has_log_data() && m.log_data().request_id() == 4711; }));
}

int CountLines(const std::string& path) {
  std::string text = testing::ReadFile(path);
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

TEST_CASE("the startup script runs before Register and after a registered stream is lost (R14)",
          "[agent][checks]") {
  TempDir scripts;
  const std::string script =
      WriteScript(scripts.path() + "/startup.sh",
                  "echo run >> \"$TRAINCTL_WORK_DIR/startups\"; echo \"ready on $TRAINCTL_NODE\"");
  AgentFixture f([&](Agent::Options& o) { o.checks.startup_script = script; });
  const std::string runs = f.work_dir() + "/startups";
  std::optional<AgentMessage> reg = f.scheduler().Next(IsRegister);
  REQUIRE(reg);
  const trainctl::v1::CheckRun& startup = reg->register_().startup();
  CHECK(startup.phase() == "startup");
  CHECK(startup.passed());
  REQUIRE(startup.items_size() == 1);
  CHECK(startup.items(0).item() == "startup-script");
  CHECK(startup.items(0).passed());
  CHECK(startup.items(0).measured() == "exit status 0");
  CHECK(startup.items(0).message() == "ready on node-1");
  CHECK(reg->register_().config().at("startup-script") == script);
  CHECK(CountLines(runs) == 1);

  // A stream that was registered is lost: the script runs again before the next Register.
  AckRegistration(f.scheduler());
  f.scheduler().DropStream();
  int stream = 0;
  reg = f.scheduler().Next(IsRegister, &stream);
  REQUIRE(reg);
  CHECK(stream == 2);
  CHECK(CountLines(runs) == 2);
  CHECK(reg->register_().startup().passed());

  // A stream that never got its RegisterAck: no new run; the last one is sent again.
  f.scheduler().DropStream();
  reg = f.scheduler().Next(IsRegister, &stream);
  REQUIRE(reg);
  CHECK(stream == 3);
  CHECK(CountLines(runs) == 2);
  CHECK(reg->register_().startup().items(0).message() == "ready on node-1");
}

TEST_CASE("a failing startup script is reported in Register", "[agent][checks]") {
  TempDir scripts;
  const std::string script =
      WriteScript(scripts.path() + "/startup.sh", "echo 'cannot mount /data' >&2; exit 3");
  AgentFixture f([&](Agent::Options& o) { o.checks.startup_script = script; });
  std::optional<AgentMessage> reg = f.scheduler().Next(IsRegister);
  REQUIRE(reg);
  const trainctl::v1::CheckRun& startup = reg->register_().startup();
  CHECK_FALSE(startup.passed());
  REQUIRE(startup.items_size() == 1);
  CHECK(startup.items(0).measured() == "exit status 3");
  CHECK(startup.items(0).message() == "cannot mount /data");
}

TEST_CASE("a failed preflight starts nothing and reports why (R15, R20)", "[agent][checks]") {
  AgentFixture f([](Agent::Options& o) { o.checks.host.root.min_free_gb = 1e9; });
  REQUIRE(f.scheduler().Next(IsRegister));
  const std::string marker = f.work_dir() + "/marker";
  f.scheduler().Send(Launch("worker-0", {"touch", marker}));
  f.scheduler().Send(Launch("worker-1", {"touch", marker}));
  for (const char* replica : {"worker-0", "worker-1"}) {
    std::optional<AgentMessage> exited = f.scheduler().Next(IsExited);
    REQUIRE(exited);
    const trainctl::v1::ReplicaExited& e = exited->replica_exited();
    const std::string run_id = absl::StrCat("j-agent/1/", replica, "/0");
    CHECK(e.run_id() == run_id);
    CHECK(e.launch_failed());
    CHECK(e.preflight_failed());
    CHECK_FALSE(e.launch_error_is_user());
    CHECK(e.launch_error() ==
          "preflight failed on node-1: item disk-size root failed: 120.0 GB free, need > 1e+09 GB");
    CHECK(e.end_time_ms() > 0);
    CHECK(e.checks().phase() == "preflight");
    CHECK_FALSE(e.checks().passed());
    CHECK(e.checks().job_id() == "j-agent");
    CHECK(e.checks().run_id() == run_id);
    CHECK(e.checks().items_size() == 5);
  }
  // One preflight run for both replicas of the attempt, and not one process.
  CHECK(f.probe().root_probes == 1);
  CHECK(access(marker.c_str(), F_OK) != 0);
  CHECK(access((f.work_dir() + "/jobs/j-agent").c_str(), F_OK) != 0);
  for (const AgentMessage& m : f.scheduler().All()) {
    CHECK_FALSE(m.has_replica_started());
    CHECK_FALSE(m.has_check_report());  // A failed preflight travels with the exits.
  }
}

TEST_CASE("the replicas of one attempt share one preflight run", "[agent][checks]") {
  AgentFixture f;
  REQUIRE(f.scheduler().Next(IsRegister));
  f.scheduler().Send(Launch("worker-0", {kWorkload, "--exit", "0"}));
  f.scheduler().Send(Launch("worker-1", {kWorkload, "--exit", "0"}));
  REQUIRE(f.scheduler().Next(IsExited));
  REQUIRE(f.scheduler().Next(IsExited));
  std::vector<AgentMessage> preflights;
  std::optional<uint64_t> first_started;
  for (const AgentMessage& m : f.scheduler().All()) {
    if (IsCheckReport(m, "preflight")) preflights.push_back(m);
    if (m.has_replica_started() && !first_started) first_started = m.seq();
  }
  REQUIRE(preflights.size() == 1);
  REQUIRE(first_started);
  CHECK(preflights[0].seq() < *first_started);
  const trainctl::v1::CheckRun& run = preflights[0].check_report().run();
  CHECK(run.passed());
  CHECK(run.job_id() == "j-agent");
  CHECK(run.run_id() == "j-agent/1/worker-0/0");
  CHECK(run.items(0).item() == "dns");
  CHECK(run.items(0).message() == "2 of 2 hostnames resolve");
  CHECK(f.probe().root_probes == 1);

  // The next attempt gets a run of its own.
  f.scheduler().Send(Launch("worker-0", {kWorkload, "--exit", "0"}, /*attempt=*/2));
  std::optional<AgentMessage> next =
      f.scheduler().Next([](const AgentMessage& m) { return IsCheckReport(m, "preflight"); });
  REQUIRE(next);
  CHECK(next->check_report().run().run_id() == "j-agent/2/worker-0/0");
  CHECK(f.probe().root_probes == 2);
}

TEST_CASE("--preflight=false launches without checking", "[agent][checks]") {
  AgentFixture f([](Agent::Options& o) {
    o.checks.preflight = false;
    o.checks.host.root.min_free_gb = 1e9;
  });
  std::optional<AgentMessage> reg = f.scheduler().Next(IsRegister);
  REQUIRE(reg);
  CHECK(reg->register_().config().at("preflight") == "off");
  f.scheduler().Send(Launch("worker-0", {kWorkload, "--exit", "0"}));
  REQUIRE(f.scheduler().Next(IsStarted));
  CHECK(f.probe().root_probes == 0);
}

TEST_CASE("exit checks come with an abnormal exit only (scenario 3 vs 4)", "[agent][checks]") {
  TempDir scripts;
  const std::string program =
      WriteScript(scripts.path() + "/health.sh", "echo \"GPUs fine on $TRAINCTL_NODE\"");
  AgentFixture f([&](Agent::Options& o) { o.checks.health_check_program = program; });
  REQUIRE(f.scheduler().Next(IsRegister));

  f.scheduler().Send(Launch("worker-0", {kWorkload, "--print", "boom", "--exit", "3"}));
  std::optional<AgentMessage> exited = f.scheduler().Next(IsExited);
  REQUIRE(exited);
  const trainctl::v1::ReplicaExited& e = exited->replica_exited();
  CHECK(e.exit_code() == 3);
  CHECK(e.output_tail() == "boom");
  REQUIRE(e.has_checks());
  CHECK(e.checks().phase() == "exit");
  CHECK(e.checks().passed());
  CHECK(e.checks().job_id() == "j-agent");
  CHECK(e.checks().run_id() == "j-agent/1/worker-0/0");
  REQUIRE(e.checks().items_size() == 6);
  CHECK(e.checks().items(5).item() == "health-program");
  CHECK(e.checks().items(5).message() == "GPUs fine on node-1");

  f.scheduler().Send(Launch("worker-1", {kWorkload, "--signal", "9"}));
  exited = f.scheduler().Next(IsExited);
  REQUIRE(exited);
  CHECK(exited->replica_exited().signal() == 9);
  CHECK(exited->replica_exited().checks().phase() == "exit");

  f.scheduler().Send(Launch("worker-2", {kWorkload, "--exit", "0"}));
  exited = f.scheduler().Next(IsExited);
  REQUIRE(exited);
  CHECK(exited->replica_exited().exit_code() == 0);
  CHECK_FALSE(exited->replica_exited().has_checks());

  f.scheduler().Send(Launch("worker-3", {kWorkload, "--sleep", "60"}));
  REQUIRE(f.scheduler().Next(IsStarted));
  f.scheduler().Send(Stop("j-agent/1/worker-3/0"));
  exited = f.scheduler().Next(IsExited);
  REQUIRE(exited);
  CHECK(exited->replica_exited().stopped_by_request());
  CHECK_FALSE(exited->replica_exited().has_checks());
}

TEST_CASE("an exit waiting for its checks holds up no other report", "[agent][checks]") {
  TempDir scripts;
  // Holds the exit checks until the test releases them.
  const std::string program = WriteScript(
      scripts.path() + "/health.sh",
      "touch \"$TRAINCTL_WORK_DIR/checking\"; "
      "while [ ! -e \"$TRAINCTL_WORK_DIR/release\" ]; do sleep 0.01; done; echo released");
  AgentFixture f([&](Agent::Options& o) { o.checks.health_check_program = program; });
  REQUIRE(f.scheduler().Next(IsRegister));
  f.scheduler().Send(Launch("worker-0", {kWorkload, "--exit", "1"}));
  REQUIRE(
      testing::WaitUntil([&] { return access((f.work_dir() + "/checking").c_str(), F_OK) == 0; }));

  f.scheduler().Send(Launch("worker-1", {kWorkload, "--exit", "0"}));
  std::optional<AgentMessage> exited = f.scheduler().Next(IsExited);
  REQUIRE(exited);
  CHECK(exited->replica_exited().run_id() == "j-agent/1/worker-1/0");

  // Meanwhile a new stream lists the held-back exit as a run that no longer runs.
  f.scheduler().DropStream();
  std::optional<AgentMessage> reg = f.scheduler().Next(IsRegister);
  REQUIRE(reg);
  std::map<std::string, bool> runs;
  for (const trainctl::v1::KnownRun& run : reg->register_().runs())
    runs[run.run_id()] = run.running();
  CHECK(runs == std::map<std::string, bool>{{"j-agent/1/worker-0/0", false},
                                            {"j-agent/1/worker-1/0", false}});

  std::ofstream(f.work_dir() + "/release") << "";
  std::optional<AgentMessage> held = f.scheduler().Next(
      [](const AgentMessage& m) { return IsExited(m) && m.replica_exited().has_checks(); });
  REQUIRE(held);
  CHECK(held->replica_exited().run_id() == "j-agent/1/worker-0/0");
  CHECK(held->replica_exited().checks().items(5).message() == "released");
  // Its ReplicaStarted still came first.
  std::optional<uint64_t> started_seq;
  for (const AgentMessage& m : f.scheduler().All()) {
    if (m.has_replica_started() && m.replica_started().run_id() == "j-agent/1/worker-0/0" &&
        m.seq() > reg->seq()) {
      started_seq = m.seq();
    }
  }
  REQUIRE(started_seq);
  CHECK(*started_seq < held->seq());
}

TEST_CASE("periodic checks are reported every interval (R15)", "[agent][checks]") {
  TempDir scripts;
  const std::string program =
      WriteScript(scripts.path() + "/health.sh", "echo 'nvme0 is read-only'; exit 1");
  AgentFixture f([&](Agent::Options& o) {
    o.checks.health_check_interval = absl::Milliseconds(50);
    o.checks.health_check_program = program;
  });
  std::optional<AgentMessage> reg = f.scheduler().Next(IsRegister);
  REQUIRE(reg);
  CHECK(reg->register_().config().at("health-check-interval") == "50ms");
  auto periodic = [](const AgentMessage& m) { return IsCheckReport(m, "periodic"); };
  std::optional<AgentMessage> first = f.scheduler().Next(periodic);
  std::optional<AgentMessage> second = f.scheduler().Next(periodic);
  REQUIRE(first);
  REQUIRE(second);
  const trainctl::v1::CheckRun& run = first->check_report().run();
  CHECK_FALSE(run.passed());
  CHECK(run.job_id().empty());
  REQUIRE(run.items_size() == 6);
  CHECK(run.items(5).item() == "health-program");
  CHECK_FALSE(run.items(5).passed());
  CHECK(run.items(5).measured() == "exit status 1");
  CHECK(run.items(5).message() == "nvme0 is read-only");
  CHECK(TimestampToMs(second->check_report().run().time()) > TimestampToMs(run.time()));
  // Acknowledged like every report.
  f.scheduler().Send(Ack(second->seq()));
}

TEST_CASE("RunChecks asks for a check run now, even with periodic checks off", "[agent][checks]") {
  AgentFixture f;  // Periodic checks off.
  REQUIRE(f.scheduler().Next(IsRegister));
  SchedulerMessage request;
  request.mutable_run_checks();
  f.scheduler().Send(request);
  std::optional<AgentMessage> report =
      f.scheduler().Next([](const AgentMessage& m) { return IsCheckReport(m, "periodic"); });
  REQUIRE(report);
  CHECK(report->check_report().run().passed());
  CHECK(report->check_report().run().items_size() == 5);
  CHECK(f.probe().root_probes == 1);
}

TEST_CASE("a restarted agent adopts the replicas an earlier one left running", "[agent][orphans]") {
  const std::string kept = "j-old/1/worker-0/0";
  const std::string unwanted = "j-old/1/worker-1/0";
  pid_t kept_pid = 0, unwanted_pid = 0;
  std::string release;
  AgentFixture f([&](Agent::Options& o) {
    // What the earlier agent left: two replicas and their records.
    release = o.work_dir + "/release";
    kept_pid = testing::StartOrphan(
        o.work_dir, kept,
        "echo kept; while [ ! -e " + release + " ]; do sleep 0.01; done; echo done; exit 1");
    unwanted_pid = testing::StartOrphan(o.work_dir, unwanted, "echo unwanted; exec sleep 60");
    RunRecordStore store(o.work_dir + "/run-records");
    if (kept_pid > 0) store.Write(testing::RecordOf(kept, kept_pid)).IgnoreError();
    if (unwanted_pid > 0) store.Write(testing::RecordOf(unwanted, unwanted_pid)).IgnoreError();
  });
  REQUIRE(kept_pid > 0);
  REQUIRE(unwanted_pid > 0);
  std::optional<AgentMessage> reg = f.scheduler().Next(IsRegister);
  REQUIRE(reg);
  std::map<std::string, int64_t> running;
  for (const trainctl::v1::KnownRun& run : reg->register_().runs()) {
    CHECK(run.running());
    running[run.run_id()] = run.pid();
  }
  CHECK(running == std::map<std::string, int64_t>{{kept, kept_pid}, {unwanted, unwanted_pid}});

  // The scheduler no longer wants one: it is stopped although it is not the agent's child.
  f.scheduler().Send(Stop(unwanted));
  std::optional<AgentMessage> exited = f.scheduler().Next(IsExited);
  REQUIRE(exited);
  CHECK(exited->replica_exited().run_id() == unwanted);
  CHECK(exited->replica_exited().stopped_by_request());
  CHECK_FALSE(exited->replica_exited().has_checks());
  CHECK(ProcessIsGone(unwanted_pid));

  // It keeps the other, which is reported once it ends, with no status to tell.
  std::ofstream(release) << "";
  exited = f.scheduler().Next(IsExited);
  REQUIRE(exited);
  const trainctl::v1::ReplicaExited& e = exited->replica_exited();
  CHECK(e.run_id() == kept);
  CHECK_FALSE(e.has_exit_code());
  CHECK_FALSE(e.has_signal());
  CHECK_FALSE(e.stopped_by_request());
  CHECK(e.launch_error().empty());
  CHECK(e.output_tail() == "kept\ndone");
  CHECK_FALSE(e.has_checks());
  CHECK(access((f.work_dir() + "/run-records/j-old+1+worker-0+0.run").c_str(), F_OK) != 0);
}

}  // namespace
}  // namespace trainctl::agent
