// The values of a launch's secretRefs, added to its environment just before it is sent, and of
// its pool's imagePullSecret (LaunchReplica.image_credentials): after the turn that decided it
// committed, so that no value is ever written to the database, kept in the core, or shown by a
// read. Resolved at each launch, so a changed secret reaches the next one. A secret that is gone
// (deleted after the submit) fails the launch as the user's error (LaunchReplica.prepare_error
// names it); the agent starts nothing. No value is ever logged.
//
//   for (sched::Command& c : fx.commands)
//     if (c.message.has_launch()) AddSecretValues(core, secrets, c.message.mutable_launch());
#pragma once

#include <string>

#include "scheduler/core.h"
#include "server/project_secrets.h"
#include "trainctl/v1/agent.pb.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::server {

// Sets launch->env[VAR] for every secretRefs entry of the launch's pool, then its image's
// credentials (AddImageCredentials). `secrets` may be null (none are kept: a launch that needs
// one fails).
void AddSecretValues(const sched::Core& core, const ProjectSecrets* secrets,
                     v1::LaunchReplica* launch);

// Sets launch->image_credentials to the value of `pool`'s imagePullSecret in `project`; nothing
// when the pool has none (or no image). A secret that does not open (gone, or `secrets` null)
// sets launch->prepare_error instead: "secret \"reg\" for imagePullSecret: project p has no
// secret named reg".
void AddImageCredentials(const v1::WorkerPool& pool, const std::string& project,
                         const ProjectSecrets* secrets, v1::LaunchReplica* launch);

}  // namespace trainctl::server
