// The fabric check before a multi-node gang starts (fabric_checks.h).
#include "scheduler/fabric_checks.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/time_util.h"
#include "model/model_proto.h"
#include "scheduler/fabric_culprit.h"
#include "scheduler/node_health.h"
#include "scheduler/retry_engine.h"

namespace trainctl::sched {
namespace {

// host:port of `node`'s listener; IPv6 addresses in brackets.
std::string ListenerOf(const Node& node) {
  const bool v6 = node.address.find(':') != std::string::npos;
  return absl::StrCat(v6 ? "[" : "", node.address, v6 ? "]" : "", ":", node.fabric_port);
}

// One result per pair of nodes, whichever way it was probed: it passed when every probe between
// the two did; its detail is the first failure's, with its direction.
std::vector<PairProbe> MergePairs(const v1::FabricCheck& check) {
  std::map<std::pair<std::string, std::string>, PairProbe> pairs;
  for (const v1::FabricProbe& p : check.probes()) {
    const auto key = std::minmax(p.from(), p.to());
    auto [it, fresh] = pairs.try_emplace({key.first, key.second});
    PairProbe& pair = it->second;
    if (fresh) {
      pair.a = key.first;
      pair.b = key.second;
      pair.ok = true;
    }
    if (!p.ok() && pair.ok) {
      pair.ok = false;
      pair.detail = absl::StrCat(p.from(), "->", p.to(), ": ", p.detail());
    }
  }
  std::vector<PairProbe> out;
  for (auto& [key, pair] : pairs) out.push_back(std::move(pair));
  return out;
}

// "passed in 0.42s: 3 pairs, latency at most 0.21 ms, at least 8.4 Gbit/s; the check program
// passed on 3 nodes".
std::string PassSummary(const v1::FabricCheck& check, size_t pairs, absl::Duration took) {
  double latency = 0;
  double gbps = -1;
  for (const v1::FabricProbe& p : check.probes()) {
    latency = std::max(latency, p.latency_ms());
    if (p.gbps() > 0 && (gbps < 0 || p.gbps() < gbps)) gbps = p.gbps();
  }
  std::string out = absl::StrFormat("passed in %.2fs: %d pairs, latency at most %.2f ms",
                                    absl::ToDoubleSeconds(took), pairs, latency);
  if (gbps >= 0) absl::StrAppendFormat(&out, ", at least %.1f Gbit/s", gbps);
  if (check.programs_size() > 0) {
    double program_gbps = -1;
    for (const v1::FabricProgramRun& run : check.programs()) {
      if (run.gbps() > 0 && (program_gbps < 0 || run.gbps() < program_gbps)) {
        program_gbps = run.gbps();
      }
    }
    absl::StrAppend(&out, "; the check program passed on ", check.programs_size(), " nodes");
    if (program_gbps >= 0) absl::StrAppendFormat(&out, ", at least %.1f Gbit/s", program_gbps);
  }
  return out;
}

}  // namespace

std::map<std::string, std::vector<std::string>> FabricChecks::Targets(
    const std::vector<std::string>& nodes) {
  std::map<std::string, std::vector<std::string>> out;
  const size_t n = nodes.size();
  for (size_t i = 0; i < n; ++i) {
    std::vector<std::string>& mine = out[nodes[i]];
    if (n <= kAllPairsUpTo) {
      for (size_t j = 0; j < n; ++j) {
        if (j != i) mine.push_back(nodes[j]);
      }
      continue;
    }
    for (size_t step = 1; step < n; step *= 2) mine.push_back(nodes[(i + step) % n]);
  }
  return out;
}

bool FabricChecks::Wanted(const Job& job, const std::vector<std::string>& nodes,
                          std::string* why_not) const {
  if (why_not != nullptr) why_not->clear();
  if (job.spec.fault_tolerance().gang_check() == v1::GANG_CHECK_OFF || nodes.size() < 2) {
    return false;
  }
  for (const std::string& name : nodes) {
    const Node* node = nodes_->Find(name);
    if (node == nullptr || node->fabric_port <= 0) {
      if (why_not != nullptr) {
        *why_not = absl::StrCat("the agent of node ", name,
                                " has no fabric check listener (an agent older than the check)");
      }
      return false;
    }
  }
  return true;
}

bool FabricChecks::CheckRestart(Job* job, absl::Time now, Effects* fx) {
  const Attempt* attempt = job->current();
  if (attempt == nullptr) return false;
  std::set<std::string> placed;
  for (const Replica& r : job->replicas) {
    if (r.state != v1::REPLICA_STATE_REMOVED) placed.insert(r.node);
  }
  const std::vector<std::string> nodes(placed.begin(), placed.end());
  std::vector<std::string> checked = attempt->nodes;
  if (attempt->fabric_check) {
    checked.assign(attempt->fabric_check->nodes().begin(), attempt->fabric_check->nodes().end());
  }
  std::sort(checked.begin(), checked.end());
  if (nodes == checked || !Wanted(*job, nodes, nullptr)) return false;
  for (Replica& r : job->replicas) {
    if (r.state == v1::REPLICA_STATE_REMOVED) continue;
    life_->SetReplicaState(job, &r, v1::REPLICA_STATE_CHECKING);
    r.message = absl::StrCat("placed on ", r.node, "; waiting for the fabric check");
  }
  Start(job, nodes, now, fx);
  return true;
}

void FabricChecks::Start(Job* job, const std::vector<std::string>& nodes, absl::Time now,
                         Effects* fx) {
  Attempt* attempt = job->current();
  v1::FabricCheck record;
  for (const std::string& n : nodes) record.add_nodes(n);
  *record.mutable_start_time() = ToProtoTime(now);
  record.set_result("RUNNING");
  record.set_summary(absl::StrCat("checking the fabric between ", absl::StrJoin(nodes, ", ")));
  attempt->fabric_check = std::move(record);
  Check& check = checks_[job->id];
  check = Check{};
  check.attempt = attempt->number;
  check.nodes = nodes;
  check.started = now;
  AddEvent(fx, now, job, "", "", "FabricCheckStarted",
           absl::StrCat("checking the fabric between ", absl::StrJoin(check.nodes, ", "),
                        " before ", job->replicas.size(), " replicas start"));
  SendRound(job->id, &check, Targets(check.nodes), /*program=*/true, now, fx);
}

void FabricChecks::SendRound(const std::string& job_id, Check* check,
                             const std::map<std::string, std::vector<std::string>>& targets,
                             bool program, absl::Time now, Effects* fx) {
  requests_.erase(check->request);
  check->request = next_request_++;
  requests_[check->request] = job_id;
  check->deadline = now + timeout_;
  check->waiting = targets;
  check->program = program;
  timers_->WakeAt(check->deadline);
  for (const auto& [name, peers] : targets) {
    fx->commands.push_back({name, Request(job_id, *check, name, peers)});
  }
}

void FabricChecks::Resend(const std::string& node, Effects* fx) {
  for (const auto& [id, check] : checks_) {
    auto due = check.waiting.find(node);
    if (check.request != 0 && due != check.waiting.end()) {
      fx->commands.push_back({node, Request(id, check, node, due->second)});
    }
  }
}

v1::SchedulerMessage FabricChecks::Request(const std::string& job_id, const Check& check,
                                           const std::string& name,
                                           const std::vector<std::string>& peers) const {
  v1::SchedulerMessage msg;
  v1::CheckFabric* req = msg.mutable_check_fabric();
  req->set_request_id(check.request);
  req->set_job_id(job_id);
  req->set_timeout_ms(static_cast<int32_t>(absl::ToInt64Milliseconds(timeout_)));
  for (const std::string& peer : peers) {
    v1::FabricPeer* p = req->add_targets();
    p->set_node(peer);
    if (const Node* node = nodes_->Find(peer)) p->set_address(ListenerOf(*node));
  }
  const Node* master = nodes_->Find(check.nodes.front());
  const auto rank = std::find(check.nodes.begin(), check.nodes.end(), name);
  if (check.program && rank != check.nodes.end() && master != nullptr) {
    req->set_program(true);
    auto& env = *req->mutable_env();
    const std::string r = absl::StrCat(rank - check.nodes.begin());
    const std::string world = absl::StrCat(check.nodes.size());
    env["TRAINCTL_CHECK_RANK"] = r;
    env["TRAINCTL_CHECK_WORLD_SIZE"] = world;
    env["RANK"] = r;
    env["WORLD_SIZE"] = world;
    env["LOCAL_RANK"] = "0";
    env["MASTER_ADDR"] = master->address;
    // The program's own rendezvous: the port after the first node's listener, never a
    // replica's MASTER_PORT (docs/operators/gang-health.md).
    env["MASTER_PORT"] = absl::StrCat(master->fabric_port + 1);
    env["TRAINCTL_CHECK_NODES"] = absl::StrJoin(check.nodes, ",");
    env["TRAINCTL_JOB_ID"] = job_id;
  }
  return msg;
}

Job* FabricChecks::Waiting(const std::string& job_id, const Check& check) const {
  Job* job = jobs_->Find(job_id);
  if (job == nullptr || !IsLive(job->state) || job->current_attempt() != check.attempt ||
      !job->current()->fabric_check) {
    return nullptr;
  }
  for (const Replica& r : job->replicas) {
    if (r.state == v1::REPLICA_STATE_CHECKING) return job;
  }
  return nullptr;
}

void FabricChecks::Report(const std::string& node, const v1::FabricReport& report, absl::Time now,
                          Effects* fx) {
  auto req = requests_.find(report.request_id());
  if (req == requests_.end()) return;
  const std::string job_id = req->second;
  auto it = checks_.find(job_id);
  if (it == checks_.end() || it->second.request != report.request_id()) return;
  Check& check = it->second;
  auto due = check.waiting.find(node);
  if (due == check.waiting.end()) return;  // not asked, or answered already
  check.waiting.erase(due);
  Job* job = Waiting(job_id, check);
  if (job == nullptr) {
    requests_.erase(check.request);
    checks_.erase(it);
    return;
  }
  v1::FabricCheck& record = *job->current()->fabric_check;
  for (const v1::FabricProbe& p : report.probes()) {
    v1::FabricProbe* kept = record.add_probes();
    *kept = p;
    kept->set_from(node);  // the agent's word for itself is not needed
  }
  if (report.has_program()) {
    v1::FabricProgramRun* run = record.add_programs();
    *run = report.program();
    run->set_node(node);
  }
  if (check.waiting.empty()) Decide(job, &check, now, fx);
}

void FabricChecks::Tick(absl::Time now, Effects* fx) {
  std::vector<std::string> ids;
  for (const auto& [id, check] : checks_) ids.push_back(id);
  for (const std::string& id : ids) {
    auto it = checks_.find(id);
    if (it == checks_.end()) continue;
    Check& check = it->second;
    Job* job = Waiting(id, check);
    if (job == nullptr) {
      requests_.erase(check.request);
      checks_.erase(it);
      continue;
    }
    std::string left;
    for (const std::string& n : check.nodes) {
      std::string why;
      if (!nodes_->KeepsReplicas(n, &why)) {
        left = absl::StrCat("node ", n, " left during the check (", why, ")");
        break;
      }
    }
    if (!left.empty() && check.request != 0) {
      Abandon(job, check, left, now, fx);
      continue;
    }
    if (check.request == 0) {  // restored: waits for every node's agent
      if (check.deadline == absl::InfiniteFuture()) check.deadline = now + timeout_;
      if (left.empty()) {
        job->current()->fabric_check->clear_probes();
        job->current()->fabric_check->clear_programs();
        SendRound(id, &check, Targets(check.nodes), /*program=*/true, now, fx);
      } else if (now >= check.deadline) {
        Abandon(job, check, left, now, fx);
      } else {
        timers_->WakeAt(check.deadline);
      }
      continue;
    }
    if (now < check.deadline) continue;
    v1::FabricCheck& record = *job->current()->fabric_check;
    const std::string silent =
        absl::StrCat("no answer within ", FormatDuration(absl::ToInt64Milliseconds(timeout_)));
    for (const auto& [node, peers] : check.waiting) {
      for (const std::string& peer : peers) {
        v1::FabricProbe* p = record.add_probes();
        p->set_from(node);
        p->set_to(peer);
        p->set_detail(absl::StrCat("the agent of ", node, " gave ", silent));
      }
    }
    check.waiting.clear();
    Decide(job, &check, now, fx);
  }
}

void FabricChecks::Restore() {
  for (const auto& [id, job] : jobs_->all()) {
    if (!IsLive(job.state) || job.attempts.empty() || !job.attempts.back().fabric_check) continue;
    Check check;
    check.attempt = job.attempts.back().number;
    const v1::FabricCheck& record = *job.attempts.back().fabric_check;
    check.nodes.assign(record.nodes().begin(), record.nodes().end());
    check.deadline = absl::InfiniteFuture();
    check.started = FromProtoTime(job.attempts.back().fabric_check->start_time());
    if (Waiting(id, check) != nullptr) checks_[id] = std::move(check);
  }
}

void FabricChecks::Decide(Job* job, Check* check, absl::Time now, Effects* fx) {
  v1::FabricCheck& record = *job->current()->fabric_check;
  const std::vector<PairProbe> pairs = MergePairs(record);
  std::vector<std::string> outsiders;
  if (!check->outsider.empty()) {
    outsiders.push_back(check->outsider);
  } else {
    for (const auto& [name, node] : nodes_->nodes()) {
      if (node.connected && node.fabric_port > 0 && Schedulable(node) &&
          std::find(check->nodes.begin(), check->nodes.end(), name) == check->nodes.end()) {
        outsiders.push_back(name);
      }
    }
  }
  const CulpritVerdict v = FindCulprit(check->nodes, pairs, outsiders);
  switch (v.kind) {
    case CulpritVerdict::kProbeOutside: {
      check->outsider = v.probes.front().second;
      std::map<std::string, std::vector<std::string>> targets;
      for (const auto& [inside, outside] : v.probes) {
        targets[inside].push_back(outside);
        targets[outside].push_back(inside);
      }
      record.set_summary(absl::StrCat("the check between ", absl::StrJoin(check->nodes, " and "),
                                      " failed; probing each against ", check->outsider,
                                      ", outside the gang"));
      AddEvent(fx, now, job, "", "", "FabricCheckProbing", record.summary());
      SendRound(job->id, check, targets, /*program=*/false, now, fx);
      return;
    }
    case CulpritVerdict::kCulprit:
      return Fail(job, *check, v.culprit, v.why, now, fx);
    case CulpritVerdict::kNoCulprit:
      return Fail(job, *check, "", v.why, now, fx);
    case CulpritVerdict::kPass:
      break;
  }
  std::vector<const v1::FabricProgramRun*> failed;
  for (const v1::FabricProgramRun& run : record.programs()) {
    if (!run.ok()) failed.push_back(&run);
  }
  if (failed.empty()) {
    return Pass(job, *check, PassSummary(record, pairs.size(), now - check->started), now, fx);
  }
  if (failed.size() == 1 && record.programs_size() >= 2) {
    return Fail(job, *check, failed[0]->node(),
                absl::StrCat("the check program failed on ", failed[0]->node(),
                             " while it passed on the others: ", failed[0]->detail()),
                now, fx);
  }
  std::vector<std::string> parts;
  for (const v1::FabricProgramRun* run : failed) {
    parts.push_back(absl::StrCat(run->node(), " (", run->detail(), ")"));
  }
  Fail(job, *check, "",
       absl::StrCat("the check program failed on ", failed.size(), " of ", record.programs_size(),
                    " nodes: ", absl::StrJoin(parts, "; ")),
       now, fx);
}

void FabricChecks::Finish(Job* job, const Check& check, const std::string& result,
                          const std::string& summary, const std::string& culprit, absl::Time now,
                          Effects* fx) {
  v1::FabricCheck& record = *job->current()->fabric_check;
  record.set_result(result);
  record.set_summary(summary);
  record.set_culprit(culprit);
  *record.mutable_end_time() = ToProtoTime(now);
  const absl::Duration took = now - check.started;
  *record.mutable_duration() = MsToDuration(absl::ToInt64Milliseconds(took));
  fx->attempts.insert({job->id, job->current_attempt()});
  fx->tally.fabric_checks.push_back({result, took});
  Touch(job, now, fx);
  requests_.erase(check.request);
}

void FabricChecks::Pass(Job* job, const Check& check, const std::string& summary, absl::Time now,
                        Effects* fx) {
  Finish(job, check, "PASSED", summary, "", now, fx);
  AddEvent(fx, now, job, "", "", "FabricCheckPassed",
           absl::StrCat("the fabric between ", absl::StrJoin(check.nodes, ", "), " ", summary,
                        "; launching ", job->replicas.size(), " replicas"));
  checks_.erase(job->id);  // `check` with it
  for (Replica& r : job->replicas) {
    if (r.state == v1::REPLICA_STATE_CHECKING) life_->LaunchOnItsNode(job, &r, now, fx);
  }
}

void FabricChecks::Fail(Job* job, const Check& check, const std::string& culprit,
                        const std::string& why, absl::Time now, Effects* fx) {
  const std::string id = job->id;
  Finish(job, check, culprit.empty() ? "FAILED" : "ISOLATED", why, culprit, now, fx);
  checks_.erase(id);
  AddEvent(fx, now, job, "", culprit, "FabricCheckFailed",
           culprit.empty() ? absl::StrCat("no single node to blame: ", why)
                           : absl::StrCat("node ", culprit, " is isolated: ", why));
  if (!culprit.empty()) {
    v1::CheckRun run;
    run.set_phase("fabric");
    *run.mutable_time() = ToProtoTime(now);
    run.set_passed(false);
    run.set_job_id(id);
    v1::CheckResult* item = run.add_items();
    item->set_item("fabric");
    item->set_message(why);
    nodes_->ApplyCheckRun(culprit, run, now, fx);
  }
  bool failed_before = false;
  if (job->attempts.size() >= 2) {
    const Attempt& before = job->attempts[job->attempts.size() - 2];
    failed_before = before.fabric_check && before.fabric_check->result() == "FAILED";
  }
  life_->Redispatch(job, DecideOnFabricCheck(*job, culprit, why, failed_before), now, fx);
}

void FabricChecks::Abandon(Job* job, const Check& check, const std::string& why, absl::Time now,
                           Effects* fx) {
  const std::string id = job->id;
  Finish(job, check, "ABANDONED", why, "", now, fx);
  checks_.erase(id);
  AddEvent(fx, now, job, "", "", "FabricCheckAbandoned", why);
  life_->Redispatch(job, DecideOnFabricAbandoned(*job, why), now, fx);
}

}  // namespace trainctl::sched
