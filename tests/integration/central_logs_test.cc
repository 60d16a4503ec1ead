// trainctld's copy of the replicas' logs, with real agents shipping real log files: the output of
// a job whose hosts are gone (agents SIGKILLed, work dirs removed) reads whole, in order, from the
// CLI and REST; an agent SIGKILLed and restarted, or stopped for 10 s, while its replica prints
// loses and repeats nothing; `logs -f` follows across the end of a run and across a restart of
// trainctld; a copy that stops short says so; the store's cap evicts the oldest ended job first.
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "tests/integration/http_client.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

// "<tag> 000001\n" .. "<tag> <last>\n", as `seq -f '<tag> %06g' first last` prints them.
std::string Lines(const std::string& tag, int first, int last) {
  std::string out;
  for (int n = first; n <= last; ++n) out += absl::StrFormat("%s %06d\n", tag, n);
  return out;
}

// A shell loop printing lines 1..parts*per of `tag`, `per` at a time with `pause` seconds
// between, then running `then`.
std::string Printer(const std::string& tag, int parts, int per, const std::string& pause,
                    const std::string& then = "true") {
  return absl::StrCat("i=0; while [ $i -lt ", parts, " ]; do seq -f '", tag, " %06g' $((i*", per,
                      "+1)) $((i*", per, "+", per, ")); sleep ", pause, "; i=$((i+1)); done; ",
                      then);
}

std::string OneReplica(const std::string& script) {
  return absl::StrCat(R"(
displayName: printer
workerPools:
- name: main
  replicaCount: 1
  command: [/bin/sh, -c, ")",
                      script, R"("]
  resources: {cpu: 0.1, memoryMb: 64}
)");
}

// ReadLogs of `replica` at `offset`; REQUIREs success.
v1::ReadLogsResponse Read(MiniCluster& c, const std::string& id, const std::string& replica,
                          int64_t offset, int32_t max_bytes = 4 << 20) {
  v1::ReadLogsRequest req;
  req.set_job_id(id);
  req.set_replica(replica);
  req.set_offset(offset);
  req.set_max_bytes(max_bytes);
  grpc::ClientContext ctx;
  v1::ReadLogsResponse resp;
  const grpc::Status s = c.jobs().ReadLogs(&ctx, req, &resp);
  INFO(s.error_message());
  REQUIRE(s.ok());
  return resp;
}

// Waits until trainctld's copy of the replica's log is complete at `size` bytes.
void WaitForCopy(MiniCluster& c, const std::string& id, const std::string& replica, int64_t size) {
  v1::ReadLogsResponse last;
  const bool done = Eventually(
      [&] {
        last = Read(c, id, replica, size, 1);
        return last.central() && last.complete();
      },
      std::chrono::seconds(30));
  INFO(last.DebugString());
  REQUIRE(done);
}

// Stops agent i for good: SIGKILL, then its work dir is removed, as a host that is gone.
void LoseHost(MiniCluster& c, int i) {
  c.KillAgent(i, SIGKILL);
  std::error_code ec;
  std::filesystem::remove_all(c.AgentWorkDir(i), ec);
  REQUIRE(!ec);
}

// The whole log through the CLI.
std::string CliLog(MiniCluster& c, const std::string& id, const std::string& replica) {
  CliResult r = c.Cli({"logs", id, "--replica", replica});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return r.out;
}

// The whole log through REST (follow=true streams it to the end).
std::string RestLog(MiniCluster& c, const std::string& id, const std::string& replica) {
  auto http = Http(c);
  httplib::Result r =
      http->Get(absl::StrCat("/v1/jobs/", id, "/replicas/", replica, "/logs?follow=true"));
  REQUIRE(r);
  INFO(r->body.substr(0, 200));
  REQUIRE(r->status == 200);
  return r->body;
}

TEST_CASE("a job's logs read whole from trainctld after both its hosts are gone", "[integration]") {
  ClusterOptions o;
  o.agents = 2;
  MiniCluster c(o);
  // One replica per node (3 of 4 CPUs each); the primary waits for the worker's last line.
  const std::string id = c.Submit(c.Spec(absl::StrCat(R"(
displayName: two-hosts
workerPools:
- name: chief
  replicaCount: 1
  command: [/bin/sh, -c, "seq -f 'chief %06g' 1 10000; while [ ! -e DIR/worker-done ]; do sleep 0.1; done"]
  resources: {cpu: 3, memoryMb: 64}
- name: worker
  replicaCount: 1
  command: [/bin/sh, -c, "seq -f 'worker %06g' 1 10000; touch DIR/worker-done"]
  resources: {cpu: 3, memoryMb: 64}
)")));
  v1::Job job = c.WaitForEnd(id);
  REQUIRE(job.state() == v1::JOB_STATE_SUCCEEDED);
  REQUIRE(job.replicas_size() == 2);
  REQUIRE(job.replicas(0).node() != job.replicas(1).node());
  const std::string chief = Lines("chief", 1, 10000);
  const std::string worker = Lines("worker", 1, 10000);
  WaitForCopy(c, id, "chief-0", static_cast<int64_t>(chief.size()));
  WaitForCopy(c, id, "worker-0", static_cast<int64_t>(worker.size()));
  LoseHost(c, 0);
  LoseHost(c, 1);

  CHECK(CliLog(c, id, "chief-0") == chief);
  CHECK(CliLog(c, id, "worker-0") == worker);
  CHECK(RestLog(c, id, "chief-0") == chief);
  CHECK(RestLog(c, id, "worker-0") == worker);
  // --tail and --since read the copy too.
  CliResult tail = c.Cli({"logs", id, "--replica", "worker-0", "--tail", "3"});
  CHECK(tail.out == Lines("worker", 9998, 10000));
  CliResult since = c.Cli({"logs", id, "--replica", "worker-0", "--since", "1h"});
  CHECK(since.out == worker);
}

TEST_CASE("an agent SIGKILLed and restarted while its replica prints loses and repeats nothing",
          "[integration]") {
  ClusterOptions o;
  o.agents = 1;
  MiniCluster c(o);
  // 20,000 lines over about 4 s.
  const std::string id = c.Submit(OneReplica(Printer("x", 40, 500, "0.1")));
  c.WaitForState(id, v1::JOB_STATE_RUNNING);
  const std::string want = Lines("x", 1, 20000);
  // Some of it shipped, then the agent dies mid-stream.
  REQUIRE(Eventually([&] { return Read(c, id, "main-0", 0, 1).central(); }));
  c.KillAgent(0, SIGKILL);
  c.StartAgents();
  REQUIRE(c.WaitForEnd(id).state() == v1::JOB_STATE_SUCCEEDED);
  WaitForCopy(c, id, "main-0", static_cast<int64_t>(want.size()));
  LoseHost(c, 0);
  CHECK(CliLog(c, id, "main-0") == want);
}

TEST_CASE("an agent stopped for 10 s while its replica prints loses nothing", "[integration]") {
  ClusterOptions o;
  o.agents = 1;
  o.daemon_args = {"--node-lost-timeout", "60s"};
  MiniCluster c(o);
  // 28,000 lines over about 14 s.
  const std::string id = c.Submit(OneReplica(Printer("y", 140, 200, "0.1")));
  c.WaitForState(id, v1::JOB_STATE_RUNNING);
  REQUIRE(Eventually([&] { return Read(c, id, "main-0", 0, 1).central(); }));
  c.agent(0).Signal(SIGSTOP);
  std::this_thread::sleep_for(std::chrono::seconds(10));  // the disconnection under test
  c.agent(0).Signal(SIGCONT);
  REQUIRE(c.WaitForEnd(id, std::chrono::seconds(90)).state() == v1::JOB_STATE_SUCCEEDED);
  const std::string want = Lines("y", 1, 28000);
  WaitForCopy(c, id, "main-0", static_cast<int64_t>(want.size()));
  LoseHost(c, 0);
  CHECK(CliLog(c, id, "main-0") == want);
}

TEST_CASE("logs -f follows across the end of a run and a restart of trainctld", "[integration]") {
  ClusterOptions o;
  o.agents = 1;
  MiniCluster c(o);
  // 12,000 lines over about 6 s.
  const std::string id = c.Submit(OneReplica(Printer("z", 60, 200, "0.1")));
  c.WaitForState(id, v1::JOB_STATE_RUNNING);
  Process follow({BinDir() + "/trainctl", "--server", c.address(), "logs", "-f", id},
                 c.dir() + "/follow.out");
  REQUIRE(Eventually([&] {
    std::error_code ec;  // the follower makes the file
    const auto size = std::filesystem::file_size(follow.log_path(), ec);
    return !ec && size > 0;
  }));
  c.KillDaemon(SIGKILL);
  c.StartDaemon();
  REQUIRE(c.WaitForEnd(id).state() == v1::JOB_STATE_SUCCEEDED);
  const int status = follow.Wait(std::chrono::seconds(60));
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  const std::string out = ReadTextFile(follow.log_path());
  // stderr shares the file: the retry notes are lines of their own, the log's lines all there.
  std::string lines;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    if (!absl::StartsWith(line, "trainctl:")) absl::StrAppend(&lines, line, "\n");
  }
  CHECK(lines == Lines("z", 1, 12000));
}

TEST_CASE("a copy that stops short says what is missing", "[integration]") {
  ClusterOptions o;
  o.agents = 1;
  // The agent ships nothing: the copy is empty while the log grows.
  o.agent.extra_args = {"--no-log-shipping"};
  MiniCluster c(o);
  const std::string id = c.Submit(OneReplica("seq 1 1000; sleep 600"));
  c.WaitForState(id, v1::JOB_STATE_RUNNING);
  REQUIRE(Eventually([&] { return !Read(c, id, "main-0", 0).data().empty(); }));
  c.KillAgent(0, SIGKILL);
  // No longer connected: the copy (none) is what there is, and the answer says so.
  v1::ReadLogsResponse resp;
  REQUIRE(Eventually([&] {
    resp = Read(c, id, "main-0", 0);
    return resp.central();
  }));
  CHECK(resp.data().empty());
  CHECK(!resp.complete());
  CHECK(Contains(resp.incomplete(), "none of its log reached trainctld"));
  CliResult r = c.Cli({"logs", id});
  CHECK(r.exit_code == 0);
  CHECK(Contains(r.err, "the log shown is not complete"));
  c.StartAgents();
  c.Cli({"cancel", id});
}

TEST_CASE("the log store's cap evicts the logs of the job that ended first", "[integration]") {
  ClusterOptions o;
  o.agents = 1;
  // 0.0003 GB: about 322 KB; each job below logs 115 KB (5000 lines of 23 bytes).
  o.daemon_args = {"--log-store-max-gb", "0.0003"};
  MiniCluster c(o);
  std::vector<std::string> ids;
  for (const char* tag : {"a", "b", "c"}) {
    const std::string id = c.Submit(OneReplica(absl::StrCat("seq -f '", tag, " %020g' 1 5000")));
    REQUIRE(c.WaitForEnd(id).state() == v1::JOB_STATE_SUCCEEDED);
    ids.push_back(id);
    // Each ends before the next starts: the copies' ages are the jobs' order.
    REQUIRE(Eventually([&] {
      v1::ReadLogsResponse r = Read(c, id, "main-0", 5000 * 23, 1);
      return r.central() && r.complete();
    }));
  }
  // The first job's logs went, with an event; the last one's stay.
  REQUIRE(Eventually([&] { return !c.ListEvents(ids[0], "", "LogsEvicted").empty(); },
                     std::chrono::seconds(60)));
  CHECK(c.ListEvents(ids[2], "", "LogsEvicted").empty());
  CHECK(Read(c, ids[2], "main-0", 0, 32).central());
}

}  // namespace
}  // namespace trainctl::testing
