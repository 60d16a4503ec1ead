// How the CLI shows a job's hold and dependencies (`get`, `describe`), and the one line each
// queue operation (hold, release, update, requeue) prints.
//
// `now_ms` (ms since the epoch) is passed in so that ages are testable.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {

// While held: "by alice since 2026-11-21T03:44:36Z (5m ago): waiting for the dataset"; without
// the holder or the reason those parts are left out. "" when the job is not held.
std::string HeldText(const v1::Job& job, int64_t now_ms);

// A condition in Slurm's words: "afterok", "afternotok", "afterany".
std::string DependencyConditionWord(v1::DependencyCondition condition);

// Each of the job's dependencies, "; "-separated: "afterok j-1: ended SUCCEEDED, met",
// "afterany j-2: waiting", "afterok j-3: ended FAILED, never met". Taken from job.dependencies,
// or from spec.dependsOn ("waiting") when the server sent no status. "" without dependencies.
std::string DependenciesText(const v1::Job& job);

// The line `hold` prints: "job j-1 held: <reason>" ("job j-1 held" without a reason).
std::string HeldLine(const v1::Job& job);
// "job j-1 released: it may be admitted again".
std::string ReleasedLine(const v1::Job& job);
// "job j-1 updated: priority 5, queueTimeout 2h, labels team=vision, removed labels old".
std::string UpdatedLine(const v1::Job& job, const v1::UpdateJobRequest& request);
// "job j-1 requeued: <reason>; its replicas checkpoint and stop, and it waits in the queue again".
std::string RequeuedLine(const v1::Job& job, const std::string& reason);

}  // namespace trainctl::cli
