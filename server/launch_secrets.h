// The values of a launch's secretRefs, added to its environment just before it is sent: after
// the turn that decided it committed, so that no value is ever written to the database, kept in
// the core, or shown by a read. Resolved at each launch, so a changed secret reaches the next
// one. A secret that is gone (deleted after the submit) fails the launch as the user's error
// (LaunchReplica.prepare_error names it); the agent starts nothing.
//
//   for (sched::Command& c : fx.commands)
//     if (c.message.has_launch()) AddSecretValues(core, secrets, c.message.mutable_launch());
#pragma once

#include "scheduler/core.h"
#include "server/project_secrets.h"
#include "trainctl/v1/agent.pb.h"

namespace trainctl::server {

// Sets launch->env[VAR] for every secretRefs entry of the launch's pool. `secrets` may be null
// (none are kept: a launch that needs one fails).
void AddSecretValues(const sched::Core& core, const ProjectSecrets* secrets,
                     v1::LaunchReplica* launch);

}  // namespace trainctl::server
