// The scripted jobs of the fake server (fake_server.h) whose every field a test of `describe`
// reads: built here so that the story each one tells is in one place.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {

// j-described: FAILED after two attempts. A lost replica on node-c cost the first an internal
// retry; in the second its worker-0 ran out of memory on node-b and was killed by SIGKILL, after
// two restarts in place (one charged). Fixed times from 2026-01-01T00:00:00Z.
v1::Job DescribedJob();

// j-retrying: QUEUED for its second attempt, its backoff ending at now_ms + 5s, one job retry of
// three used; its worker-0 RESTARTING at now_ms + 4s (as if read mid-restart).
v1::Job RetryingJob(int64_t now_ms);

// j-waiting: QUEUED in team-a since now_ms - 90s, 13th with 12 jobs ahead (the first 10 listed),
// held back by its project's GPU quota and by the jobs ahead of it.
v1::Job WaitingJob(int64_t now_ms);

// A job array as the fake server creates it for a spec with `array`: fills in `array`'s status
// (every element waiting, none held) and takes away its replicas (an array runs none itself), and
// returns one QUEUED element job per index, "<array id>-<index>" in index order, Job.element set,
// each waiting with an ARRAY_LIMIT blocker. INVALID_ARGUMENT, as ParseArrayIndices says, for
// indices that do not parse. REQUIRES: array->id() and array->spec().array() are set.
absl::StatusOr<std::vector<v1::Job>> FakeArrayElements(v1::Job* array);

}  // namespace trainctl::cli
