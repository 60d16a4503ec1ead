// The OCI runtime bundle of a replica that runs in a container: the config.json that
// `runc run --bundle <dir> <id>` reads (proto/trainctl/runtime/oci.proto), built from what the
// launcher knows about the replica, and written to the bundle directory.
//
// The container BuildContainerSpec describes:
//   - root: ContainerRequest::rootfs (the replica's overlay, or the image's rootfs read-only).
//   - namespaces: ipc and mount of its own, and uts when a hostname is asked for; the host's
//     network (a replica needs the host's interfaces and the ports allocated to it), process ids
//     (signals from the host reach the replica as they reach a host process: a pid 1 of a
//     namespace of its own would ignore SIGTERM without a handler; and NCCL's CUDA IPC between
//     the replicas of a host needs one pid namespace) and user namespace (no user namespace: the
//     uid and gid are the host's). /etc/resolv.conf and /etc/hosts are the host's, read-only
//     (runc fails when the host lacks one).
//   - the mounts `runc spec` writes (/proc, /dev, /dev/pts, /dev/shm, /dev/mqueue, /sys and
//     /sys/fs/cgroup read-only), then the request's binds (nosuid, nodev; read-only where asked),
//     parents before children. A bind at /dev/shm (the job's, agents/job_scratch.h) replaces
//     the private tmpfs there, which otherwise has the kernel's default size (half the host's
//     memory, charged to the memory cgroup of whoever writes it).
//   - the device cgroup: every device denied, then the standard set allowed (null, zero, full,
//     random, urandom, tty, ptmx and the container's ptys), then exactly the request's devices
//     (and those agents/cdi.h's ApplyCdiEdits adds). runc appends its own defaults, the same set
//     plus mknod of any node, which a process without CAP_MKNOD cannot use.
//   - linux.cgroupsPath: the request's cgroup (the run's own, so that its limits and OOM
//     accounting stay the agent's); linux.resources holds the device rules and nothing else.
//   - the process: the request's args, env (PATH added when missing: runc looks args[0] up
//     in it), cwd, uid, gid and groups; no terminal; noNewPrivileges; no capabilities unless the
//     uid is 0, which gets `runc spec`'s three (CAP_AUDIT_WRITE, CAP_KILL,
//     CAP_NET_BIND_SERVICE); rlimits and oom_score_adj inherited (from runc, so from the
//     replica's trainctl-shim) unless ContainerRequest::oom_score_adj is set.
//   - masked and read-only paths as `runc spec` writes them.
//
//   ContainerRequest req;
//   req.rootfs = overlay_merged_dir;
//   req.args = {"python", "train.py"};
//   req.uid = user.uid; req.gid = user.gid;
//   req.mounts.push_back({checkpoint_dir, "/checkpoints", /*read_only=*/false});
//   req.cgroups_path = "/trainctl/runs/job-1_1_worker-0_0";
//   runtime::Spec spec = BuildContainerSpec(req);
//   ApplyCdiEdits(edits, &spec);                        // agents/cdi.h: the replica's GPUs
//   TC_RETURN_IF_ERROR(WriteBundle(bundle_dir, spec));  // then: runc run --bundle bundle_dir id
//
// Thread-safe: the functions keep no state.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message.h"
#include "trainctl/runtime/oci.pb.h"

namespace trainctl::agent {

// The runtime-spec version config.json declares; runc 1.1 implements 1.0.2.
inline constexpr char kOciVersion[] = "1.0.2";
// PATH of a container whose request has none.
inline constexpr char kContainerDefaultPath[] =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// A host path bound into the container (rbind, nosuid, nodev).
struct BindMount {
  std::string source;       // on the host
  std::string destination;  // in the container, absolute
  bool read_only = false;
};

// A device node the container gets and may use.
struct ContainerDevice {
  std::string path;  // in the container, "/dev/nvidia0"
  char type = 'c';   // 'c' or 'b'
  int64_t major_number = 0;
  int64_t minor_number = 0;
  uint32_t file_mode = 0666;
  std::string access = "rwm";  // what the device cgroup allows: r, w, m
};

struct ContainerRequest {
  // The root filesystem, absolute: an overlay's merged directory, or an image's rootfs.
  std::string rootfs;
  // Mounts the root read-only (after runc made the mount points the binds need).
  bool readonly_rootfs = false;
  std::vector<std::string> args;
  std::vector<std::string> env;  // "NAME=VALUE"
  std::string cwd = "/";
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> additional_gids;
  // The container's hostname in a UTS namespace of its own; "" keeps the host's (and namespace).
  std::string hostname;
  // The checkpoint directory, the job's working directory (read-only), the run directory, the
  // job's /tmp and /dev/shm, operator-allowed host paths, ... In any order.
  std::vector<BindMount> mounts;
  // linux.cgroupsPath; "" lets runc make a cgroup of its own for the container.
  std::string cgroups_path;
  std::vector<ContainerDevice> devices;
  std::optional<int> oom_score_adj;
};

// The spec of the container `req` describes (above). Pure: touches nothing on the host.
runtime::Spec BuildContainerSpec(const ContainerRequest& req);

// Adds `mount` to spec->mounts, in the place of any mount with the same destination, and keeps
// the mounts ordered so that none comes before one it lies under (a stable sort by the number of
// components of the destination).
void SetMount(const runtime::Mount& mount, runtime::Spec* spec);

// Sets "NAME=VALUE" in spec->process.env, replacing any entry of the same NAME.
void SetEnv(const std::string& entry, runtime::Spec* spec);

// `message` as JSON with protobuf's JSON mapping of names (json_name: "ociVersion",
// "noNewPrivileges", ...) and values, except that 64-bit integers are JSON numbers, not strings,
// as runc's decoder needs. Like protobuf's printer it leaves out unset fields (proto3 scalars that
// are 0, "" or false, empty lists and maps, absent messages and optionals). Indented with two
// spaces; map keys sorted. INVALID_ARGUMENT naming the field when a string is not UTF-8.
absl::StatusOr<std::string> SpecToJson(const google::protobuf::Message& message);

// Writes SpecToJson(spec) to <bundle_dir>/config.json, mode 0600, atomically (a temporary file
// renamed over it). Creates bundle_dir (mode 0700) when it does not exist; its parent must.
absl::Status WriteBundle(const std::string& bundle_dir, const runtime::Spec& spec);

}  // namespace trainctl::agent
