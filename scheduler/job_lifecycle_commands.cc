// JobLifecycle's commands for agents (job_lifecycle.h): the launch of a replica's run, with its
// user and project uid as of that launch, and the stop of a run.
#include "scheduler/job_lifecycle.h"
#include "scheduler/job_validation.h"
#include "scheduler/launch_env.h"

namespace trainctl::sched {

void JobLifecycle::SendLaunch(const Job& job, const Replica& r, Effects* fx) {
  SendLaunch(job, r, GangViewOf(job, nodes_->nodes()), fx);
}

void JobLifecycle::SendLaunch(const Job& job, const Replica& r, const GangView& view, Effects* fx) {
  v1::SchedulerMessage msg;
  *msg.mutable_launch() = BuildReplicaLaunch(job, static_cast<int>(&r - job.replicas.data()), view);
  // The user is the project quota's as of this launch (see LaunchReplica.run_as_user).
  msg.mutable_launch()->set_run_as_user(queue_->EffectiveQuota(job.project).run_as_user);
  // A project's uid is given at its first submit; a job submitted before trainctl gave uids
  // gets one at its next launch, committed with it. With none left in the range, the launch
  // carries none and the agent runs it as its --default-run-as-user, else as nobody, as before.
  if (absl::StatusOr<ProjectUids::Allocation> uid = queue_->uids().Allocate(job.project);
      uid.ok()) {
    msg.mutable_launch()->set_project_uid(uid->uid);
    if (uid->fresh) fx->project_uids.insert(job.project);
  }
  jobs_->NoteRun(msg.launch().run_id(), r.node);
  binding_.NoteRun(r, msg.launch().run_id());
  fx->commands.push_back({r.node, std::move(msg), PoolLaunchOf(job, r.pool)});
}

void JobLifecycle::SendStop(const Job& job, const Replica& r, absl::Duration grace,
                            const std::string& reason, Effects* fx,
                            const std::string& capture_stacks) {
  fx->commands.push_back({r.node, StopMessage(job.RunIdOf(r), grace, reason, capture_stacks)});
}

}  // namespace trainctl::sched
