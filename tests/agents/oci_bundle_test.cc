// The OCI runtime bundle (agents/oci_bundle.h): the spec BuildContainerSpec makes, its JSON (the
// runtime-spec's keys, 64-bit integers as numbers) and WriteBundle; then, as root with runc and
// busybox-static installed, a real container: a busybox rootfs given two of four synthetic
// devices of a CDI spec (agents/cdi.h) by `runc run`, checked from inside for its devices, user,
// environment and mounts and for what the device cgroup allows; and runc's exit status. Without
// root, runc or a static busybox that test skips with a WARN saying why.
#include "agents/oci_bundle.h"

#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agents/cdi.h"
#include "agents/spawn.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace oci_bundle_test {

using ::trainctl::agent::testing::ModeOf;
using ::trainctl::agent::testing::ReadFile;
using ::trainctl::agent::testing::TempDir;
using ::trainctl::agent::testing::WaitUntil;

std::vector<std::string> Destinations(const runtime::Spec& spec) {
  std::vector<std::string> out;
  for (const runtime::Mount& m : spec.mounts()) out.push_back(m.destination());
  return out;
}

const runtime::Mount* FindMount(const runtime::Spec& spec, const std::string& destination) {
  for (const runtime::Mount& m : spec.mounts()) {
    if (m.destination() == destination) return &m;
  }
  return nullptr;
}

std::vector<std::string> Options(const runtime::Mount& m) {
  return {m.options().begin(), m.options().end()};
}

ContainerRequest SampleRequest() {
  ContainerRequest req;
  req.rootfs = "/var/lib/trainctl-agent/runs/r1/rootfs";
  req.args = {"python", "train.py"};
  req.env = {"RANK=0"};
  req.cwd = "/work";
  req.uid = 1000;
  req.gid = 1000;
  req.additional_gids = {44};
  req.hostname = "node-1";
  req.mounts = {{"/data/jobs/j1/work", "/work", true},
                {"/data/ckpt/j1", "/work/checkpoints", false},
                {"/run/trainctl/scratch/j1/shm", "/dev/shm", false}};
  req.cgroups_path = "/trainctl/runs/j1_1_worker-0_0";
  req.devices = {{"/dev/nvidia0", 'c', 195, 0, 0666, "rwm"}};
  return req;
}

TEST_CASE("a container spec: host network and pids, own ipc/uts/mount, no capabilities", "[oci]") {
  runtime::Spec spec = BuildContainerSpec(SampleRequest());
  CHECK(spec.oci_version() == kOciVersion);
  CHECK(spec.root().path() == "/var/lib/trainctl-agent/runs/r1/rootfs");
  CHECK_FALSE(spec.root().readonly());
  CHECK(spec.hostname() == "node-1");

  const runtime::Process& process = spec.process();
  REQUIRE(process.has_terminal());
  CHECK_FALSE(process.terminal());
  CHECK(process.user().uid() == 1000);
  CHECK(process.user().gid() == 1000);
  CHECK(process.user().additional_gids_size() == 1);
  CHECK(process.args(1) == "train.py");
  CHECK(std::vector<std::string>(process.env().begin(), process.env().end()) ==
        std::vector<std::string>{"RANK=0", absl::StrCat("PATH=", kContainerDefaultPath)});
  CHECK(process.cwd() == "/work");
  REQUIRE(process.has_capabilities());  // present and empty: no capabilities at all
  CHECK(process.capabilities().ByteSizeLong() == 0);
  CHECK(process.no_new_privileges());
  CHECK(process.rlimits().empty());
  CHECK_FALSE(process.has_oom_score_adj());

  std::vector<std::string> namespaces;
  for (const runtime::Namespace& ns : spec.linux_config().namespaces()) {
    namespaces.push_back(ns.type());
    CHECK(ns.path().empty());
  }
  CHECK(namespaces == std::vector<std::string>{"ipc", "mount", "uts"});
  CHECK(spec.linux_config().cgroups_path() == "/trainctl/runs/j1_1_worker-0_0");

  // runc spec's mounts, the host's name resolution, the request's binds; parents first; the
  // job's /dev/shm instead of a tmpfs.
  CHECK(Destinations(spec) == std::vector<std::string>{"/proc", "/dev", "/sys", "/work", "/dev/pts",
                                                       "/dev/shm", "/dev/mqueue",
                                                       "/etc/resolv.conf", "/etc/hosts",
                                                       "/work/checkpoints", "/sys/fs/cgroup"});
  CHECK(FindMount(spec, "/proc")->type() == "proc");
  CHECK(Options(*FindMount(spec, "/sys")) ==
        std::vector<std::string>{"nosuid", "noexec", "nodev", "ro"});
  const runtime::Mount* shm = FindMount(spec, "/dev/shm");
  CHECK(shm->type() == "bind");
  CHECK(shm->source() == "/run/trainctl/scratch/j1/shm");
  CHECK(Options(*shm) == std::vector<std::string>{"rbind", "nosuid", "nodev", "rw"});
  CHECK(Options(*FindMount(spec, "/work")) ==
        std::vector<std::string>{"rbind", "nosuid", "nodev", "ro"});
  const runtime::Mount* resolv = FindMount(spec, "/etc/resolv.conf");
  CHECK(resolv->source() == "/etc/resolv.conf");
  CHECK(Options(*resolv) == std::vector<std::string>{"rbind", "nosuid", "nodev", "ro"});
  CHECK(FindMount(spec, "/etc/hosts")->source() == "/etc/hosts");

  // Devices: deny all, the standard set, then exactly the request's.
  const runtime::Resources& resources = spec.linux_config().resources();
  CHECK_FALSE(resources.has_memory());
  CHECK_FALSE(resources.has_cpu());
  CHECK_FALSE(resources.has_pids());
  REQUIRE(resources.devices_size() == 10);
  const runtime::DeviceRule& deny = resources.devices(0);
  REQUIRE(deny.has_allow());
  CHECK_FALSE(deny.allow());
  CHECK(deny.type().empty());
  CHECK_FALSE(deny.has_major_number());
  CHECK_FALSE(deny.has_minor_number());
  CHECK(deny.access() == "rwm");
  std::set<std::string> allowed;
  for (int i = 1; i < resources.devices_size(); ++i) {
    const runtime::DeviceRule& r = resources.devices(i);
    CHECK(r.allow());
    allowed.insert(absl::StrCat(r.type(), " ", r.major_number(), ":",
                                r.has_minor_number() ? absl::StrCat(r.minor_number()) : "*", " ",
                                r.access()));
  }
  CHECK(allowed == std::set<std::string>{"c 1:3 rwm", "c 1:5 rwm", "c 1:7 rwm", "c 1:8 rwm",
                                         "c 1:9 rwm", "c 5:0 rwm", "c 5:2 rwm", "c 136:* rwm",
                                         "c 195:0 rwm"});
  REQUIRE(spec.linux_config().devices_size() == 1);
  const runtime::Device& gpu = spec.linux_config().devices(0);
  CHECK(gpu.path() == "/dev/nvidia0");
  CHECK(gpu.type() == "c");
  CHECK(gpu.major_number() == 195);
  CHECK(gpu.has_minor_number());
  CHECK(gpu.file_mode() == 0666);

  const auto& masked = spec.linux_config().masked_paths();
  CHECK(std::vector<std::string>(masked.begin(), masked.end()) ==
        std::vector<std::string>{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
                                 "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
                                 "/proc/sched_debug", "/sys/firmware", "/proc/scsi"});
  const auto& readonly = spec.linux_config().readonly_paths();
  CHECK(std::vector<std::string>(readonly.begin(), readonly.end()) ==
        std::vector<std::string>{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                                 "/proc/sysrq-trigger"});
}

TEST_CASE("a root container keeps runc spec's three capabilities and its PATH", "[oci]") {
  ContainerRequest req;
  req.rootfs = "/rootfs";
  req.readonly_rootfs = true;
  req.args = {"sh"};
  req.env = {"PATH=/opt/bin"};
  req.oom_score_adj = 500;
  runtime::Spec spec = BuildContainerSpec(req);
  CHECK(spec.root().readonly());
  CHECK(spec.hostname().empty());
  // No hostname: the host's, and no UTS namespace (runc refuses a hostname without one).
  REQUIRE(spec.linux_config().namespaces_size() == 2);
  CHECK(spec.linux_config().namespaces(0).type() == "ipc");
  CHECK(spec.linux_config().namespaces(1).type() == "mount");
  CHECK(std::vector<std::string>(spec.process().env().begin(), spec.process().env().end()) ==
        std::vector<std::string>{"PATH=/opt/bin"});
  const runtime::Capabilities& caps = spec.process().capabilities();
  const std::vector<std::string> three = {"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"};
  CHECK(std::vector<std::string>(caps.bounding().begin(), caps.bounding().end()) == three);
  CHECK(std::vector<std::string>(caps.effective().begin(), caps.effective().end()) == three);
  CHECK(std::vector<std::string>(caps.permitted().begin(), caps.permitted().end()) == three);
  CHECK(caps.inheritable().empty());
  CHECK(spec.process().oom_score_adj() == 500);
  CHECK(spec.linux_config().cgroups_path().empty());
  CHECK(FindMount(spec, "/dev/shm")->type() == "tmpfs");
  CHECK(Options(*FindMount(spec, "/dev/shm")) ==
        std::vector<std::string>{"nosuid", "noexec", "nodev", "mode=1777"});
}

TEST_CASE("config.json has the runtime-spec's keys and 64-bit integers as numbers", "[oci]") {
  runtime::Spec spec = BuildContainerSpec(SampleRequest());
  spec.mutable_linux_config()->mutable_resources()->mutable_memory()->set_limit(int64_t{1} << 40);
  runtime::Rlimit* memlock = spec.mutable_process()->add_rlimits();
  memlock->set_type("RLIMIT_MEMLOCK");
  memlock->set_hard(UINT64_MAX);
  memlock->set_soft(UINT64_MAX);
  (*spec.mutable_annotations())["org.trainctl.run"] = "j1/1/worker-0/0";
  spec.mutable_hooks()->add_create_container()->set_path("/usr/bin/hook");

  absl::StatusOr<std::string> json = SpecToJson(spec);
  REQUIRE(json.ok());
  INFO(*json);
  for (const char* key :
       {"\"ociVersion\": \"1.0.2\"",
        "\"process\": {",
        "\"terminal\": false",
        "\"user\": {",
        "\"uid\": 1000",
        "\"additionalGids\": [",
        "\"noNewPrivileges\": true",
        "\"capabilities\": {}",
        "\"root\": {",
        "\"hostname\": \"node-1\"",
        "\"mounts\": [",
        "\"destination\": \"/proc\"",
        "\"linux\": {",
        "\"namespaces\": [",
        "\"cgroupsPath\": ",
        "\"resources\": {",
        "\"allow\": false",
        "\"major\": 195",
        "\"minor\": 0",
        "\"fileMode\": 438",
        "\"maskedPaths\": [",
        "\"readonlyPaths\": [",
        "\"limit\": 1099511627776",
        "\"hard\": 18446744073709551615",
        "\"createContainer\": [",
        "\"annotations\": {\n    \"org.trainctl.run\": \"j1/1/worker-0/0\"\n  }"}) {
    CHECK_THAT(*json, Catch::Contains(key));
  }
  // The deny-all rule has no "major" (a wildcard), nor "type".
  CHECK_THAT(*json,
             Catch::Contains("{\n          \"allow\": false,\n          \"access\": \"rwm\"\n"
                             "        }"));
  CHECK_FALSE(absl::StrContains(*json, "\"linuxConfig\""));
  CHECK_FALSE(absl::StrContains(*json, "majorNumber"));
  CHECK_FALSE(absl::StrContains(*json, "\"195\""));

  // Protobuf's own JSON parser reads it back to the same message.
  runtime::Spec parsed;
  REQUIRE(google::protobuf::util::JsonStringToMessage(*json, &parsed).ok());
  CHECK(google::protobuf::util::MessageDifferencer::Equals(spec, parsed));

  spec.mutable_process()->add_env("BAD=\xff");
  absl::StatusOr<std::string> bad = SpecToJson(spec);
  CHECK(bad.status() == absl::InvalidArgumentError("process.env[2]: not UTF-8 text"));
}

TEST_CASE("WriteBundle writes config.json 0600 in a 0700 bundle directory", "[oci]") {
  TempDir dir;
  REQUIRE(!dir.path().empty());
  const std::string bundle = dir.path() + "/bundle";
  runtime::Spec spec = BuildContainerSpec(SampleRequest());
  REQUIRE(WriteBundle(bundle, spec).ok());
  CHECK(ModeOf(bundle) == 0700);
  CHECK(ModeOf(bundle + "/config.json") == 0600);
  CHECK(ReadFile(bundle + "/config.json") == *SpecToJson(spec));

  spec.set_hostname("other");
  REQUIRE(WriteBundle(bundle, spec).ok());  // over the old one
  CHECK(ReadFile(bundle + "/config.json") == *SpecToJson(spec));
  CHECK(std::distance(std::filesystem::directory_iterator(bundle),
                      std::filesystem::directory_iterator()) == 1);  // no temporary left

  absl::Status missing = WriteBundle(dir.path() + "/no/such/bundle", spec);
  CHECK(missing.code() == absl::StatusCode::kInternal);
  CHECK_THAT(std::string(missing.message()), Catch::Contains("No such file or directory"));
}

// --- a real container under runc ---

// `name` in $PATH or the sbin directories; "" when missing.
std::string FindProgram(const std::string& name) {
  const char* path = getenv("PATH");
  std::string dirs = absl::StrCat(path != nullptr ? path : "", ":/usr/local/sbin:/usr/sbin:/sbin");
  for (absl::string_view dir : absl::StrSplit(dirs, ':', absl::SkipEmpty())) {
    std::string candidate = absl::StrCat(dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// Whether `path` is a 64-bit ELF program without an interpreter (runs in an empty rootfs).
bool IsStaticProgram(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  Elf64_Ehdr header;
  if (!in.read(reinterpret_cast<char*>(&header), sizeof header) ||
      std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64) {
    return false;
  }
  for (int i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr program;
    in.seekg(static_cast<std::streamoff>(header.e_phoff + i * header.e_phentsize));
    if (!in.read(reinterpret_cast<char*>(&program), sizeof program)) return false;
    if (program.p_type == PT_INTERP) return false;
  }
  return true;
}

struct RuncResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs `runc args...` with its output in <dir>/<log>, for at most a minute.
absl::StatusOr<RuncResult> RunRunc(const std::string& runc, const std::vector<std::string>& args,
                                   const std::string& dir, const std::string& log) {
  const std::string log_path = dir + "/" + log;
  int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError("cannot create " + log_path);
  SpawnRequest request;
  request.argv = {runc};
  request.argv.insert(request.argv.end(), args.begin(), args.end());
  request.env = {absl::StrCat("PATH=", kContainerDefaultPath)};
  request.working_dir = dir;
  request.output_fd = fd;
  absl::StatusOr<pid_t> pid = SpawnProcess(request);
  close(fd);
  if (!pid.ok()) return pid.status();
  int status = 0;
  if (!WaitUntil([&] { return waitpid(*pid, &status, WNOHANG) == *pid; }, absl::Minutes(1))) {
    kill(*pid, SIGKILL);
    waitpid(*pid, &status, 0);
    return absl::DeadlineExceededError("runc ran for more than a minute: " + ReadFile(log_path));
  }
  RuncResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.output = ReadFile(log_path);
  return result;
}

// Deletes the containers and their cgroups, whatever runc left.
struct RuncCleanup {
  std::string runc;
  std::string state_dir;
  std::string work_dir;
  std::string cgroups_path;
  std::vector<std::string> ids;
  ~RuncCleanup() {
    for (const std::string& id : ids) {
      RunRunc(runc, {"--root", state_dir, "delete", "--force", id}, work_dir, "delete.log")
          .IgnoreError();
    }
    std::error_code ignored;
    for (const auto& entry : std::filesystem::directory_iterator("/sys/fs/cgroup", ignored)) {
      rmdir((entry.path().string() + cgroups_path).c_str());
    }
    rmdir(("/sys/fs/cgroup" + cgroups_path).c_str());
  }
};

TEST_CASE("runc runs the bundle: two of four CDI devices, user, env, mounts, cgroup", "[oci]") {
  if (geteuid() != 0) {
    WARN("not root: runc cannot make containers, skipped");
    return;
  }
  const std::string runc = FindProgram("runc");
  if (runc.empty()) {
    WARN("no runc on PATH (apt-get install runc), skipped");
    return;
  }
  if (!IsStaticProgram("/bin/busybox")) {
    WARN("no static /bin/busybox (apt-get install busybox-static), skipped");
    return;
  }
  const int major_number = ::trainctl::agent::testing::UnusedCharMajor();
  if (major_number < 0) {
    WARN("no unused character device major in 234..254, skipped");
    return;
  }
  TempDir dir;
  REQUIRE(!dir.path().empty());
  const std::string root = dir.path();

  // The rootfs: busybox and a few of its applets.
  namespace fs = std::filesystem;
  fs::create_directories(root + "/rootfs/bin");
  fs::copy_file("/bin/busybox", root + "/rootfs/bin/busybox");
  REQUIRE(chmod((root + "/rootfs/bin/busybox").c_str(), 0755) == 0);
  for (const char* applet : {"sh", "cat", "ls", "echo", "id", "test"}) {
    fs::create_symlink("busybox", root + "/rootfs/bin/" + applet);
  }
  // Four device nodes no driver answers to, a file per device, a data directory.
  fs::create_directories(root + "/nodes");
  fs::create_directories(root + "/files");
  fs::create_directories(root + "/data");
  std::ofstream(root + "/data/hello.txt") << "hello\n";
  std::string cdi_spec =
      "cdiVersion: 0.6.0\nkind: example.com/dev\ncontainerEdits:\n  env: [EXDEV_KIND=example]\n"
      "devices:\n";
  for (int i = 0; i < 4; ++i) {
    const std::string node = absl::StrCat(root, "/nodes/exdev", i);
    REQUIRE(mknod(node.c_str(), S_IFCHR | 0666, makedev(major_number, i)) == 0);
    REQUIRE(chmod(node.c_str(), 0666) == 0);
    const std::string file = absl::StrCat(root, "/files/dev", i, ".txt");
    std::ofstream(file) << "device " << i << "\n";
    REQUIRE(chmod(file.c_str(), 0644) == 0);
    absl::StrAppend(&cdi_spec, "- name: dev", i, "\n  containerEdits:\n    env: [EXDEV_", i, "=", i,
                    "]\n    deviceNodes: [{path: /dev/exdev", i, ", hostPath: ", node,
                    "}]\n    mounts: [{hostPath: ", file, ", containerPath: /mnt/dev", i,
                    ".txt, options: [ro, nosuid, nodev, bind]}]\n");
  }
  fs::create_directories(root + "/cdi");
  std::ofstream(root + "/cdi/example.yaml") << cdi_spec;

  absl::StatusOr<CdiRegistry> registry = LoadCdiSpecs({root + "/cdi"});
  REQUIRE(registry.ok());
  REQUIRE(registry->errors.empty());
  absl::StatusOr<runtime::ContainerEdits> edits =
      ResolveCdiDevices(*registry, {"example.com/dev=dev1", "example.com/dev=dev3"});
  REQUIRE(edits.ok());

  RuncCleanup cleanup;
  cleanup.runc = runc;
  cleanup.state_dir = root + "/state";
  cleanup.work_dir = root;
  cleanup.cgroups_path = absl::StrCat("/trainctl-oci-test-", getpid());
  fs::create_directories(cleanup.state_dir);

  ContainerRequest req;
  req.rootfs = root + "/rootfs";
  req.readonly_rootfs = true;
  req.args = {"sh", "-c",
              "ls /dev/exdev*; echo \"user=$(id -u):$(id -g)\"; "
              "echo \"env=$EXDEV_KIND,${EXDEV_0:-unset},$EXDEV_1,${EXDEV_2:-unset},$EXDEV_3\"; "
              "cat /mnt/dev1.txt /mnt/dev3.txt /data/hello.txt; "
              "test -e /mnt/dev0.txt || echo no dev0.txt; "
              "for d in /dev/exdev1 /dev/exdev3 /dev/denied0; do cat $d; done; echo end"};
  req.uid = 1234;
  req.gid = 1234;
  req.hostname = "oci-test";
  req.mounts = {{root + "/data", "/data", true}};
  req.cgroups_path = cleanup.cgroups_path;
  runtime::Spec spec = BuildContainerSpec(req);
  ApplyCdiEdits(*edits, &spec);
  // A node in the container's /dev that the device cgroup does not allow.
  runtime::Device* denied = spec.mutable_linux_config()->add_devices();
  denied->set_path("/dev/denied0");
  denied->set_type("c");
  denied->set_major_number(major_number);
  denied->set_minor_number(0);
  denied->set_file_mode(0666);
  REQUIRE(WriteBundle(root + "/bundle", spec).ok());

  const std::string id = absl::StrCat("trainctl-oci-test-", getpid(), "-1");
  cleanup.ids.push_back(id);
  absl::StatusOr<RuncResult> run = RunRunc(
      runc, {"--root", cleanup.state_dir, "run", "--bundle", root + "/bundle", id}, root, "1.log");
  REQUIRE(run.ok());
  INFO("runc's output:\n" << run->output);
  CHECK(run->exit_code == 0);
  const std::vector<std::string> lines = absl::StrSplit(run->output, '\n');
  auto has_line = [&](const std::string& line) {
    return std::find(lines.begin(), lines.end(), line) != lines.end();
  };
  auto line_with = [&](const std::string& a, const std::string& b) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) {
      return absl::StrContains(l, a) && absl::StrContains(l, b);
    });
  };
  // The output without cat's complaints, which come on stderr and may land anywhere in it.
  std::string out;
  for (const std::string& line : lines) {
    if (!absl::StartsWith(line, "cat: ")) absl::StrAppend(&out, line, "\n");
  }
  // Exactly the two devices asked for.
  CHECK(absl::StrContains(out, "/dev/exdev1\n/dev/exdev3\nuser="));
  CHECK_FALSE(absl::StrContains(run->output, "/dev/exdev0"));
  CHECK_FALSE(absl::StrContains(run->output, "/dev/exdev2"));
  CHECK(has_line("user=1234:1234"));
  CHECK(has_line("env=example,unset,1,unset,3"));
  CHECK(absl::StrContains(out, "device 1\ndevice 3\nhello\n"));
  CHECK(has_line("no dev0.txt"));
  // The cgroup lets the allowed nodes be opened (no driver: ENXIO) and refuses the other.
  CHECK(line_with("/dev/exdev1", "No such device or address"));
  CHECK(line_with("/dev/exdev3", "No such device or address"));
  CHECK(line_with("/dev/denied0", "Operation not permitted"));
  CHECK_FALSE(line_with("/dev/exdev", "Operation not permitted"));
  CHECK(has_line("end"));

  // runc exits with the container's status.
  spec.mutable_process()->clear_args();
  for (const char* arg : {"sh", "-c", "exit 3"}) spec.mutable_process()->add_args(arg);
  REQUIRE(WriteBundle(root + "/bundle", spec).ok());
  const std::string id2 = absl::StrCat("trainctl-oci-test-", getpid(), "-2");
  cleanup.ids.push_back(id2);
  absl::StatusOr<RuncResult> exit3 = RunRunc(
      runc, {"--root", cleanup.state_dir, "run", "--bundle", root + "/bundle", id2}, root, "2.log");
  REQUIRE(exit3.ok());
  INFO("runc's output:\n" << exit3->output);
  CHECK(exit3->exit_code == 3);
}

}  // namespace oci_bundle_test
}  // namespace trainctl::agent
