// The replica's private /tmp and /dev/shm, set up by trainctl-shim (shim_main.cc, --private-tmp)
// in the replica's child before it changes user.
//
// Contract: given the job's directory JOB_DIR on this host (the agent's job_scratch.h: a tmpfs
// with tmp/ and shm/ beneath, mode 1777), EnterPrivateTmp() gives the calling process a mount
// namespace of its own whose mounts receive the host's later mounts but send none back (/ made
// a recursive slave), binds JOB_DIR/tmp over /tmp and JOB_DIR/shm over /dev/shm there, and then
// detaches JOB_DIR's parent (the agent's scratch root, a mount of its own) from the namespace, so
// that no other job's directory is reachable from the replica or kept alive by it. Every replica
// of the job binds the same tmpfs, so they share /tmp and /dev/shm (NCCL's shared-memory
// transport between local ranks needs that). The shim itself stays in the host's namespace.
// Needs CAP_SYS_ADMIN: call it as root, before setuid. Async-signal-safe (unshare, mount and
// umount2 only), for the forked child; the paths are built before the fork.
//
//   PrivateTmp paths;
//   if (!paths.Init("/run/trainctl-agent/scratch/job-1")) ...;  // in the shim, before fork
//   int step;
//   if (!EnterPrivateTmp(paths, &step)) ...;  // in the child: errno and step say what failed
#pragma once

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>

#include "agents/shim/shim_util.h"

namespace trainctl::shim {

// The step of EnterPrivateTmp() that failed.
enum PrivateTmpStep : int { kUnshare, kSlave, kBindTmp, kBindShm, kHideScratch };

// The paths EnterPrivateTmp() needs, built before the fork.
struct PrivateTmp {
  bool set = false;
  Path tmp;           // JOB_DIR/tmp
  Path shm;           // JOB_DIR/shm
  Path scratch_root;  // JOB_DIR's parent directory

  // False when `job_dir` is not an absolute path with a parent, or too long.
  bool Init(const char* job_dir) {
    const char* last_slash = strrchr(job_dir, '/');
    if (job_dir[0] != '/' || last_slash == nullptr || last_slash == job_dir ||
        last_slash[1] == '\0') {
      return false;
    }
    tmp.Add(job_dir).Add("/tmp");
    shm.Add(job_dir).Add("/shm");
    for (const char* c = job_dir; c != last_slash; ++c) scratch_root.AddChar(*c);
    set = !tmp.truncated() && !shm.truncated() && !scratch_root.truncated();
    return set;
  }
};

// See the file comment. False with errno set and `*step` the step that failed.
inline bool EnterPrivateTmp(const PrivateTmp& paths, int* step) {
  *step = kUnshare;
  if (unshare(CLONE_NEWNS) != 0) return false;
  *step = kSlave;
  if (mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) return false;
  *step = kBindTmp;
  if (mount(paths.tmp.c_str(), "/tmp", nullptr, MS_BIND, nullptr) != 0) return false;
  *step = kBindShm;
  if (mount(paths.shm.c_str(), "/dev/shm", nullptr, MS_BIND, nullptr) != 0) return false;
  // EINVAL: not a mount point here (an agent that keeps job directories on a plain directory).
  *step = kHideScratch;
  return umount2(paths.scratch_root.c_str(), MNT_DETACH) == 0 || errno == EINVAL;
}

// What failed, for the launch error: "cannot mount <JOB_DIR>/tmp over /tmp" and the like.
template <size_t N>
void DescribePrivateTmpStep(const PrivateTmp& paths, int step, Text<N>* text) {
  text->Add("cannot give the replica its job's private /tmp and /dev/shm: ");
  switch (step) {
    case kUnshare:
      text->Add("unshare(CLONE_NEWNS)");
      break;
    case kSlave:
      text->Add("cannot make / a slave mount");
      break;
    case kBindTmp:
      text->Add("cannot mount ").Add(paths.tmp.c_str()).Add(" over /tmp");
      break;
    case kBindShm:
      text->Add("cannot mount ").Add(paths.shm.c_str()).Add(" over /dev/shm");
      break;
    default:
      text->Add("cannot detach ").Add(paths.scratch_root.c_str());
      break;
  }
}

}  // namespace trainctl::shim
