// How one replica runs in a container: the files a container needs on the host and the runc
// command its trainctl-shim runs in the foreground. The launcher (launcher.h) decides everything
// it decides for a host replica (user, environment, working and checkpoint directories, cgroups,
// the job's /tmp and /dev/shm); PrepareContainer turns that into a container of the image the
// image cache (image_cache.h) unpacked, and RemoveContainer takes it away once the run ended.
//
// On the host, per run, under Settings::containers_dir/<container id>:
//   upper/, work/  the run's writable layer (overlayfs upperdir and workdir), removed with the run
//   rootfs/        the overlay: the image's unpacked root (shared read-only by every run of the
//                  image) below upper/
//   bundle/        config.json (oci_bundle.h), runc's bundle
//   digest, image  the image's digest and reference, for an agent that adopts the run after a
//                  restart; run: the run id
//
// What the replica inside sees (the same as a host replica, so that one job spec works both
// ways): its run directory (TRAINCTL_RUN_DIR, writable, with the progress file), its checkpoint
// directory, the job's uploaded working directory (read-only) and its notice file's directory,
// all at their host paths; the job's /tmp and /dev/shm of the host; operators' binds
// (--image-bind) and the job's mounts (WorkerPool.mounts, only under --image-mount-roots); the
// host's network, hostname and process ids (signals reach the replica as on the host, and NCCL's
// CUDA IPC between the replicas of a host works); the uid and groups the launcher chose (no user
// namespace); the image's environment, then the replica's (ranks, CLUSTER_SPEC, MASTER_*,
// TRAINCTL_*); and exactly its GPUs, through the host's CDI specs (cdi.h).
//
// cgroups: runc puts the container into "<the run's memory cgroup>/ctr", with the run's memory
// limit, CPU quota or exclusive CPUs and pids.max set there too: the limits hold whichever
// hierarchies the host splits controllers into, and the kernel's OOM kills are counted in that
// cgroup, which `runc run --keep` leaves for the shim to read before RemoveContainer deletes it.
//
// runc itself stays in the shim's cgroup and session; the container's process gets a session of
// its own. SIGTERM and the other signals the shim passes on reach runc, which forwards them to the
// container; a SIGKILL ends runc alone, and RemoveContainer (`runc delete --force`) kills the
// container when the run's end is reported.
//
// Thread-safe: no state.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agents/image_cache.h"
#include "agents/oci_bundle.h"
#include "agents/run_cgroup.h"
#include "agents/run_user.h"
#include "trainctl/v1/agent.pb.h"

namespace trainctl::agent {

// The label an agent that can run images registers with; pools with an image go only there.
inline constexpr char kImagesLabel[] = "trainctl.io/images";
// The CDI device kind of a node's GPUs: device "<kind>=<index>" is GPU <index>, as
// `nvidia-ctk cdi generate` names them.
inline constexpr char kDefaultCdiGpuKind[] = "nvidia.com/gpu";

struct ContainerSettings {
  // runc; a name is looked up in PATH.
  std::string runc = "runc";
  // runc's --root: its state of the node's containers (best on a tmpfs, like the run records).
  std::string runc_root;
  // Where each run's writable layer, overlay and bundle live.
  std::string containers_dir;
  // Host paths every container gets (--image-bind).
  std::vector<BindMount> binds;
  // Where a job's mounts (LaunchReplica.mounts) may come from (--image-mount-roots); empty: none.
  std::vector<std::string> mount_roots;
  // Where CDI specs are read (cdi.h), at each launch with GPUs.
  std::vector<std::string> cdi_dirs;
  std::string cdi_gpu_kind = kDefaultCdiGpuKind;
  // The run cgroups of the node (null: none): the container's goes under the run's.
  std::shared_ptr<const RunCgroups> cgroups;
};

// What the launcher decided for the run.
struct ContainerInputs {
  const trainctl::v1::LaunchReplica* launch = nullptr;
  // The image, acquired (pinned) for the run.
  Image image;
  // Who the replica runs as; nullopt: root (an agent that is not root cannot run containers).
  std::optional<RunUser> user;
  // The replica's own variables: the launch's env and the TRAINCTL_* ones.
  std::map<std::string, std::string> env;
  // Where the replica starts, and the directories bound at their host paths.
  std::string start_dir;
  std::vector<std::string> writable_dirs;
  std::vector<std::string> read_only_paths;
  // The job's directory whose tmp/ and shm/ become /tmp and /dev/shm; "": the container's own.
  std::string private_tmp;
  int64_t memory_limit_bytes = 0;
  double cpu = 0;
  // Exclusive CPUs as a list ("2-3"); "" for none.
  std::string exclusive_cpus;
  int64_t pids_max = 0;
};

struct PreparedContainer {
  std::string id;
  // What the shim runs: runc run --keep ... in the foreground.
  std::string exec_path;
  std::vector<std::string> argv;
  std::vector<std::string> env;
  std::string working_dir;
  // The container cgroup's memory.events (v2) or memory.oom_control (v1); "" without one.
  std::string memory_events;
};

// "tc-" and the run id with '/' as '_': a valid runc container id.
std::string ContainerId(const std::string& run_id);

// Checks a job's mounts against `roots`: INVALID_ARGUMENT naming the mount and the allowed roots
// when one lies outside them (or a root is a symbolic link's way out).
absl::Status CheckJobMounts(const google::protobuf::RepeatedPtrField<trainctl::v1::ImageMount>& m,
                            const std::vector<std::string>& roots);

// Creates the run's layer, overlay and bundle (above). INVALID_ARGUMENT for what the job asked
// wrongly (a mount outside the allowed roots, a GPU the host's CDI specs do not name is not
// one: that is FAILED_PRECONDITION, the host's); INTERNAL when the host refuses (mount). What was
// created is removed again on failure.
absl::StatusOr<PreparedContainer> PrepareContainer(const ContainerSettings& settings,
                                                   const ContainerInputs& in);

// The digest recorded for the run's container; NOT_FOUND when it has none.
absl::StatusOr<std::string> RecordedContainerDigest(const ContainerSettings& settings,
                                                    const std::string& run_id);

// The image reference recorded for the run's container (LaunchReplica.image); NOT_FOUND when it
// has none.
absl::StatusOr<std::string> RecordedContainerImage(const ContainerSettings& settings,
                                                   const std::string& run_id);

// The run ids of every container directory under settings.containers_dir.
std::vector<std::string> RecordedContainerRuns(const ContainerSettings& settings);

// Kills and deletes the run's container (runc delete --force), unmounts its overlay and removes
// its directory. Idempotent; problems are logged.
void RemoveContainer(const ContainerSettings& settings, const std::string& run_id);

}  // namespace trainctl::agent
