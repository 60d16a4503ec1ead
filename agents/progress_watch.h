// Signs of progress of running replicas, for ReplicaProgress: a file newer than the last sign in
// the job's checkpoint directory, or the replica's progress file (TRAINCTL_PROGRESS_FILE)
// touched.
//
// The progress file may be empty (its mtime is the sign) or hold a JSON object such as
// {"step": 1200, "checkpoint": true}: when its mtime is newer than the last sign, its first
// kMaxProgressFileBytes are read and the report carries the step and, when the object says so,
// checkpoint (the replica finished writing a checkpoint in that write). Content that is not such
// an object counts by its mtime alone, without a step or a checkpoint. Never follows a link and
// never blocks on the file (a FIFO there reads as empty).
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

// The most of a progress file that is read.
inline constexpr int kMaxProgressFileBytes = 4096;

// What a progress file says (see the file comment).
struct ProgressFileContent {
  int64_t step = 0;  // 0: no step (or not a non-negative whole number)
  bool checkpoint = false;
};

// {"step": N, "checkpoint": true} -> {N, true}; anything else (empty, not JSON, not an object,
// wrong types) reads as {0, false}, field by field.
ProgressFileContent ParseProgressFile(const std::string& text);

// The first kMaxProgressFileBytes of the regular file at `path`, without following a link or
// blocking; "" when it is missing, unreadable or not a regular file.
std::string ReadProgressFile(const std::string& path);

// One ReplicaProgress for each target with a sign newer than since_ms: the newest of its
// progress file's mtime and the newest mtime in its checkpoint directory (the directory itself
// and entries up to two levels down). Each checkpoint directory is read once per call. A
// progress file that is a symbolic link counts with the link's own mtime. When the progress
// file's mtime is newer than since_ms, its content (ParseProgressFile) sets step and checkpoint.
std::vector<trainctl::v1::ReplicaProgress> CheckProgress(
    const std::vector<ProgressTarget>& targets);

// The newest mtime, Unix ms, of `dir` and its entries up to `depth` levels down (at most a few
// thousand entries); 0 when `dir` cannot be read. Follows no symbolic link: a replica may own
// these directories (0 when `dir` itself is a link).
int64_t NewestMtimeMs(const std::string& dir, int depth);

}  // namespace trainctl::agent
