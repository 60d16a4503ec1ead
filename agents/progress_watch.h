// Signs of progress of running replicas, for ReplicaProgress: a file newer than the last sign in
// the job's checkpoint directory, or the replica's progress file (TRAINCTL_PROGRESS_FILE)
// touched.
//
//   std::vector<ProgressTarget> targets = ...;  // one per running replica
//   for (const v1::ReplicaProgress& p : CheckProgress(targets)) Report(p);
//
// Thread-safe: the functions keep no state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainctl/v1/agent.pb.h"

namespace trainctl::agent {

// The name of the progress file in a replica's working directory.
inline constexpr char kProgressFileName[] = ".trainctl-progress";

// What to look at for one running replica.
struct ProgressTarget {
  std::string run_id;
  // The replica's TRAINCTL_PROGRESS_FILE.
  std::string progress_file;
  // The job's checkpoint directory; empty: none.
  std::string checkpoint_dir;
  // The last sign already known (or the run's start), Unix ms: only newer ones count.
  int64_t since_ms = 0;
};

// One ReplicaProgress for each target with a sign newer than since_ms: the newest of its
// progress file's mtime and the newest mtime in its checkpoint directory (the directory itself
// and entries up to two levels down). Each checkpoint directory is read once per call. A
// progress file that is a symbolic link counts with the link's own mtime.
std::vector<trainctl::v1::ReplicaProgress> CheckProgress(
    const std::vector<ProgressTarget>& targets);

// The newest mtime, Unix ms, of `dir` and its entries up to `depth` levels down (at most a few
// thousand entries); 0 when `dir` cannot be read. Follows no symbolic link: a replica may own
// these directories (0 when `dir` itself is a link).
int64_t NewestMtimeMs(const std::string& dir, int depth);

}  // namespace trainctl::agent
