// JobScratch gives each job a private /tmp and /dev/shm on this host: one tmpfs per job, which
// every replica of the job here sees as its /tmp (the tmpfs's tmp/) and /dev/shm (its shm/), in a
// mount namespace of the replica's own (agents/shim/private_tmp.h). Replicas of one job share
// them (NCCL's shared-memory transport between local ranks needs one /dev/shm); replicas of other
// jobs and the host see neither.
//
// Layout: <root> (the launcher's <state dir>/scratch, mode 0700) is itself a small private tmpfs
// while any job has one, so that new mounts under it reach no replica's namespace and a replica
// can detach all of it from its own; <root>/<job id> is the job's tmpfs (size Options::size,
// nosuid, nodev, mode 0700) with tmp/ and shm/ of mode 1777 beneath, like /tmp. Acquire() mounts
// it for the job's first run here; Release() of the job's last run unmounts it (lazily: a process
// that still holds a file there keeps the memory until it lets go) and removes the directory,
// and the container with the last job. Mounts outlive the agent process: after a restart,
// Adopt() counts the adopted runs again and RemoveUnused() removes the tmpfs of every job without
// one.
//
// Memory: a tmpfs page is charged to the memory cgroup of the process that first writes it (the
// replica's run cgroup, whose limit it counts against); see the README's security section for
// what happens to pages that outlive their writer's cgroup.
//
// Off (replicas share the host's /tmp and /dev/shm; off_reason() says why, logged once at
// construction) when Options::size is empty (--job-tmpfs-size 0), when the agent is not root
// (it cannot mount), when the container cannot be mounted, or when Options::work_dir lies under
// /tmp or /dev/shm (the replicas' working directories would vanish under the private ones).
//
//   JobScratch scratch({.root = state_dir + "/scratch", .size = "50%", .work_dir = work_dir});
//   absl::StatusOr<std::string> job_dir = scratch.Acquire("job-1", "job-1/1/worker-0/0");
//   request.private_tmp = *job_dir;  // "" when off (shim_spawn.h)
//   ...  // once the run ended and its processes are gone:
//   scratch.Release("job-1/1/worker-0/0");
//
// Thread-safe: all methods may be called from any thread.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace trainctl::agent {

// --job-tmpfs-size's default: the kernel's default size of a tmpfs, and of most hosts' /dev/shm.
inline constexpr char kDefaultJobTmpfsSize[] = "50%";

// Parses --job-tmpfs-size: "0" (off: ""), a percentage of the host's memory 1..100 ("50%"), or
// a number of bytes with an optional k, m, g or t suffix (powers of 1024; "64g"). Returns the
// value of tmpfs's size= option: the percentage as given, else the number of bytes.
// INVALID_ARGUMENT naming `flag` otherwise.
absl::StatusOr<std::string> ParseJobTmpfsSize(absl::string_view flag, absl::string_view text);

// Whether `path` (made absolute and free of symlinks where it exists) is /tmp or /dev/shm or lies
// beneath them; the one it lies under, or "".
std::string UnderPrivateDir(const std::string& path);

class JobScratch {
 public:
  struct Options {
    // Where job directories are mounted; created when needed.
    std::string root;
    // tmpfs's size= of each job's tmpfs (ParseJobTmpfsSize); "": off.
    std::string size;
    // The replicas' working directories live below it.
    std::string work_dir;
  };

  // Decides whether it is on and logs what replicas get. Leaves nothing mounted.
  explicit JobScratch(Options options);
  JobScratch(const JobScratch&) = delete;
  JobScratch& operator=(const JobScratch&) = delete;

  // "" when on; else why replicas share the host's /tmp and /dev/shm.
  const std::string& off_reason() const { return off_reason_; }

  // The job directory of `run_id`'s job (Options::root/<job_id>), mounting its tmpfs first when
  // no run of the job holds it; "" when off. INTERNAL (the host's fault) when it cannot be
  // mounted; nothing is left behind then. REQUIRES: job_id is a safe path component.
  absl::StatusOr<std::string> Acquire(const std::string& job_id, const std::string& run_id)
      ABSL_LOCKS_EXCLUDED(mu_);

  // INVALID_ARGUMENT when on and `checkpoint_dir` lies under /tmp or /dev/shm: the replica
  // would write its checkpoints into its job's private tmpfs, which goes with the job.
  absl::Status CheckCheckpointDir(const std::string& checkpoint_dir) const;

  // A run an earlier agent started holds its job's directory again (its tmpfs is still mounted).
  void Adopt(const std::string& job_id, const std::string& run_id) ABSL_LOCKS_EXCLUDED(mu_);

  // The run ended and its processes are gone; the job's last run here takes the job's tmpfs with
  // it. A run that holds nothing is ignored.
  void Release(const std::string& run_id) ABSL_LOCKS_EXCLUDED(mu_);

  // Unmounts and removes the directory of every job no run holds (left by an earlier agent), and
  // the container when no job is left. Problems are logged.
  void RemoveUnused() ABSL_LOCKS_EXCLUDED(mu_);

  // The jobs that hold a directory now, for tests.
  std::vector<std::string> Jobs() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Job {
    std::set<std::string> runs;
    // Its tmpfs is mounted (an adopted job's may have gone with an earlier mount namespace).
    bool mounted = false;
  };

  // Mounts the container at Options::root unless it is mounted.
  absl::Status MountRootLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Unmounts and removes the job's directory, and the container when it was the last job.
  void RemoveJobLocked(const std::string& job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UnmountRootIfIdleLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  // Constant after construction.
  std::string off_reason_;

  mutable absl::Mutex mu_;
  std::map<std::string, Job> jobs_ ABSL_GUARDED_BY(mu_);
  // Which job each run holds.
  std::map<std::string, std::string> run_jobs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainctl::agent
