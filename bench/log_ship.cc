// Benchmark: what keeping a copy of the replicas' logs in trainctld costs. Two local agents, one
// replica on each (a job of two pools), each `workload --flood MIB`: as many 128-byte lines as it
// can write, straight into its log file as a replica does (the line starts with the wall-clock
// time of its write). Rows:
//   off   agents run with --no-log-shipping: the logs stay on the nodes;
//   on    agents ship (the default).
// Figures per row:
//   - write MB/s: each replica's own throughput (bytes / time of its writes), the mean of the two;
//   - agents ms/MB, trainctld ms/MB: CPU time (user + system, /proc/PID/stat) the two agents
//     together and trainctld spent from the submit until the copy was complete (row on) or the
//     job ended (row off), per MB the replicas wrote;
//   - stored/logged: bytes trainctld's copy takes on disk (DATA_DIR/logs) per byte logged;
//   - lag p50 / p99: from a line's write to its presence in the copy, in ms, at a pace the copy
//     keeps up with (each replica writes 1 MiB every 0.1 s, up to 100 MiB), sampled by following
//     the copy with ReadLogs (reads of trainctld's copy only; each answer's last whole line is one
//     sample: the time the answer came minus the line's stamp). The follower reads everything
//     back, so its round is apart from the CPU round. (At full speed the copy trails by what the
//     replicas wrote faster than the agents ship: the backlog, not the lag, is what grows.)
//
//   build/bin/bench_log_ship                 # 256 MiB per replica
//   build/bin/bench_log_ship --mib 1024      # or TRAINCTL_BENCH_MIB=1024
//
// A benchmark, not a test: it asserts only that the jobs succeed and the copies complete.
#define CATCH_CONFIG_RUNNER
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/time_util.h"
#include "tests/integration/mini_cluster.h"

namespace trainctl::testing {
namespace {

// --mib; 0: $TRAINCTL_BENCH_MIB, else 256.
int g_mib_flag = 0;

int Mib() {
  if (g_mib_flag > 0) return g_mib_flag;
  const char* env = getenv("TRAINCTL_BENCH_MIB");
  return env != nullptr ? std::max(1, atoi(env)) : 256;
}

// utime + stime of `pid`, in seconds.
double CpuSeconds(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command, which is in parentheses and may hold spaces.
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::vector<std::string> fields = absl::StrSplit(text.substr(close + 2), ' ');
  // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the command.
  if (fields.size() < 13) return 0;
  return (std::stod(fields[11]) + std::stod(fields[12])) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Bytes the files under `dir` take on disk.
int64_t DiskBytes(const std::string& dir) {
  int64_t total = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) total += static_cast<int64_t>(it->file_size(ec));
  }
  return total;
}

// With `paced`, each replica writes its MiB one at a time, 0.1 s apart (about 10 MB/s): the lag a
// copy keeps up with; else all at once, as fast as it can.
std::string FloodJob(MiniCluster& c, int mib, const std::string& tag, bool paced) {
  auto pool = [&](const std::string& name, const std::string& then) {
    const std::string result = absl::StrCat("DIR/", tag, "-", name, ".result");
    const std::string write =
        paced ? absl::StrCat("i=0; while [ $i -lt ", mib, " ]; do WORKLOAD --flood 1 ", result,
                             ".part; sleep 0.1; i=$((i+1)); done; mv ", result, ".part ", result)
              : absl::StrCat("WORKLOAD --flood ", mib, " ", result);
    return absl::StrCat("- name: ", name, R"(
  replicaCount: 1
  command: [/bin/sh, -c, ")",
                        write, then, R"("]
  resources: {cpu: 3, memoryMb: 256}
)");
  };
  // The primary waits for the worker, so that both write their whole share.
  return c.Spec(absl::StrCat("displayName: flood\nworkerPools:\n",
                             pool("chief", absl::StrCat("; while [ ! -e DIR/", tag,
                                                        "-worker.result ]; do sleep 0.05; done")),
                             pool("worker", "")));
}

// "BYTES NANOSECONDS" from a --flood result file, as MB/s.
double WriteMbps(const std::string& path) {
  std::ifstream in(path);
  double bytes = 0, ns = 0;
  in >> bytes >> ns;
  return ns > 0 ? bytes / 1e6 / (ns / 1e9) : 0;
}

v1::ReadLogsResponse ReadAt(MiniCluster& c, const std::string& id, const std::string& replica,
                            int64_t offset, int32_t max_bytes) {
  v1::ReadLogsRequest req;
  req.set_job_id(id);
  req.set_replica(replica);
  req.set_offset(offset);
  req.set_max_bytes(max_bytes);
  grpc::ClientContext ctx;
  v1::ReadLogsResponse resp;
  if (!c.jobs().ReadLogs(&ctx, req, &resp).ok()) return {};
  return resp;
}

bool CopyComplete(MiniCluster& c, const std::string& id, const std::string& replica, int64_t size) {
  v1::ReadLogsResponse r = ReadAt(c, id, replica, size, 1);
  return r.central() && r.complete();
}

double Pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

struct Row {
  double write_mbps = 0;
  double agent_ms_per_mb = 0;
  double daemon_ms_per_mb = 0;
  double stored_ratio = 0;
  std::vector<double> lag_ms;
};

// One job of two flooding replicas; with `follow`, paced, and the copy of the worker's log is
// followed meanwhile for the lag.
Row RunRound(bool ship, bool follow) {
  ClusterOptions o;
  o.agents = 2;
  if (!ship) o.agent.extra_args = {"--no-log-shipping"};
  MiniCluster c(o);
  // The paced round writes 10 s worth at most.
  const int mib = follow ? std::min(Mib(), 100) : Mib();
  const int64_t size = int64_t{mib} << 20;
  auto cpu = [&] {
    double agents = CpuSeconds(c.agent(0).pid()) + CpuSeconds(c.agent(1).pid());
    return std::pair<double, double>(agents, CpuSeconds(c.daemon().pid()));
  };
  const auto before = cpu();
  const std::string tag = follow ? "lag" : "cpu";
  const std::string id = c.Submit(FloodJob(c, mib, tag, /*paced=*/follow));
  Row row;
  int64_t offset = 0;
  while (follow && offset < size) {
    v1::ReadLogsResponse r = ReadAt(c, id, "worker-0", offset, 256 << 10);
    if (!r.central() || r.data().empty()) {
      usleep(1000);
      continue;
    }
    const int64_t now_ns = WallNowMs() * 1'000'000;
    const std::string& d = r.data();
    // The last whole line's stamp.
    const size_t end = d.rfind('\n');
    const size_t start = end == std::string::npos ? std::string::npos : d.rfind('\n', end - 1);
    const size_t line = start == std::string::npos ? 0 : start + 1;
    int64_t stamp = 0;
    if (end != std::string::npos && absl::SimpleAtoi(d.substr(line, 19), &stamp)) {
      row.lag_ms.push_back(static_cast<double>(now_ns - stamp) / 1e6);
    }
    offset = r.next_offset();
  }
  const v1::Job job = c.WaitForEnd(id, std::chrono::minutes(10));
  REQUIRE(job.state() == v1::JOB_STATE_SUCCEEDED);
  if (ship) {
    REQUIRE(
        Eventually([&] { return CopyComplete(c, id, "chief-0", size); }, std::chrono::minutes(5)));
    REQUIRE(
        Eventually([&] { return CopyComplete(c, id, "worker-0", size); }, std::chrono::minutes(5)));
  }
  const auto after = cpu();
  const double mb = 2.0 * static_cast<double>(size) / 1e6;
  row.agent_ms_per_mb = (after.first - before.first) * 1000 / mb;
  row.daemon_ms_per_mb = (after.second - before.second) * 1000 / mb;
  row.write_mbps = (WriteMbps(c.dir() + "/" + tag + "-chief.result") +
                    WriteMbps(c.dir() + "/" + tag + "-worker.result")) /
                   2;
  row.stored_ratio = static_cast<double>(DiskBytes(c.DataDir() + "/logs")) / (2.0 * size);
  return row;
}

TEST_CASE("the cost of shipping replica logs to trainctld", "[bench]") {
  const Row off = RunRound(/*ship=*/false, /*follow=*/false);
  const Row on = RunRound(/*ship=*/true, /*follow=*/false);
  const Row lag = RunRound(/*ship=*/true, /*follow=*/true);
  printf("2 agents, 1 replica each writing %d MiB of 128-byte lines as fast as it can\n", Mib());
  printf("%-5s  %-11s  %-10s  %-14s  %-13s  %s\n", "", "write MB/s", "agents ms/MB",
         "trainctld ms/MB", "stored/logged", "lag p50 / p99 ms");
  for (const auto& [name, r] : {std::pair<const char*, const Row*>{"off", &off}, {"on", &on}}) {
    char lag_text[64] = "-";
    if (r == &on)
      snprintf(lag_text, sizeof lag_text, "%.0f / %.0f", Pct(lag.lag_ms, 0.5),
               Pct(lag.lag_ms, 0.99));
    printf("%-5s  %-11.0f  %-12.2f  %-15.2f  %-13.3f  %s\n", name, r->write_mbps,
           r->agent_ms_per_mb, r->daemon_ms_per_mb, r->stored_ratio, lag_text);
  }
  printf(
      "(lag from %zu samples of a paced round, about 10 MB/s per replica, that followed the "
      "copy)\n",
      lag.lag_ms.size());
}

}  // namespace
}  // namespace trainctl::testing

// Catch's own main, with --mib N added to its flags.
int main(int argc, char* argv[]) {
  Catch::Session session;
  using Catch::clara::Opt;
  auto cli = session.cli() | Opt(trainctl::testing::g_mib_flag,
                                 "mib")["--mib"]("MiB each replica writes (default 256)");
  session.cli(cli);
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  return session.run();
}
