// JobService.GetStacks: the stacks of a job's replicas. Those the agents captured before
// stopping runs (kept in the database with the job, storage/stacks_rows.h) are read off the
// loop; with `now`, each running replica's agent captures them on request (DumpStacks) and the
// answers are gathered, each bounded by kStacksNowDeadline. Project members and operators only,
// like logs: stacks show code paths and arguments.
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/enum_names.h"
#include "server/api.h"

namespace trainctl::server {
namespace api_stacks_internal {

// The agent's capture is bounded by its --stack-timeout (10s by default); the rest is margin.
constexpr std::chrono::seconds kStacksNowDeadline{30};
// The most replicas one `--now` captures at once.
constexpr size_t kMaxStacksNow = 512;

// The answers of one `--now` request, gathered until every asked agent answered.
struct Gather {
  absl::Mutex mu;
  std::vector<v1::ReplicaStacks> stacks ABSL_GUARDED_BY(mu);
  size_t waiting ABSL_GUARDED_BY(mu) = 0;
};

// A running replica of the job `--now` asks about.
struct Target {
  std::string replica;
  std::string node;
  std::string run_id;
  int32_t attempt = 0;
  int32_t restart = 0;
};

// Asks each target's agent for its stacks; answers once all answered, in the targets' order.
void AskForStacks(AgentRegistry* registry, const std::vector<Target>& targets,
                  const v1::GetStacksRequest& req, Reply<v1::GetStacksResponse> done) {
  auto gather = std::make_shared<Gather>();
  {
    absl::MutexLock lock(&gather->mu);
    gather->waiting = targets.size();
    gather->stacks.resize(targets.size());
  }
  const auto deadline = std::chrono::steady_clock::now() + kStacksNowDeadline;
  for (size_t i = 0; i < targets.size(); ++i) {
    const Target& target = targets[i];
    v1::DumpStacks ask;
    ask.set_run_id(target.run_id);
    registry->RequestStacks(target.node, ask, deadline,
                            [gather, i, target, req, done](const v1::StacksReport& answer) {
                              v1::ReplicaStacks s = answer.stacks();
                              s.set_job_id(req.job_id());
                              s.set_attempt(target.attempt);
                              s.set_replica(target.replica);
                              s.set_restart(target.restart);
                              s.set_node(target.node);
                              s.set_run_id(target.run_id);
                              if (s.reason().empty()) s.set_reason("requested");
                              if (req.summary_only()) {
                                for (v1::ProcessStacks& p : *s.mutable_processes()) p.clear_text();
                              }
                              std::vector<v1::ReplicaStacks> all;
                              {
                                absl::MutexLock lock(&gather->mu);
                                gather->stacks[i] = std::move(s);
                                if (--gather->waiting > 0) return;
                                all = std::move(gather->stacks);
                              }
                              v1::GetStacksResponse resp;
                              resp.set_attempt(all.empty() ? 0 : all.front().attempt());
                              for (v1::ReplicaStacks& one : all)
                                *resp.add_stacks() = std::move(one);
                              done(std::move(resp));
                            });
  }
}

}  // namespace api_stacks_internal

void Api::GetStacks(const CallContext& call, const v1::GetStacksRequest& req,
                    Reply<v1::GetStacksResponse> done) {
  absl::StatusOr<Caller> caller = Authorize(call, Route::kGetStacks);
  if (!caller.ok()) return done(caller.status());
  if (req.job_id().empty()) return done(absl::InvalidArgumentError("jobId is required"));
  if (req.attempt() < 0) {
    return done(absl::InvalidArgumentError(
        absl::StrCat("attempt must be 0 (the latest) or more, got ", req.attempt())));
  }
  if (req.now()) return StacksNow(*caller, req, std::move(done));
  if (parts_.archive == nullptr) {
    return done(absl::UnavailableError("this trainctld keeps no stacks"));
  }
  const bool posted = log_readers_.Post([this, caller = *caller, req, done] {
    if (absl::Status allowed = CheckStoredJob(caller, Permission::kReadLogs, req.job_id());
        !allowed.ok()) {
      return done(allowed);
    }
    absl::StatusOr<storage::StacksOfAttempt> got = parts_.archive->ListStacks(
        {req.job_id(), req.attempt(), req.replica(), req.summary_only()});
    if (!got.ok()) return done(got.status());
    v1::GetStacksResponse resp;
    resp.set_attempt(got->attempt);
    for (v1::ReplicaStacks& s : got->stacks) *resp.add_stacks() = std::move(s);
    done(std::move(resp));
  });
  if (!posted) done(absl::ResourceExhaustedError("too many reads at once; try again"));
}

void Api::StacksNow(const Caller& caller, const v1::GetStacksRequest& req,
                    Reply<v1::GetStacksResponse> done) {
  using api_stacks_internal::Target;
  if (parts_.registry == nullptr) {
    return done(absl::UnavailableError("this trainctld has no agents to ask"));
  }
  parts_.loop->PostRead(
      [this, caller, req, done](Turn& t) {
        absl::Status allowed = CheckJobProject(t, caller, Permission::kReadLogs, req.job_id());
        const sched::Job* job = t.core.FindJob(req.job_id());
        std::vector<Target> targets;
        if (allowed.ok() && job == nullptr) {
          allowed = absl::FailedPreconditionError(
              absl::StrCat("job ", req.job_id(),
                           " has no running replica (or does not exist); `trainctl stacks ",
                           req.job_id(), "` shows the stacks kept from its stops"));
        }
        if (allowed.ok()) {
          bool named = req.replica().empty();
          for (const sched::Replica& r : job->replicas) {
            if (!req.replica().empty() && r.name != req.replica()) continue;
            named = true;
            if (r.state != v1::REPLICA_STATE_RUNNING) continue;
            const int32_t attempt = job->attempts.empty() ? 0 : job->attempts.back().number;
            targets.push_back({r.name, r.node, job->RunIdOf(r), attempt, r.restart_count});
          }
          if (!named) {
            allowed = absl::NotFoundError(
                absl::StrCat("job ", req.job_id(), " has no replica ", req.replica()));
          } else if (targets.empty()) {
            allowed = absl::FailedPreconditionError(
                absl::StrCat("job ", req.job_id(), " has no running replica",
                             req.replica().empty() ? "" : absl::StrCat(" named ", req.replica()),
                             " (it is ", EnumShortName(job->state), "); `trainctl stacks ",
                             req.job_id(), "` shows the stacks kept from its stops"));
          } else if (targets.size() > api_stacks_internal::kMaxStacksNow) {
            allowed = absl::InvalidArgumentError(
                absl::StrCat("job ", req.job_id(), " has ", targets.size(),
                             " running replicas; name one with `--replica` (at most ",
                             api_stacks_internal::kMaxStacksNow, " are captured at once)"));
          }
        }
        t.after_commit->push_back([this, allowed, targets = std::move(targets), req, done] {
          if (!allowed.ok()) return done(allowed);
          api_stacks_internal::AskForStacks(parts_.registry, targets, req, done);
        });
      },
      done);
}

}  // namespace trainctl::server
