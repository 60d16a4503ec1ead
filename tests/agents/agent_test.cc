// Agent against an in-process fake scheduler: registration, reports, acks, reconnects.
#include "agents/agent.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/agents/agent_fixture.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::Ack;
using ::trainctl::agent::testing::AgentFixture;
using ::trainctl::agent::testing::IsExited;
using ::trainctl::agent::testing::IsRegister;
using ::trainctl::agent::testing::IsStarted;
using ::trainctl::agent::testing::kWorkload;
using ::trainctl::agent::testing::Launch;
using ::trainctl::agent::testing::WaitUntil;
using ::trainctl::v1::AgentMessage;
using ::trainctl::v1::SchedulerMessage;

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

  // Seqs start at 1 and increase in the order the scheduler saw them. A message written as a
  // stream drops (a heartbeat, say) may never be read: its seq is a gap, which is harmless,
  // since a seq only names a report to ack.
  std::vector<uint64_t> seqs = f.scheduler().Seqs();
  REQUIRE_FALSE(seqs.empty());
  CHECK(seqs[0] == 1);
  for (size_t i = 1; i < seqs.size(); ++i) CHECK(seqs[i] > seqs[i - 1]);
}

TEST_CASE("replicas inherit none of the agent's environment but PATH, LANG and HOME", "[agent]") {
  setenv("AWS_SECRET_ACCESS_KEY", "the-agent's-own", 1);
  AgentFixture f;
  unsetenv("AWS_SECRET_ACCESS_KEY");
  REQUIRE(f.scheduler().Next(IsRegister));
  f.scheduler().Send(
      Launch("worker-0",
             {"sh", "-c", "echo \"secret=${AWS_SECRET_ACCESS_KEY:-none} path=${PATH:+set}\""}));
  REQUIRE(f.scheduler().Next(IsExited));
  SchedulerMessage read;
  read.mutable_read_log()->set_run_id("j-agent/1/worker-0/0");
  f.scheduler().Send(read);
  std::optional<AgentMessage> log =
      f.scheduler().Next([](const AgentMessage& m) { return m.has_log_data(); });
  REQUIRE(log);
  CHECK(log->log_data().data() == "secret=none path=set\n");
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

TEST_CASE("a notice reaches the replica once, also after the agent restarts", "[agent]") {
  AgentFixture f;
  REQUIRE(f.scheduler().Next(IsRegister));
  // On SIGUSR1: counts, prints the notice, and says in its progress file that it checkpointed.
  const std::string script =
      "n=0; trap 'n=$((n+1)); echo \"usr1 $n\"; cat \"$TRAINCTL_PREEMPTION_NOTICE\"; "
      "echo \"{\\\"step\\\": 7, \\\"checkpoint\\\": true}\" > \"$TRAINCTL_PROGRESS_FILE\"' USR1; "
      "trap 'echo \"term after $n\"; exit 0' TERM; while :; do sleep 0.01; done";
  f.scheduler().Send(Launch("worker-0", {"sh", "-c", script}));
  std::optional<AgentMessage> started = f.scheduler().Next(IsStarted);
  REQUIRE(started);
  f.scheduler().Send(Ack(started->seq()));
  const std::string run = "j-agent/1/worker-0/0";
  const std::string log = f.work_dir() + "/logs/j-agent/attempt-1/worker-0.restart-0.log";

  SchedulerMessage notice;
  notice.mutable_notice()->set_run_id(run);
  notice.mutable_notice()->set_kind("preemption");
  notice.mutable_notice()->set_preempting_job("j-big");
  notice.mutable_notice()->set_deadline_ms(1'796'403'600'000);
  notice.mutable_notice()->set_signal(SIGUSR1);
  f.scheduler().Send(notice);
  REQUIRE(WaitUntil([&] {
    return testing::ReadFile(log).find("\"preemptingJob\":\"j-big\"") != std::string::npos;
  }));
  CHECK(testing::ReadFile(log).find("usr1 1\n{\"kind\":\"preemption\"") != std::string::npos);
  std::optional<AgentMessage> checkpoint = f.scheduler().Next([](const AgentMessage& m) {
    return m.has_replica_progress() && m.replica_progress().checkpoint();
  });
  REQUIRE(checkpoint);
  CHECK(checkpoint->replica_progress().run_id() == run);
  CHECK(checkpoint->replica_progress().step() == 7);

  // A new agent adopts the replica; the scheduler sends the same notice again, then stops it.
  f.Restart();
  REQUIRE(f.scheduler().Next(IsRegister));
  f.scheduler().Send(notice);
  f.scheduler().Send(notice);
  SchedulerMessage stop;
  stop.mutable_stop()->set_run_id(run);
  stop.mutable_stop()->set_grace_period_ms(10'000);
  f.scheduler().Send(stop);
  std::optional<AgentMessage> exited = f.scheduler().Next(IsExited);
  REQUIRE(exited);
  CHECK(exited->replica_exited().exit_code() == 0);
  CHECK(exited->replica_exited().output_tail().find("term after 1") != std::string::npos);

  // A notice for a run this agent does not know is ignored.
  SchedulerMessage unknown = notice;
  unknown.mutable_notice()->set_run_id("j-agent/1/nobody/0");
  f.scheduler().Send(unknown);
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

TEST_CASE("replicas outlive the agent, and the next agent reports their exits", "[agent]") {
  AgentFixture f;
  REQUIRE(f.scheduler().Next(IsRegister));
  const std::string release = f.work_dir() + "/release";
  f.scheduler().Send(
      Launch("worker-0",
             {"/bin/sh", "-c", "while [ ! -e " + release + " ]; do sleep 0.01; done; exit 3"}));
  f.scheduler().Send(Launch("worker-1", {"/bin/sh", "-c", "exit 4"}));
  // worker-0's start and worker-1's exit come in either order: look for both in one pass (Next
  // passes over what it does not match).
  int64_t pid = 0;
  std::optional<AgentMessage> first_exit;
  REQUIRE(f.scheduler().Next([&](const AgentMessage& m) {
    if (IsStarted(m) && m.replica_started().run_id() == "j-agent/1/worker-0/0") {
      pid = m.replica_started().pid();
    }
    if (IsExited(m)) first_exit = m;
    return pid > 0 && first_exit.has_value();
  }));
  // worker-1's exit is reported, never acknowledged, and the agent goes away.
  CHECK(first_exit->replica_exited().exit_code() == 4);
  f.Restart();

  std::optional<AgentMessage> reg = f.scheduler().Next(IsRegister);
  REQUIRE(reg);
  std::map<std::string, std::pair<bool, int64_t>> runs;
  for (const trainctl::v1::KnownRun& run : reg->register_().runs()) {
    runs[run.run_id()] = {run.running(), run.pid()};
  }
  // worker-0 still runs with its pid; worker-1's exit comes again from the journal.
  CHECK(runs["j-agent/1/worker-0/0"] == std::make_pair(true, pid));
  CHECK(runs["j-agent/1/worker-1/0"].first == false);
  std::optional<AgentMessage> again = f.scheduler().Next(IsExited);
  REQUIRE(again);
  CHECK(again->replica_exited().run_id() == "j-agent/1/worker-1/0");
  CHECK(again->replica_exited().exit_code() == 4);
  f.scheduler().Send(Ack(again->seq()));

  std::ofstream(release) << "";
  std::optional<AgentMessage> exited = f.scheduler().Next(IsExited);
  REQUIRE(exited);
  CHECK(exited->replica_exited().run_id() == "j-agent/1/worker-0/0");
  CHECK(exited->replica_exited().exit_code() == 3);
}

TEST_CASE("the exit report delay hook holds back the exits of one status", "[agent]") {
  AgentFixture f([](Agent::Options& o) {
    o.delay_exit_status = 134;
    o.exit_report_delay = absl::Seconds(2);
  });
  REQUIRE(f.scheduler().Next(IsRegister));
  const absl::Time launched = absl::Now();
  // worker-0 aborts at once (SIGABRT: status 128+6); worker-1 exits 1 a little later.
  f.scheduler().Send(Launch("worker-0", {kWorkload, "--signal", "ABRT"}));
  f.scheduler().Send(Launch("worker-1", {kWorkload, "--sleep", "0.2", "--exit", "1"}));
  std::optional<AgentMessage> first = f.scheduler().Next(IsExited);
  REQUIRE(first);
  CHECK(first->replica_exited().run_id() == "j-agent/1/worker-1/0");

  // While held, the exit is known: a new stream lists the run as ended.
  f.scheduler().DropStream();
  std::optional<AgentMessage> reg = f.scheduler().Next(IsRegister);
  REQUIRE(reg);
  REQUIRE(reg->register_().runs_size() == 2);
  CHECK(reg->register_().runs(0).run_id() == "j-agent/1/worker-0/0");
  CHECK_FALSE(reg->register_().runs(0).running());

  std::optional<AgentMessage> held = f.scheduler().Next([](const AgentMessage& m) {
    return IsExited(m) && m.replica_exited().run_id() == "j-agent/1/worker-0/0";
  });
  REQUIRE(held);
  CHECK(absl::Now() - launched >= absl::Seconds(2));
  CHECK(held->replica_exited().signal() == SIGABRT);
  CHECK(held->replica_exited().checks().phase() == "exit");  // then checked like any crash
}

TEST_CASE("deleted jobs' logs leave the node: named at once, past the retention at registration",
          "[agent]") {
  AgentFixture f;
  REQUIRE(f.scheduler().Next(IsRegister));
  const std::string logs = f.work_dir() + "/logs/";
  auto write_log = [&](const std::string& job, absl::Time when) {
    const std::string dir = logs + job + "/attempt-1";
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/w.restart-0.log") << "out\n";
    const struct timespec at = absl::ToTimespec(when);
    const struct timespec times[2] = {at, at};
    for (const std::string& path : {dir + "/w.restart-0.log", dir, logs + job}) {
      REQUIRE(utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
    }
  };
  write_log("j-deleted", absl::Now());
  write_log("j-old", absl::Now() - absl::Hours(24 * 10));
  write_log("j-recent", absl::Now() - absl::Hours(24));
  f.scheduler().Send(Launch("worker-0", {kWorkload, "--sleep", "60"}));  // job j-agent
  REQUIRE(f.scheduler().Next(IsStarted));

  // Named: gone, unless a run of the job still runs here.
  SchedulerMessage forget;
  forget.mutable_forget_jobs()->add_job_ids("j-deleted");
  forget.mutable_forget_jobs()->add_job_ids("j-agent");
  f.scheduler().Send(forget);
  CHECK(WaitUntil([&] { return !std::filesystem::exists(logs + "j-deleted"); }));
  CHECK(std::filesystem::exists(logs + "j-agent"));
  // A registration with a retention of 5 days: the logs last written before it go.
  SchedulerMessage ack;
  ack.mutable_register_ack()->set_job_retention_ms(5 * 86'400'000LL);
  f.scheduler().Send(ack);
  CHECK(WaitUntil([&] { return !std::filesystem::exists(logs + "j-old"); }));
  CHECK(std::filesystem::exists(logs + "j-recent"));
  CHECK(std::filesystem::exists(logs + "j-agent"));
}

}  // namespace
}  // namespace trainctl::agent
