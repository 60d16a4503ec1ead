#include "agents/container_launch.h"

#include <errno.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "agents/cdi.h"
#include "agents/run_files.h"
#include "agents/spawn.h"
#include "agents/tool_run.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {
namespace {

constexpr char kDigestFile[] = "digest";
constexpr char kRunIdFile[] = "run";
constexpr char kImageFile[] = "image";
constexpr char kCgroupsFile[] = "cgroups";

absl::StatusOr<std::string> ReadFirstLine(const std::string& path, const std::string& run_id) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line) || line.empty()) {
    return absl::NotFoundError(absl::StrCat("run ", run_id, " has no container"));
  }
  return line;
}

std::string ContainerDir(const ContainerSettings& settings, const std::string& run_id) {
  return absl::StrCat(settings.containers_dir, "/", ContainerId(run_id));
}

// `path` lies at or under `root` (both lexically normal and absolute).
bool Under(const std::string& path, const std::string& root) {
  if (root == "/") return true;
  return path == root || absl::StartsWith(path, root + "/");
}

bool IsNormalAbsolute(const std::string& path) {
  return !path.empty() && path[0] == '/' &&
         std::filesystem::path(path).lexically_normal().string() == path;
}

absl::Status WriteSmallFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

// The run's memory cgroup, relative to its hierarchy's root ("/system.slice/.../run"); "" when
// the node has no memory cgroups.
std::string RelativeMemoryCgroup(const RunCgroups& cgroups, const std::string& run_id) {
  if (!cgroups.Has(CgroupController::kMemory)) return "";
  const std::string dir = cgroups.RunDir(CgroupController::kMemory, run_id);
  // The hierarchy's mount point is /sys/fs/cgroup (v2, unified) or /sys/fs/cgroup/<name> (v1).
  for (const char* mount : {"/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
    if (absl::StartsWith(dir, absl::StrCat(mount, "/"))) return dir.substr(std::strlen(mount));
  }
  return "";
}

// runc makes the container's cgroup, "<the run's memory cgroup>/ctr", in every v1 hierarchy,
// with the parents it lacks. Where the agent's directory lies elsewhere in a hierarchy (its own
// cgroup differs from one controller to the next, the cpuset's often "/"), runc would make those
// parents too, and two containers starting at once race over a new v1 cpuset that has no CPUs
// yet: the loser's init cannot join it and dies. The agent makes them first, one launch at a time,
// giving each new cpuset its parent's CPUs and memory nodes; the ones it made are listed in the
// container's directory, for RemoveContainer.
absl::Mutex cgroup_parents_mu;

absl::StatusOr<std::vector<std::string>> MakeCgroupParents(const std::string& relative) {
  absl::MutexLock lock(&cgroup_parents_mu);
  std::vector<std::string> made;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/fs/cgroup", error)) {
    const std::string hierarchy = entry.path().string();
    if (entry.is_symlink() || !entry.is_directory() || entry.path().filename() == "unified" ||
        access((hierarchy + "/tasks").c_str(), F_OK) != 0) {
      continue;  // Not a v1 hierarchy (or an alias of one).
    }
    const bool cpuset = entry.path().filename() == "cpuset";
    std::string dir = hierarchy;
    for (absl::string_view part : absl::StrSplit(relative, '/', absl::SkipEmpty())) {
      const std::string parent = dir;
      dir = absl::StrCat(dir, "/", part);
      if (mkdir(dir.c_str(), 0755) != 0) {
        if (errno == EEXIST) continue;
        return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", std::strerror(errno)));
      }
      made.push_back(dir);
      if (!cpuset) continue;
      for (const char* file : {"/cpuset.cpus", "/cpuset.mems"}) {
        std::ifstream in(parent + file);
        std::string value;
        std::getline(in, value);
        std::ofstream out(dir + file);
        out << value << "\n";
      }
    }
  }
  return made;
}

}  // namespace

std::string ContainerId(const std::string& run_id) {
  return absl::StrCat("tc-", absl::StrReplaceAll(run_id, {{"/", "_"}}));
}

absl::Status CheckJobMounts(const google::protobuf::RepeatedPtrField<trainctl::v1::ImageMount>& m,
                            const std::vector<std::string>& roots) {
  for (int i = 0; i < m.size(); ++i) {
    const std::string& host = m[i].host_path();
    if (!IsNormalAbsolute(host) || !IsNormalAbsolute(m[i].path())) {
      return absl::InvalidArgumentError(
          absl::StrCat("mounts[", i, "]: hostPath and path must be absolute and normal, got \"",
                       host, "\" and \"", m[i].path(), "\""));
    }
    // The real path: a link under an allowed root must not lead out of it.
    std::error_code error;
    const std::string real = std::filesystem::canonical(host, error).string();
    if (error) {
      return absl::InvalidArgumentError(absl::StrCat(
          "mounts[", i, "]: hostPath ", host, " cannot be used on this node: ", error.message()));
    }
    bool allowed = false;
    for (const std::string& root : roots)
      allowed = allowed || (Under(host, root) && Under(real, root));
    if (!allowed) {
      return absl::InvalidArgumentError(absl::StrCat(
          "mounts[", i, "]: hostPath ", host, " is not under a directory this node lets jobs mount",
          roots.empty() ? " (it allows none: trainctl-agent --image-mount-roots)"
                        : absl::StrCat(" (", absl::StrJoin(roots, ", "), ")")));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<PreparedContainer> PrepareContainer(const ContainerSettings& settings,
                                                   const ContainerInputs& in) {
  const trainctl::v1::LaunchReplica& launch = *in.launch;
  TC_RETURN_IF_ERROR(CheckJobMounts(launch.mounts(), settings.mount_roots));
  ContainerRequest req;
  // The job's GPUs, through the host's CDI specs.
  std::optional<runtime::ContainerEdits> gpu_edits;
  if (!launch.gpu_devices().empty()) {
    std::vector<std::string> names;
    for (int32_t index : launch.gpu_devices()) {
      names.push_back(absl::StrCat(settings.cdi_gpu_kind, "=", index));
    }
    absl::StatusOr<CdiRegistry> registry = LoadCdiSpecs(settings.cdi_dirs);
    if (!registry.ok()) return absl::FailedPreconditionError(registry.status().message());
    absl::StatusOr<runtime::ContainerEdits> edits = ResolveCdiDevices(*registry, names);
    if (!edits.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("GPUs in images need the node's CDI spec, and ", edits.status().message(),
                       "; on the node: nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml"));
    }
    gpu_edits = *std::move(edits);
  }

  PreparedContainer out;
  out.id = ContainerId(launch.run_id());
  const std::string dir = ContainerDir(settings, launch.run_id());
  RemoveContainer(settings, launch.run_id());  // What an earlier try left.
  TC_RETURN_IF_ERROR(MakeDirs(dir));
  auto fail = [&](absl::Status status) {
    RemoveContainer(settings, launch.run_id());
    return status;
  };
  for (const char* sub : {"upper", "work", "rootfs"}) {
    if (mkdir(absl::StrCat(dir, "/", sub).c_str(), 0755) != 0 && errno != EEXIST) {
      return fail(absl::InternalError(
          absl::StrCat("cannot create ", dir, "/", sub, ": ", std::strerror(errno))));
    }
  }
  if (absl::Status s = WriteSmallFile(absl::StrCat(dir, "/", kRunIdFile), launch.run_id());
      !s.ok()) {
    return fail(s);
  }
  for (const auto& [name, text] :
       {std::pair<const char*, std::string>{kDigestFile, in.image.digest},
        {kImageFile, launch.image()}}) {
    if (absl::Status s = WriteSmallFile(absl::StrCat(dir, "/", name), text); !s.ok()) {
      return fail(s);
    }
  }
  const std::string rootfs = dir + "/rootfs";
  const std::string overlay = absl::StrCat("lowerdir=", in.image.rootfs, ",upperdir=", dir,
                                           "/upper,workdir=", dir, "/work");
  if (mount("overlay", rootfs.c_str(), "overlay", MS_NODEV, overlay.c_str()) != 0) {
    return fail(absl::InternalError(
        absl::StrCat("cannot mount the image's overlay at ", rootfs, ": ", std::strerror(errno))));
  }

  req.rootfs = rootfs;
  // command replaces the image's ENTRYPOINT and CMD; runc looks args[0] up in the PATH below.
  req.args.assign(launch.argv().begin(), launch.argv().end());
  req.env = in.image.env;
  for (const auto& [name, value] : in.env) {
    const std::string entry = absl::StrCat(name, "=", value);
    bool replaced = false;
    for (std::string& existing : req.env) {
      if (absl::StartsWith(existing, name + "=")) {
        existing = entry;
        replaced = true;
      }
    }
    if (!replaced) req.env.push_back(entry);
  }
  if (in.user) {
    req.uid = in.user->uid;
    req.gid = in.user->gid;
    for (gid_t g : in.user->groups) req.additional_gids.push_back(g);
    bool has_home = false;
    for (const std::string& e : req.env) has_home = has_home || absl::StartsWith(e, "HOME=");
    // runc's fallback is the user's home in the image's /etc/passwd, or "/": neither writable.
    if (!has_home && !in.writable_dirs.empty()) {
      req.env.push_back(absl::StrCat("HOME=", in.writable_dirs.front()));
    }
  }
  req.cwd = in.start_dir;
  for (const std::string& path : in.writable_dirs) req.mounts.push_back({path, path, false});
  for (const std::string& path : in.read_only_paths) req.mounts.push_back({path, path, true});
  if (!in.private_tmp.empty()) {
    req.mounts.push_back({in.private_tmp + "/tmp", "/tmp", false});
    req.mounts.push_back({in.private_tmp + "/shm", "/dev/shm", false});
  }
  for (const BindMount& bind : settings.binds) req.mounts.push_back(bind);
  for (const trainctl::v1::ImageMount& m : launch.mounts()) {
    req.mounts.push_back({m.host_path(), m.path(), m.read_only()});
  }
  const std::string memory_cgroup =
      settings.cgroups ? RelativeMemoryCgroup(*settings.cgroups, launch.run_id()) : "";
  req.cgroups_path = memory_cgroup.empty() ? absl::StrCat("/trainctl-containers/", out.id)
                                           : memory_cgroup + "/ctr";
  if (!memory_cgroup.empty()) {
    absl::StatusOr<std::vector<std::string>> made = MakeCgroupParents(memory_cgroup);
    if (!made.ok()) return fail(made.status());
    if (absl::Status s =
            WriteSmallFile(absl::StrCat(dir, "/", kCgroupsFile), absl::StrJoin(*made, "\n"));
        !s.ok()) {
      return fail(s);
    }
  }
  runtime::Spec spec = BuildContainerSpec(req);
  runtime::Resources* resources = spec.mutable_linux_config()->mutable_resources();
  if (in.memory_limit_bytes > 0) resources->mutable_memory()->set_limit(in.memory_limit_bytes);
  if (!in.exclusive_cpus.empty()) {
    resources->mutable_cpu()->set_cpus(in.exclusive_cpus);
  } else if (in.cpu > 0) {
    resources->mutable_cpu()->set_period(100000);
    resources->mutable_cpu()->set_quota(static_cast<int64_t>(in.cpu * 100000));
  }
  if (in.pids_max > 0) resources->mutable_pids()->set_limit(in.pids_max);
  if (gpu_edits) ApplyCdiEdits(*gpu_edits, &spec);
  if (absl::Status s = WriteBundle(dir + "/bundle", spec); !s.ok()) return fail(s);

  out.exec_path = settings.runc;
  if (out.exec_path.find('/') == std::string::npos) {
    absl::StatusOr<std::string> found =
        ResolveCommand(settings.runc, SearchPathOf(CurrentEnvironment()), "/");
    if (!found.ok()) return fail(absl::InternalError(found.status().message()));
    out.exec_path = *found;
  }
  out.argv = {settings.runc, "--root",   settings.runc_root, "run",
              "--keep",      "--bundle", dir + "/bundle",    out.id};
  out.env = {absl::StrCat("PATH=", kContainerDefaultPath)};
  out.working_dir = dir;
  if (settings.cgroups && !memory_cgroup.empty()) {
    const std::string cgroup_dir =
        settings.cgroups->RunDir(CgroupController::kMemory, launch.run_id()) + "/ctr";
    out.memory_events =
        cgroup_dir + (settings.cgroups->VersionOf(CgroupController::kMemory) == CgroupVersion::kV2
                          ? "/memory.events"
                          : "/memory.oom_control");
  }
  return out;
}

absl::StatusOr<std::string> RecordedContainerDigest(const ContainerSettings& settings,
                                                    const std::string& run_id) {
  return ReadFirstLine(absl::StrCat(ContainerDir(settings, run_id), "/", kDigestFile), run_id);
}

absl::StatusOr<std::string> RecordedContainerImage(const ContainerSettings& settings,
                                                   const std::string& run_id) {
  return ReadFirstLine(absl::StrCat(ContainerDir(settings, run_id), "/", kImageFile), run_id);
}

std::vector<std::string> RecordedContainerRuns(const ContainerSettings& settings) {
  std::vector<std::string> out;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(settings.containers_dir, error)) {
    std::ifstream in(entry.path().string() + "/" + kRunIdFile);
    std::string run_id;
    if (in && std::getline(in, run_id) && !run_id.empty()) out.push_back(run_id);
  }
  return out;
}

void RemoveContainer(const ContainerSettings& settings, const std::string& run_id) {
  const std::string id = ContainerId(run_id);
  const std::string dir = ContainerDir(settings, run_id);
  if (access((settings.runc_root + "/" + id).c_str(), F_OK) == 0) {
    ToolRequest request;
    request.argv = {settings.runc, "--root", settings.runc_root, "delete", "--force", id};
    request.env = {absl::StrCat("PATH=", kContainerDefaultPath)};
    request.timeout = absl::Seconds(30);
    ToolOutcome outcome = RunTool(request);
    if (!outcome.ok()) {
      spdlog::warn("run {}: runc delete {}: {}", run_id, id, outcome.Describe(request.timeout));
    }
  }
  // The cgroup parents made for it (deepest last), once runc removed its own.
  std::ifstream made(absl::StrCat(dir, "/", kCgroupsFile));
  std::vector<std::string> cgroups;
  for (std::string line; std::getline(made, line);) {
    if (!line.empty()) cgroups.push_back(line);
  }
  for (auto it = cgroups.rbegin(); it != cgroups.rend(); ++it) {
    rmdir((*it + "/ctr").c_str());  // Where runc could not (it died).
    rmdir(it->c_str());             // Fails while another run needs it: that one removes it.
  }
  const std::string rootfs = dir + "/rootfs";
  if (umount2(rootfs.c_str(), MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT) {
    spdlog::warn("run {}: cannot unmount {}: {}", run_id, rootfs, std::strerror(errno));
  }
  std::error_code error;
  std::filesystem::remove_all(dir, error);
  if (error) spdlog::warn("run {}: cannot remove {}: {}", run_id, dir, error.message());
}

}  // namespace trainctl::agent
