// Agent's host health against an in-process fake scheduler: the startup script before
// Register, preflight before launches, exit checks, periodic checks and RunChecks (R14, R15,
// R20), and the replicas an earlier agent left running.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agents/agent.h"
#include "agents/container_runtime.h"
#include "agents/launcher.h"
#include "agents/proc_stats.h"
#include "agents/run_records.h"
#include "common/time_util.h"
#include "tests/agents/agent_fixture.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::Ack;
using ::trainctl::agent::testing::AgentFixture;
using ::trainctl::agent::testing::FakeScheduler;
using ::trainctl::agent::testing::IsCheckReport;
using ::trainctl::agent::testing::IsExited;
using ::trainctl::agent::testing::IsRegister;
using ::trainctl::agent::testing::IsStarted;
using ::trainctl::agent::testing::kWorkload;
using ::trainctl::agent::testing::Launch;
using ::trainctl::agent::testing::Stop;
using ::trainctl::agent::testing::TempDir;
using ::trainctl::agent::testing::WriteScript;
using ::trainctl::v1::AgentMessage;
using ::trainctl::v1::SchedulerMessage;

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

TEST_CASE("with preflight off (--preflight=false) a launch runs no checks", "[agent][checks]") {
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

TEST_CASE("an agent that runs images checks its container runtime", "[agent][checks]") {
  // What the agent needs to run images, but for a runc that does not work.
  ContainerSettings settings;
  settings.runc = "/bin/false";
  if (const absl::Status usable = CheckImageSupport(settings, ImageCache::Options());
      !usable.ok()) {
    WARN("images: " << usable.message() << "; skipped");
    return;
  }
  AgentFixture f([](Agent::Options& o) {
    o.images.disabled = false;
    o.images.runc = "/bin/false";
  });
  std::optional<AgentMessage> reg = f.scheduler().Next(IsRegister);
  REQUIRE(reg);
  CHECK(reg->register_().labels().at("trainctl.io/images") == "true");
  CHECK(reg->register_().config().at("container-runtime") ==
        absl::StrCat("runc /bin/false, image dir ", f.work_dir(), "/images, timeout 5s"));
  SchedulerMessage request;
  request.mutable_run_checks();
  f.scheduler().Send(request);
  std::optional<AgentMessage> report =
      f.scheduler().Next([](const AgentMessage& m) { return IsCheckReport(m, "periodic"); });
  REQUIRE(report);
  const trainctl::v1::CheckRun& run = report->check_report().run();
  CHECK_FALSE(run.passed());
  REQUIRE(run.items_size() == 6);
  CHECK(run.items(5).item() == "container-runtime");
  CHECK(absl::StrContains(run.items(5).message(), "`/bin/false --version` failed"));
}

TEST_CASE("a restarted agent adopts the replicas an earlier one left running", "[agent][orphans]") {
  const std::string kept = "j-old/1/worker-0/0";
  const std::string unwanted = "j-old/1/worker-1/0";
  std::map<std::string, int64_t> started;
  std::string release;
  AgentFixture f([&](Agent::Options& o) {
    // What the earlier agent left: two replicas, each with its shim and run directory.
    release = o.work_dir + "/release";
    absl::Mutex mu;
    ProcessLauncher::Options lo;
    lo.work_dir = o.work_dir;
    lo.run_as = o.run_as;
    lo.on_started = [&](trainctl::v1::ReplicaStarted s) {
      absl::MutexLock lock(&mu);
      started[s.run_id()] = s.pid();
    };
    ProcessLauncher earlier(lo);
    auto launch = [&](const std::string& run_id, const std::string& script) {
      trainctl::v1::LaunchReplica l;
      l.set_job_id("j-old");
      l.set_attempt(1);
      l.set_replica_name(run_id.substr(8, 8));
      l.set_run_id(run_id);
      for (const std::string& arg : {std::string("/bin/sh"), std::string("-c"), script}) {
        l.add_argv(arg);
      }
      earlier.Launch(l);
    };
    launch(kept,
           "echo kept; while [ ! -e " + release + " ]; do sleep 0.01; done; echo done; exit 1");
    launch(unwanted, "echo unwanted; exec sleep 60");
    absl::MutexLock lock(&mu);
    auto both = [&]() { return started.size() == 2; };
    mu.AwaitWithTimeout(absl::Condition(&both), absl::Seconds(10));
  });  // `earlier` is gone: its shims run on.
  REQUIRE(started.size() == 2);
  std::optional<AgentMessage> reg = f.scheduler().Next(IsRegister);
  REQUIRE(reg);
  std::map<std::string, int64_t> running;
  for (const trainctl::v1::KnownRun& run : reg->register_().runs()) {
    CHECK(run.running());
    running[run.run_id()] = run.pid();
  }
  CHECK(running == started);

  // The scheduler no longer wants one: it is stopped although the agent did not start it.
  f.scheduler().Send(Stop(unwanted));
  std::optional<AgentMessage> exited = f.scheduler().Next(IsExited);
  REQUIRE(exited);
  CHECK(exited->replica_exited().run_id() == unwanted);
  CHECK(exited->replica_exited().stopped_by_request());
  CHECK(testing::WaitUntil([&] { return ProcessIsGone(static_cast<pid_t>(started[unwanted])); }));

  // It keeps the other, which is reported with its exit code once it ends.
  std::ofstream(release) << "";
  exited = f.scheduler().Next(IsExited);
  REQUIRE(exited);
  const trainctl::v1::ReplicaExited& e = exited->replica_exited();
  CHECK(e.run_id() == kept);
  CHECK(e.exit_code() == 1);
  CHECK_FALSE(e.stopped_by_request());
  CHECK(e.launch_error().empty());
  CHECK(e.output_tail() == "kept\ndone");
  // Its end is journaled now, so its run directory is gone.
  CHECK(access((f.work_dir() + "/runs/j-old+1+worker-0+0").c_str(), F_OK) != 0);
}

}  // namespace
}  // namespace trainctl::agent
