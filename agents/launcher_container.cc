// ProcessLauncher's part in replicas that run in images: what it decided for a run, handed to
// Options::prepare_container (container_launch.h), and the shim request that runs runc instead of
// the replica's command.
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_join.h"
#include "agents/launcher.h"
#include "agents/preemption_notice.h"
#include "agents/run_files.h"
#include "common/status_macros.h"

namespace trainctl::agent {

absl::Status ProcessLauncher::ContainerRequestOf(const trainctl::v1::LaunchReplica& launch,
                                                 std::map<std::string, std::string> env,
                                                 const RunIsolation::Prepared& isolation,
                                                 ShimRequest* request) {
  if (!options_.prepare_container) {
    return absl::FailedPreconditionError("this node's agent cannot run images");
  }
  RunIdParts parts{launch.job_id(), launch.attempt(), launch.replica_name(), launch.restart()};
  ContainerInputs in;
  in.launch = &launch;
  in.user = request->user;
  // Inside, the devices are the container's own, which CUDA may number from 0 (what the host
  // calls GPU 2 may be the container's 0): its GPUs are named by UUID where the node knows them,
  // which means the same GPU whichever way they are counted.
  std::vector<std::string> uuids;
  for (int32_t index : launch.gpu_devices()) {
    for (const trainctl::v1::GpuDevice& gpu : options_.gpu_inventory) {
      if (gpu.index() == index && !gpu.uuid().empty()) uuids.push_back(gpu.uuid());
    }
  }
  if (!uuids.empty() && uuids.size() == static_cast<size_t>(launch.gpu_devices_size())) {
    const std::string visible = absl::StrJoin(uuids, ",");
    env["CUDA_VISIBLE_DEVICES"] = visible;
    env["NVIDIA_VISIBLE_DEVICES"] = visible;
  }
  in.env = std::move(env);
  in.start_dir = request->working_dir;
  in.writable_dirs.push_back(RunWorkingDir(options_.work_dir, parts));
  if (!launch.checkpoint_dir().empty()) in.writable_dirs.push_back(launch.checkpoint_dir());
  if (in.start_dir != in.writable_dirs.front()) in.read_only_paths.push_back(in.start_dir);
  // The notice file's directory, so that a notice written later is seen inside.
  const std::string notices = NoticePath(options_.work_dir, parts);
  const std::string notice_dir = notices.substr(0, notices.rfind('/'));
  if (MakeDirs(notice_dir).ok()) in.read_only_paths.push_back(notice_dir);
  if (auto ca = options_.replica_env.find("TRAINCTL_CA");
      ca != options_.replica_env.end() && access(ca->second.c_str(), R_OK) == 0) {
    in.read_only_paths.push_back(ca->second);
  }
  in.private_tmp = request->private_tmp;
  in.memory_limit_bytes = std::max<int64_t>(launch.resources().memory_mb(), 0) << 20;
  in.cpu = launch.resources().cpu();
  in.exclusive_cpus = isolation.exclusive_cpus;
  in.pids_max = options_.pids_max;
  TC_ASSIGN_OR_RETURN(PreparedContainer container, options_.prepare_container(std::move(in)));
  // runc runs as root, outside the run's cgroups, and makes the container's namespaces itself.
  request->exec_path = container.exec_path;
  request->argv = container.argv;
  request->env = container.env;
  request->working_dir = container.working_dir;
  request->user.reset();
  request->cgroup_join_paths.clear();
  request->memory_events = container.memory_events;
  request->private_tmp.clear();
  return absl::OkStatus();
}

}  // namespace trainctl::agent
