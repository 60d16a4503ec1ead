// Replica logs on the node with real processes: a log past the agent's --max-log-mb keeps its
// head and tail, and `trainctl logs` (with and without -f) shows one marker line for the dropped
// middle; deleting a job, by `trainctl delete` or --job-retention, removes its logs from the
// agent's work dir.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

// The agent's --max-log-mb in these tests: 64 KiB.
constexpr int64_t kLimit = 64 * 1024;
constexpr int kLineBytes = 64;

// A command printing lines "<tag> 000001 xxx...\n" .. "<tag> <last>", each kLineBytes long.
std::string Seq(const std::string& tag, int last) {
  return absl::StrCat("seq -f '", tag, " %06g ", std::string(kLineBytes - 10, 'x'), "' 1 ", last);
}

std::string Line(const std::string& tag, int n) {
  return absl::StrCat(tag, absl::StrFormat(" %06d ", n), std::string(kLineBytes - 10, 'x'), "\n");
}

std::string Marker(int64_t bytes) {
  return absl::StrCat("[trainctl: ", bytes,
                      " bytes dropped: the log passed --max-log-mb 0.0625]\n");
}

std::string ShellJob(const std::string& script) {
  return absl::StrCat(R"(
displayName: chatty
workerPools:
- name: main
  replicaCount: 1
  command: [/bin/sh, -c, ")",
                      script, R"("]
  resources: {cpu: 0.1, memoryMb: 64}
)");
}

// One agent, capping replica logs at kLimit.
ClusterOptions CappedLogs() {
  ClusterOptions o;
  o.agents = 1;
  o.agent.extra_args = {"--max-log-mb", "0.0625"};
  return o;
}

// The one log file of the job's only run on agent 0.
std::string RunLog(MiniCluster& c, const std::string& id) {
  const std::string dir = c.AgentWorkDir(0) + "/logs/" + id;
  std::vector<std::string> logs;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().extension() == ".log") logs.push_back(it->path().string());
  }
  REQUIRE(logs.size() == 1);
  return logs[0];
}

TEST_CASE("a replica log past --max-log-mb keeps its head and tail, with one marker between",
          "[integration]") {
  MiniCluster c(CappedLogs());
  constexpr int kLines = 4000;  // 256000 bytes
  const std::string id = c.Submit(ShellJob(Seq("a", kLines)));
  REQUIRE(c.WaitForEnd(id).state() == v1::JOB_STATE_SUCCEEDED);

  // The head is half the limit, the tail 3/8 of it (agents/shim/log_cap.h), cut at line ends.
  const int64_t size = int64_t{kLines} * kLineBytes;
  const int64_t head = kLimit / 2;
  const int64_t tail = kLimit / 2 - kLimit / 8;
  std::string want;
  for (int n = 1; n <= head / kLineBytes; ++n) want += Line("a", n);
  want += Marker(size - head - tail);
  for (int n = static_cast<int>((size - tail) / kLineBytes) + 1; n <= kLines; ++n) {
    want += Line("a", n);
  }
  CliResult logs = c.Cli({"logs", id});
  INFO(logs.err);
  REQUIRE(logs.exit_code == 0);
  CHECK(logs.out == want);

  // On disk the file keeps its size (offsets are absolute) and holds about the limit.
  struct stat st;
  const std::string path = RunLog(c, id);
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK(st.st_size == size);
  CHECK(st.st_blocks * 512 <= kLimit + 8192);
}

TEST_CASE("trainctl logs -f follows a capped log across its dropped middle to the end",
          "[integration]") {
  MiniCluster c(CappedLogs());
  // Each part is twice the limit; the shim caps the log while the replica sleeps and after the
  // end, the follower reads meanwhile.
  const std::string id =
      c.Submit(ShellJob(absl::StrCat(Seq("a", 2000), "; sleep 2; ", Seq("b", 2000))));
  c.WaitForState(id, v1::JOB_STATE_RUNNING);
  CliResult logs = c.Cli({"logs", "-f", id});
  INFO(logs.err);
  REQUIRE(logs.exit_code == 0);
  CHECK(logs.out.rfind(Line("a", 1), 0) == 0);
  CHECK(logs.out.size() >= kLineBytes);
  CHECK(logs.out.substr(logs.out.size() - kLineBytes) == Line("b", 2000));
  // Every line is whole and in order, but for lines cut short by a marker (the follower had read
  // part of a line that was dropped then); lines are missing only right after a marker.
  const std::regex marker(
      R"(\[trainctl: \d+ bytes dropped: the log passed --max-log-mb 0\.0625\])");
  const std::vector<absl::string_view> pieces = absl::StrSplit(logs.out, '\n', absl::SkipEmpty());
  std::string expected_next = Line("a", 1);
  bool after_marker = false;
  int markers = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string piece(pieces[i]);
    if (std::regex_match(piece, marker)) {
      ++markers;
      after_marker = true;
      continue;
    }
    INFO(piece);
    const bool cut = i + 1 < pieces.size() && std::regex_match(std::string(pieces[i + 1]), marker);
    if (cut && piece.size() + 1 < kLineBytes) {
      CHECK(expected_next.rfind(piece, 0) == 0);
      continue;
    }
    const std::string line = piece + "\n";
    REQUIRE(line.size() == kLineBytes);
    if (!after_marker) CHECK(line == expected_next);
    const char tag = line[0];
    const int n = std::stoi(line.substr(2, 6));
    expected_next = n == 2000 && tag == 'a' ? Line("b", 1) : Line(std::string(1, tag), n + 1);
    after_marker = false;
  }
  CHECK(markers <= 2);
}

TEST_CASE("a job's logs leave the agent when the job is deleted or retention deletes it",
          "[integration]") {
  ClusterOptions o;
  o.agents = 1;
  o.daemon_args = {"--job-retention", "6s"};
  MiniCluster c(o);
  const std::string deleted = c.Submit(ShellJob("echo deleted"));
  const std::string expired = c.Submit(ShellJob("echo expired"));
  c.WaitForEnd(deleted);
  c.WaitForEnd(expired);
  const std::string logs = c.AgentWorkDir(0) + "/logs/";
  REQUIRE(std::filesystem::exists(logs + deleted));
  REQUIRE(std::filesystem::exists(logs + expired));
  CliResult del = c.Cli({"delete", deleted});
  INFO(del.err);
  REQUIRE(del.exit_code == 0);
  CHECK(Eventually([&] { return !std::filesystem::exists(logs + deleted); }));
  // The other job's logs stay until retention deletes it, 6 s after it ended.
  CHECK(std::filesystem::exists(logs + expired));
  CHECK(Eventually([&] { return !std::filesystem::exists(logs + expired); },
                   std::chrono::seconds(30)));
  CHECK(Contains(c.AgentLog(0), absl::StrCat("job ", deleted, ": removed its logs")));
}

}  // namespace
}  // namespace trainctl::testing
