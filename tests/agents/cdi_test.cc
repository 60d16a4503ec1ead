// CDI spec files (agents/cdi.h): parsing a spec as `nvidia-ctk cdi generate` writes it, in YAML
// and JSON; validation; the registry's handling of invalid files, priority and conflicts;
// resolving devices into container edits (device nodes filled in from the host); and applying
// the edits to an OCI spec. The end-to-end run under runc is in oci_bundle_test.cc.
#include "agents/cdi.h"

#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agents/oci_bundle.h"
#include "google/protobuf/util/message_differencer.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace cdi_test {

using ::trainctl::agent::testing::TempDir;

// The shape of what `nvidia-ctk cdi generate` writes for a host with two GPUs (shortened: fewer
// libraries and symlinks).
constexpr char kNvidiaSpec[] = R"(---
cdiVersion: 0.5.0
containerEdits:
  deviceNodes:
  - path: /dev/nvidia-modeset
  - path: /dev/nvidia-uvm
  - path: /dev/nvidia-uvm-tools
  - path: /dev/nvidiactl
  env:
  - NVIDIA_VISIBLE_DEVICES=void
  hooks:
  - args:
    - nvidia-ctk
    - hook
    - update-ldcache
    - --folder
    - /usr/lib/x86_64-linux-gnu
    hookName: createContainer
    path: /usr/bin/nvidia-ctk
  mounts:
  - containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05
    hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05
    options:
    - ro
    - nosuid
    - nodev
    - bind
  - containerPath: /usr/bin/nvidia-smi
    hostPath: /usr/bin/nvidia-smi
    options: [ro, nosuid, nodev, bind]
devices:
- containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
    - path: /dev/dri/card1
    - path: /dev/dri/renderD128
    hooks:
    - args:
      - nvidia-ctk
      - hook
      - create-symlinks
      - --link
      - ../card1::/dev/dri/by-path/pci-0000:07:00.0-card
      hookName: createContainer
      path: /usr/bin/nvidia-ctk
  name: "0"
- containerEdits:
    deviceNodes:
    - path: /dev/nvidia1
  name: "1"
- containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
    - path: /dev/nvidia1
    - path: /dev/dri/card1
    - path: /dev/dri/renderD128
  name: all
kind: nvidia.com/gpu
)";

// A small spec whose device nodes need nothing of the host: "<kind>=<name>" for each name, each
// with one node c 240:<index> and an env entry DEV_<name>=<tag>.
std::string SimpleSpec(const std::string& kind, const std::vector<std::string>& names,
                       const std::string& tag) {
  std::string text = absl::StrCat("cdiVersion: 0.6.0\nkind: ", kind,
                                  "\ncontainerEdits:\n  env: [KIND_", tag, "=1]\ndevices:\n");
  for (size_t i = 0; i < names.size(); ++i) {
    absl::StrAppend(&text, "- name: ", names[i], "\n  containerEdits:\n    env: [DEV_", names[i],
                    "=", tag, "]\n    deviceNodes:\n    - {path: /dev/x", names[i],
                    ", type: c, major: 240, minor: ", i, "}\n");
  }
  return text;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  REQUIRE(out.good());
}

std::string ErrorsText(const CdiRegistry& registry) {
  std::string text;
  for (const absl::Status& e : registry.errors) absl::StrAppend(&text, e.message(), "\n");
  return text;
}

TEST_CASE("a spec as nvidia-ctk writes it parses, in YAML and in JSON", "[cdi]") {
  absl::StatusOr<runtime::CdiSpec> spec = ParseCdiSpec(kNvidiaSpec);
  REQUIRE(spec.ok());
  CHECK(spec->cdi_version() == "0.5.0");
  CHECK(spec->kind() == "nvidia.com/gpu");
  REQUIRE(spec->devices_size() == 3);
  CHECK(spec->devices(0).name() == "0");
  CHECK(spec->devices(1).name() == "1");
  CHECK(spec->devices(2).name() == "all");
  const runtime::ContainerEdits& common = spec->container_edits();
  CHECK(common.env(0) == "NVIDIA_VISIBLE_DEVICES=void");
  REQUIRE(common.device_nodes_size() == 4);
  CHECK(common.device_nodes(3).path() == "/dev/nvidiactl");
  CHECK_FALSE(common.device_nodes(3).has_major_number());
  REQUIRE(common.mounts_size() == 2);
  CHECK(common.mounts(1).host_path() == "/usr/bin/nvidia-smi");
  CHECK(common.mounts(1).container_path() == "/usr/bin/nvidia-smi");
  CHECK(common.mounts(1).options_size() == 4);
  REQUIRE(common.hooks_size() == 1);
  CHECK(common.hooks(0).hook_name() == "createContainer");
  CHECK(common.hooks(0).args(2) == "update-ldcache");
  CHECK(spec->devices(0).container_edits().hooks(0).hook_name() == "createContainer");
  CHECK(spec->devices(2).container_edits().device_nodes_size() == 4);

  // The same spec as JSON (written with JSON names by SpecToJson) parses to the same message.
  absl::StatusOr<std::string> json = SpecToJson(*spec);
  REQUIRE(json.ok());
  CHECK(absl::StrContains(*json, "\"containerEdits\""));
  CHECK(absl::StrContains(*json, "\"hookName\": \"createContainer\""));
  absl::StatusOr<runtime::CdiSpec> again = ParseCdiSpec(*json);
  REQUIRE(again.ok());
  CHECK(google::protobuf::util::MessageDifferencer::Equals(*spec, *again));
}

TEST_CASE("a device node's numbers and modes parse in JSON", "[cdi]") {
  absl::StatusOr<runtime::CdiSpec> spec = ParseCdiSpec(R"({
    "cdiVersion": "0.6.0", "kind": "example.com/dev",
    "annotations": {"owner": "test"},
    "devices": [{"name": "d0", "containerEdits": {"deviceNodes": [
      {"path": "/dev/d0", "hostPath": "/dev/null", "type": "c", "major": 1, "minor": 0,
       "fileMode": 438, "permissions": "rw", "uid": 0, "gid": 44}],
      "additionalGids": [44]}}]})");
  REQUIRE(spec.ok());
  const runtime::CdiDeviceNode& node = spec->devices(0).container_edits().device_nodes(0);
  CHECK(node.host_path() == "/dev/null");
  CHECK(node.major_number() == 1);
  REQUIRE(node.has_minor_number());  // 0, present
  CHECK(node.minor_number() == 0);
  CHECK(node.file_mode() == 0666);
  CHECK(node.permissions() == "rw");
  CHECK(node.has_uid());
  CHECK(node.gid() == 44);
  CHECK(spec->annotations().at("owner") == "test");
  CHECK(spec->devices(0).container_edits().additional_gids(0) == 44);
}

TEST_CASE("an invalid spec says which field is wrong", "[cdi]") {
  struct Case {
    std::string text;
    std::string error;
  };
  const std::string edits = "  containerEdits: {env: [A=1]}\n";
  const std::vector<Case> cases = {
      {"kind: a.com/b\ndevices: [{name: x, containerEdits: {env: [A=1]}}]", "cdiVersion: missing"},
      {"cdiVersion: 0.6\nkind: a.com/b\ndevices: [{name: x, containerEdits: {env: [A=1]}}]",
       "cdiVersion: \"0.6\" is not MAJOR.MINOR.PATCH"},
      {"cdiVersion: 0.6.0\nkind: gpu\ndevices: [{name: x, containerEdits: {env: [A=1]}}]",
       "kind: \"gpu\" is not vendor.com/class"},
      {"cdiVersion: 0.6.0\nkind: a.com/b\ndevices: []", "devices: no devices"},
      {"cdiVersion: 0.6.0\nkind: a.com/b\ndevices:\n- name: -x\n" + edits,
       "devices[0].name: \"-x\" is not a valid device name"},
      {"cdiVersion: 0.6.0\nkind: a.com/b\ndevices:\n- name: x\n" + edits + "- name: x\n" + edits,
       "devices[1].name: \"x\" is also the name of devices[0]"},
      {"cdiVersion: 0.6.0\nkind: a.com/b\ndevices:\n- name: x\n",
       "devices[0].containerEdits: no edits"},
      {"cdiVersion: 0.6.0\nkind: a.com/b\ndevices:\n- name: x\n  containerEdits: {env: [NOEQUALS]}",
       "devices[0].containerEdits.env[0]: \"NOEQUALS\" is not NAME=VALUE"},
      {"cdiVersion: 0.6.0\nkind: a.com/b\ndevices:\n- name: x\n"
       "  containerEdits: {deviceNodes: [{path: dev/x}]}",
       "devices[0].containerEdits.deviceNodes[0].path: \"dev/x\" is not absolute"},
      {"cdiVersion: 0.6.0\nkind: a.com/b\ndevices:\n- name: x\n"
       "  containerEdits: {deviceNodes: [{path: /dev/x, type: z}]}",
       "deviceNodes[0].type: \"z\" is not one of b, c, u, p"},
      {"cdiVersion: 0.6.0\nkind: a.com/b\ndevices:\n- name: x\n"
       "  containerEdits: {deviceNodes: [{path: /dev/x, permissions: rwx}]}",
       "deviceNodes[0].permissions: \"rwx\" is not made of r, w and m"},
      {"cdiVersion: 0.6.0\nkind: a.com/b\ncontainerEdits: {mounts: [{containerPath: /x}]}\n"
       "devices:\n- name: x\n" +
           edits,
       "containerEdits.mounts[0].hostPath: missing"},
      {"cdiVersion: 0.6.0\nkind: a.com/b\ndevices:\n- name: x\n"
       "  containerEdits: {hooks: [{hookName: onStart, path: /bin/true}]}",
       "devices[0].containerEdits.hooks[0].hookName: \"onStart\" is not one of"},
      {"cdiVersion: 0.6.0\nkind: a.com/b\ndevices:\n- name: x\n"
       "  containerEdits: {deviceNode: [{path: /dev/x}]}",
       "devices[0].containerEdits.deviceNode: unknown field"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    absl::StatusOr<runtime::CdiSpec> spec = ParseCdiSpec(c.text);
    REQUIRE_FALSE(spec.ok());
    CHECK(spec.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(spec.status().message()), Catch::Contains(c.error));
  }
}

TEST_CASE("an invalid spec file is left out, naming it, and the others load", "[cdi]") {
  TempDir dir;
  REQUIRE(!dir.path().empty());
  WriteText(dir.path() + "/a-good.yaml", SimpleSpec("example.com/dev", {"d0", "d1"}, "a"));
  WriteText(dir.path() + "/b-broken.json", "{\"cdiVersion\": \"0.6.0\", \"kind\": ");
  WriteText(dir.path() + "/c-typo.yaml",
            "cdiVersion: 0.6.0\nkind: example.com/other\ndevices:\n- name: x\n"
            "  containerEdits: {mount: []}\n");
  WriteText(dir.path() + "/d-good.json",
            R"({"cdiVersion": "0.5.0", "kind": "example.com/net",
                "devices": [{"name": "n0", "containerEdits": {"env": ["NET=1"]}}]})");
  WriteText(dir.path() + "/notes.txt", "not a spec");
  REQUIRE(mkdir((dir.path() + "/sub.yaml").c_str(), 0755) == 0);  // not a file: skipped

  absl::StatusOr<CdiRegistry> registry = LoadCdiSpecs({dir.path(), dir.path() + "/missing"});
  REQUIRE(registry.ok());
  CHECK(registry->specs.size() == 2);
  CHECK(registry->devices.count("example.com/dev=d0") == 1);
  CHECK(registry->devices.count("example.com/dev=d1") == 1);
  CHECK(registry->devices.count("example.com/net=n0") == 1);
  CHECK(registry->devices.size() == 3);
  REQUIRE(registry->errors.size() == 2);
  CHECK_THAT(std::string(registry->errors[0].message()),
             Catch::StartsWith(dir.path() + "/b-broken.json: invalid CDI spec: "));
  CHECK_THAT(std::string(registry->errors[1].message()),
             Catch::StartsWith(dir.path() + "/c-typo.yaml: invalid CDI spec: "));
  CHECK_THAT(std::string(registry->errors[1].message()),
             Catch::Contains("devices[0].containerEdits.mount: unknown field"));

  absl::StatusOr<CdiRegistry> relative = LoadCdiSpecs({"etc/cdi"});
  CHECK(relative.status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("a later directory wins, two files of one directory conflict", "[cdi]") {
  TempDir dir;
  REQUIRE(!dir.path().empty());
  const std::string etc = dir.path() + "/etc";
  const std::string run = dir.path() + "/run";
  REQUIRE(mkdir(etc.c_str(), 0755) == 0);
  REQUIRE(mkdir(run.c_str(), 0755) == 0);
  WriteText(etc + "/vendor.yaml", SimpleSpec("example.com/dev", {"d0", "d1", "d2"}, "etc"));
  WriteText(etc + "/z-extra.yaml", SimpleSpec("example.com/dev", {"d2", "d3"}, "extra"));
  WriteText(run + "/vendor.yaml", SimpleSpec("example.com/dev", {"d1", "d3"}, "run"));

  absl::StatusOr<CdiRegistry> registry = LoadCdiSpecs({etc, run});
  REQUIRE(registry.ok());
  INFO(ErrorsText(*registry));
  // d2 is defined twice in etc/ and nowhere later: left out, both files named.
  CHECK(registry->devices.count("example.com/dev=d2") == 0);
  REQUIRE(registry->errors.size() == 1);
  CHECK_THAT(std::string(registry->errors[0].message()),
             Catch::Contains(etc + "/vendor.yaml: device example.com/dev=d2 is also defined by " +
                             etc + "/z-extra.yaml"));
  // d1 and d3 are defined in etc/ and in run/, which wins.
  absl::StatusOr<runtime::ContainerEdits> edits = ResolveCdiDevices(
      *registry, {"example.com/dev=d0", "example.com/dev=d1", "example.com/dev=d3"});
  REQUIRE(edits.ok());
  // d0 from etc/vendor.yaml (its spec edits first), d1 and d3 from run/vendor.yaml.
  CHECK(std::vector<std::string>(edits->env().begin(), edits->env().end()) ==
        std::vector<std::string>{"KIND_etc=1", "DEV_d0=etc", "KIND_run=1", "DEV_d1=run",
                                 "DEV_d3=run"});
  absl::StatusOr<runtime::ContainerEdits> conflicted =
      ResolveCdiDevices(*registry, {"example.com/dev=d2"});
  CHECK(conflicted.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(conflicted.status().message()),
             Catch::Contains("is also defined by " + etc + "/z-extra.yaml"));
}

TEST_CASE("resolving devices merges a spec's edits once and names an unknown device", "[cdi]") {
  CdiRegistry registry;
  registry.dirs = DefaultCdiDirs();
  absl::StatusOr<runtime::CdiSpec> spec = ParseCdiSpec(kNvidiaSpec);
  REQUIRE(spec.ok());
  // Device nodes that exist on any host, so that the numbers come from stat().
  for (runtime::CdiDeviceNode& node : *spec->mutable_container_edits()->mutable_device_nodes()) {
    node.set_host_path("/dev/null");
  }
  for (runtime::CdiDevice& device : *spec->mutable_devices()) {
    for (runtime::CdiDeviceNode& node : *device.mutable_container_edits()->mutable_device_nodes()) {
      node.set_host_path("/dev/zero");
    }
  }
  registry.specs.push_back({"/etc/cdi/nvidia.yaml", 0, *spec});
  registry.devices["nvidia.com/gpu=0"] = {0, 0};
  registry.devices["nvidia.com/gpu=1"] = {0, 1};
  registry.devices["nvidia.com/gpu=all"] = {0, 2};

  absl::StatusOr<runtime::ContainerEdits> edits =
      ResolveCdiDevices(registry, {"nvidia.com/gpu=1", "nvidia.com/gpu=0", "nvidia.com/gpu=1"});
  REQUIRE(edits.ok());
  std::vector<std::string> paths;
  for (const runtime::CdiDeviceNode& node : edits->device_nodes()) paths.push_back(node.path());
  CHECK(paths == std::vector<std::string>{"/dev/nvidia-modeset", "/dev/nvidia-uvm",
                                          "/dev/nvidia-uvm-tools", "/dev/nvidiactl", "/dev/nvidia1",
                                          "/dev/nvidia0", "/dev/dri/card1", "/dev/dri/renderD128"});
  CHECK(edits->env_size() == 1);
  CHECK(edits->mounts_size() == 2);
  CHECK(edits->hooks_size() == 2);  // the spec's update-ldcache, device 0's create-symlinks
  const runtime::CdiDeviceNode& ctl = edits->device_nodes(3);
  CHECK(ctl.type() == "c");
  CHECK(ctl.major_number() == 1);
  CHECK(ctl.minor_number() == 3);  // /dev/null
  struct stat st;
  REQUIRE(stat("/dev/null", &st) == 0);
  CHECK(ctl.file_mode() == (st.st_mode & 0777));
  CHECK(edits->device_nodes(4).minor_number() == 5);  // /dev/zero

  absl::StatusOr<runtime::ContainerEdits> all = ResolveCdiDevices(registry, {"nvidia.com/gpu=all"});
  REQUIRE(all.ok());
  CHECK(all->device_nodes_size() == 8);

  absl::StatusOr<runtime::ContainerEdits> unknown =
      ResolveCdiDevices(registry, {"nvidia.com/gpu=0", "nvidia.com/gpu=3"});
  CHECK(unknown.status() ==
        absl::FailedPreconditionError(
            "no CDI spec on this host defines nvidia.com/gpu=3 (searched /etc/cdi, /var/run/cdi)"));
  registry.errors.push_back(absl::InvalidArgumentError("/etc/cdi/amd.yaml: invalid CDI spec: x"));
  unknown = ResolveCdiDevices(registry, {"amd.com/gpu=0"});
  CHECK_THAT(std::string(unknown.status().message()),
             Catch::EndsWith("(searched /etc/cdi, /var/run/cdi; 1 spec file or device was left "
                             "out, the first: /etc/cdi/amd.yaml: invalid CDI spec: x)"));
  for (const char* bad : {"gpu=0", "nvidia.com/gpu", "nvidia.com/gpu=", "nvidia.com=0"}) {
    INFO(bad);
    CHECK(ResolveCdiDevices(registry, {bad}).status().code() == absl::StatusCode::kInvalidArgument);
  }
}

TEST_CASE("a device node missing on the host fails resolution, naming both", "[cdi]") {
  CdiRegistry registry;
  registry.dirs = DefaultCdiDirs();
  absl::StatusOr<runtime::CdiSpec> spec = ParseCdiSpec(
      "cdiVersion: 0.6.0\nkind: example.com/dev\ndevices:\n- name: gone\n"
      "  containerEdits: {deviceNodes: [{path: /dev/gone, hostPath: /nonexistent/gone}]}\n"
      "- name: notdev\n  containerEdits: {deviceNodes: [{path: /dev/x, hostPath: /}]}\n"
      "- name: wrongtype\n  containerEdits: {deviceNodes: [{path: /dev/x, type: b, hostPath: "
      "/dev/null}]}\n");
  REQUIRE(spec.ok());
  registry.specs.push_back({"/etc/cdi/x.yaml", 0, *spec});
  registry.devices["example.com/dev=gone"] = {0, 0};
  registry.devices["example.com/dev=notdev"] = {0, 1};
  registry.devices["example.com/dev=wrongtype"] = {0, 2};
  absl::StatusOr<runtime::ContainerEdits> gone =
      ResolveCdiDevices(registry, {"example.com/dev=gone"});
  CHECK(gone.status() == absl::FailedPreconditionError(
                             "CDI device example.com/dev=gone (/etc/cdi/x.yaml): cannot read the "
                             "device node /nonexistent/gone on this host: No such file or "
                             "directory"));
  CHECK_THAT(
      std::string(ResolveCdiDevices(registry, {"example.com/dev=notdev"}).status().message()),
      Catch::Contains("/ on this host is not a device node"));
  CHECK_THAT(
      std::string(ResolveCdiDevices(registry, {"example.com/dev=wrongtype"}).status().message()),
      Catch::Contains("/dev/x has type b but /dev/null on this host has type c"));
}

TEST_CASE("container edits apply to an OCI spec", "[cdi]") {
  ContainerRequest req;
  req.rootfs = "/rootfs";
  req.args = {"sh"};
  req.env = {"NVIDIA_VISIBLE_DEVICES=all", "HOME=/root"};
  req.uid = 1000;
  req.gid = 1000;
  req.additional_gids = {44};
  runtime::Spec spec = BuildContainerSpec(req);
  const int rules_before = spec.linux_config().resources().devices_size();

  absl::StatusOr<runtime::CdiSpec> cdi = ParseCdiSpec(R"(
cdiVersion: 0.6.0
kind: example.com/gpu
devices:
- name: "0"
  containerEdits:
    env: [NVIDIA_VISIBLE_DEVICES=void, GPU0=yes]
    additionalGids: [44, 45]
    deviceNodes:
    - {path: /dev/gpu0, type: c, major: 195, minor: 0, fileMode: 432, uid: 0, gid: 45}
    - {path: /dev/gpu-ro, type: b, major: 7, minor: 1, permissions: r}
    - {path: /dev/fifo, type: p}
    mounts:
    - {hostPath: /usr/lib/libgpu.so.1, containerPath: /usr/lib/libgpu.so.1, options: [ro, nosuid]}
    - {hostPath: /opt/gpu, containerPath: /opt, options: [rbind, ro]}
    - {hostPath: tmpfs, containerPath: /var/gpu, type: tmpfs, options: [size=1m]}
    hooks:
    - {hookName: createContainer, path: /usr/bin/gpu-hook, args: [gpu-hook, create], timeout: 5}
    - {hookName: prestart, path: /usr/bin/gpu-hook}
    - {hookName: createRuntime, path: /usr/bin/gpu-hook}
    - {hookName: startContainer, path: /usr/bin/gpu-hook}
    - {hookName: poststart, path: /usr/bin/gpu-hook}
    - {hookName: poststop, path: /usr/bin/gpu-hook, env: [A=1]}
)");
  REQUIRE(cdi.ok());
  CdiRegistry registry;
  registry.specs.push_back({"/etc/cdi/gpu.yaml", 0, *cdi});
  registry.devices["example.com/gpu=0"] = {0, 0};
  absl::StatusOr<runtime::ContainerEdits> edits =
      ResolveCdiDevices(registry, {"example.com/gpu=0"});
  REQUIRE(edits.ok());
  ApplyCdiEdits(*edits, &spec);

  const auto& env = spec.process().env();
  CHECK(std::vector<std::string>(env.begin(), env.end()) ==
        std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=void", "HOME=/root",
                                 absl::StrCat("PATH=", kContainerDefaultPath), "GPU0=yes"});
  const auto& gids = spec.process().user().additional_gids();
  CHECK(std::vector<uint32_t>(gids.begin(), gids.end()) == std::vector<uint32_t>{44, 45});

  const runtime::Linux& linux_config = spec.linux_config();
  REQUIRE(linux_config.devices_size() == 3);
  CHECK(linux_config.devices(0).path() == "/dev/gpu0");
  CHECK(linux_config.devices(0).type() == "c");
  CHECK(linux_config.devices(0).major_number() == 195);
  CHECK(linux_config.devices(0).has_minor_number());
  CHECK(linux_config.devices(0).file_mode() == 0660);
  CHECK(linux_config.devices(0).gid() == 45);
  CHECK(linux_config.devices(2).type() == "p");
  // One rule per node with numbers: not the fifo.
  REQUIRE(linux_config.resources().devices_size() == rules_before + 2);
  const runtime::DeviceRule& gpu = linux_config.resources().devices(rules_before);
  CHECK(gpu.allow());
  CHECK(gpu.type() == "c");
  CHECK(gpu.major_number() == 195);
  CHECK(gpu.minor_number() == 0);
  CHECK(gpu.access() == "rwm");
  const runtime::DeviceRule& ro = linux_config.resources().devices(rules_before + 1);
  CHECK(ro.type() == "b");
  CHECK(ro.access() == "r");

  std::map<std::string, runtime::Mount> mounts;
  for (const runtime::Mount& m : spec.mounts()) mounts[m.destination()] = m;
  REQUIRE(mounts.count("/usr/lib/libgpu.so.1") == 1);
  const runtime::Mount& lib = mounts["/usr/lib/libgpu.so.1"];
  CHECK(lib.type() == "bind");
  CHECK(lib.source() == "/usr/lib/libgpu.so.1");
  CHECK(std::vector<std::string>(lib.options().begin(), lib.options().end()) ==
        std::vector<std::string>{"ro", "nosuid", "bind"});
  CHECK(mounts["/opt"].options_size() == 2);  // rbind already
  CHECK(mounts["/var/gpu"].type() == "tmpfs");
  // /opt (one component) comes before /usr/lib/libgpu.so.1 (three).
  std::vector<std::string> order;
  for (const runtime::Mount& m : spec.mounts()) order.push_back(m.destination());
  CHECK(std::find(order.begin(), order.end(), "/opt") <
        std::find(order.begin(), order.end(), "/usr/lib/libgpu.so.1"));

  const runtime::Hooks& hooks = spec.hooks();
  REQUIRE(hooks.create_container_size() == 1);
  CHECK(hooks.create_container(0).path() == "/usr/bin/gpu-hook");
  CHECK(hooks.create_container(0).args(1) == "create");
  CHECK(hooks.create_container(0).timeout() == 5);
  CHECK(hooks.prestart_size() == 1);
  CHECK(hooks.create_runtime_size() == 1);
  CHECK(hooks.start_container_size() == 1);
  CHECK(hooks.poststart_size() == 1);
  REQUIRE(hooks.poststop_size() == 1);
  CHECK(hooks.poststop(0).env(0) == "A=1");
}

}  // namespace cdi_test
}  // namespace trainctl::agent
