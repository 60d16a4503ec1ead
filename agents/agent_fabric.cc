// The agent's side of the fabric check before a multi-node gang starts (CheckFabric; agent.h,
// fabric_check.h): its listener, started with the agent so that every Register carries its port,
// and the checks the scheduler asks for. Each check runs on fabric_checks_, never on the
// stream's reader or the worker: it probes every target at once (kFabricProbeThreads at most),
// then runs --gang-check-program when the request asks for it, all within the request's
// timeout, and sends one FabricReport the way LogData and DumpStacks answers go: not journaled,
// dropped with a broken stream (the scheduler's deadline counts it as no answer).
#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agents/agent.h"
#include "agents/fabric_check.h"
#include "common/log_context.h"
#include "common/time_util.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {
namespace agent_fabric_internal {

// "2 of 3 probes passed (median latency 0.21ms, lowest 9.4 Gbit/s); to node-3: connect to
// 10.0.0.3:7090: Connection refused; program passed (93.1 Gbit/s) in 4s".
std::string Summary(const trainctl::v1::FabricReport& report, bool program_asked) {
  int passed = 0;
  double lowest_gbps = -1;
  std::vector<double> latencies;
  std::vector<std::string> failures;
  for (const trainctl::v1::FabricProbe& probe : report.probes()) {
    if (!probe.ok()) {
      failures.push_back(absl::StrCat("to ", probe.to(), ": ", probe.detail()));
      continue;
    }
    ++passed;
    latencies.push_back(probe.latency_ms());
    if (lowest_gbps < 0 || probe.gbps() < lowest_gbps) lowest_gbps = probe.gbps();
  }
  std::string text = absl::StrCat(passed, " of ", report.probes_size(), " probes passed");
  if (!latencies.empty()) {
    std::sort(latencies.begin(), latencies.end());
    absl::StrAppend(&text, " (median latency ", FormatMeasure(latencies[latencies.size() / 2]),
                    "ms, lowest ", FormatMeasure(lowest_gbps), " Gbit/s)");
  }
  if (!failures.empty()) absl::StrAppend(&text, "; ", absl::StrJoin(failures, "; "));
  if (report.has_program()) {
    const trainctl::v1::FabricProgramRun& run = report.program();
    absl::StrAppend(&text, "; program ", run.ok() ? "passed" : "failed",
                    run.gbps() > 0 ? absl::StrCat(" (", FormatMeasure(run.gbps()), " Gbit/s)") : "",
                    " in ", FormatDuration(DurationToMs(run.took())),
                    run.ok() ? "" : absl::StrCat(": ", run.detail()));
  } else if (program_asked) {
    absl::StrAppend(&text, "; no --gang-check-program on this node");
  }
  return text;
}

}  // namespace agent_fabric_internal

void Agent::StartFabricChecks() {
  fabric_checks_ = std::make_unique<WorkQueue>(kFabricCheckThreads, kMaxFabricChecks);
  if (absl::Status s = fabric_listener_.Start(options_.fabric.port); !s.ok()) {
    spdlog::error(
        "no fabric check listener (--gang-check-port {}): {}; multi-node gangs with this node "
        "start without their fabric check",
        options_.fabric.port, std::string(s.message()));
    return;
  }
  spdlog::info("fabric check listener on port {}{}; the other agents must reach it",
               fabric_listener_.port(),
               options_.fabric.port == 0 ? " (a free one: --gang-check-port fixes it)" : "");
}

void Agent::StopFabricChecks() {
  fabric_cancelled_ = true;
  fabric_checks_.reset();  // the checks that wait end at once, and a running program is killed
  fabric_listener_.Stop();
}

void Agent::CheckFabricNow(const trainctl::v1::CheckFabric& request) {
  auto answer = [this](trainctl::v1::FabricReport report) {
    trainctl::v1::AgentMessage reply;
    *reply.mutable_fabric() = std::move(report);
    absl::MutexLock lock(&mu_);
    outbox_.push_back(std::move(reply));
  };
  const bool posted =
      fabric_checks_->Post([this, request, answer] { answer(RunFabricCheck(request)); });
  if (posted) return;
  // Too many checks wait: answer now rather than let the scheduler's deadline pass.
  LogScope scope(request.job_id(), options_.node);
  spdlog::warn("fabric check {}: {} checks wait already; answering that none ran",
               request.request_id(), kMaxFabricChecks);
  trainctl::v1::FabricReport busy;
  busy.set_request_id(request.request_id());
  for (const trainctl::v1::FabricPeer& peer : request.targets()) {
    trainctl::v1::FabricProbe& probe = *busy.add_probes();
    probe.set_from(options_.node);
    probe.set_to(peer.node());
    probe.set_detail(
        absl::StrCat("not probed: ", kMaxFabricChecks, " fabric checks wait on this node already"));
  }
  answer(std::move(busy));
}

trainctl::v1::FabricReport Agent::RunFabricCheck(const trainctl::v1::CheckFabric& request) {
  LogScope scope(request.job_id(), options_.node);
  const absl::Time start = absl::Now();
  const absl::Duration timeout = request.timeout_ms() > 0 ? absl::Milliseconds(request.timeout_ms())
                                                          : kDefaultFabricCheckTimeout;
  const absl::Time deadline = start + timeout;
  trainctl::v1::FabricReport report;
  report.set_request_id(request.request_id());

  // Every target at once, up to kFabricProbeThreads: each thread takes the next target.
  const int targets = request.targets_size();
  std::vector<trainctl::v1::FabricProbe> probes(static_cast<size_t>(targets));
  std::atomic<int> next{0};
  auto probe_some = [&] {
    for (int i = next++; i < targets; i = next++) {
      const trainctl::v1::FabricPeer& peer = request.targets(i);
      trainctl::v1::FabricProbe& probe = probes[static_cast<size_t>(i)];
      if (fabric_cancelled_) {
        probe.set_detail("not probed: the agent is stopping");
      } else {
        probe = ProbeFabric(peer.address(), deadline, options_.fabric.min_tcp_gbps);
      }
      probe.set_from(options_.node);
      probe.set_to(peer.node());
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < std::min(targets, kFabricProbeThreads); ++t) threads.emplace_back(probe_some);
  for (std::thread& thread : threads) thread.join();
  for (trainctl::v1::FabricProbe& probe : probes) *report.add_probes() = std::move(probe);

  if (request.program() && !options_.fabric.program.empty()) {
    FabricProgramRequest run;
    run.command = options_.fabric.program;
    run.env.insert(request.env().begin(), request.env().end());
    run.deadline = deadline;
    run.check_timeout = timeout;
    run.min_gbps = options_.fabric.min_gbps;
    run.cancelled = &fabric_cancelled_;
    *report.mutable_program() = RunFabricProgram(run);
    report.mutable_program()->set_node(options_.node);
  }
  spdlog::info("fabric check {} of job {} in {}: {}", request.request_id(), request.job_id(),
               FormatDuration(absl::ToInt64Milliseconds(absl::Now() - start)),
               agent_fabric_internal::Summary(report, request.program()));
  return report;
}

}  // namespace trainctl::agent
