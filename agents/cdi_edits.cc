// CDI devices to container edits and those onto an OCI spec (agents/cdi.h): ResolveCdiDevices,
// which fills device nodes in from the host, and ApplyCdiEdits. Reading spec files is cdi.cc.
#include <errno.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agents/cdi.h"
#include "agents/oci_bundle.h"
#include "common/os_error.h"
#include "common/status_macros.h"

namespace trainctl::agent {
namespace cdi_edits_internal {

// Gives `node` the type, major, minor and file mode of its host node where it has none. `owner`
// names the device or spec it belongs to, for errors.
absl::Status FillDeviceNode(const std::string& owner, runtime::CdiDeviceNode* node) {
  if (node->type() == "p" ||
      (!node->type().empty() && node->has_major_number() && node->has_minor_number())) {
    return absl::OkStatus();
  }
  const std::string& host = node->host_path().empty() ? node->path() : node->host_path();
  struct stat st;
  if (stat(host.c_str(), &st) != 0) {
    const int error = errno;
    return absl::FailedPreconditionError(absl::StrCat(owner, ": cannot read the device node ", host,
                                                      " on this host: ", ErrnoText(error)));
  }
  std::string type;
  if (S_ISCHR(st.st_mode)) {
    type = "c";
  } else if (S_ISBLK(st.st_mode)) {
    type = "b";
  } else if (S_ISFIFO(st.st_mode)) {
    type = "p";
  } else {
    return absl::FailedPreconditionError(
        absl::StrCat(owner, ": ", host, " on this host is not a device node"));
  }
  if (node->type().empty()) {
    node->set_type(type);
  } else if (node->type() != type && !(node->type() == "u" && type == "c")) {
    return absl::FailedPreconditionError(absl::StrCat(owner, ": ", node->path(), " has type ",
                                                      node->type(), " but ", host,
                                                      " on this host has type ", type));
  }
  if (type != "p") {
    if (!node->has_major_number()) node->set_major_number(gnu_dev_major(st.st_rdev));
    if (!node->has_minor_number()) node->set_minor_number(gnu_dev_minor(st.st_rdev));
  }
  if (!node->has_file_mode()) node->set_file_mode(st.st_mode & 0777);
  return absl::OkStatus();
}

// Appends `edits` to `*out`, its device nodes filled in.
absl::Status AppendEdits(const runtime::ContainerEdits& edits, const std::string& owner,
                         runtime::ContainerEdits* out) {
  runtime::ContainerEdits filled = edits;
  for (runtime::CdiDeviceNode& node : *filled.mutable_device_nodes()) {
    TC_RETURN_IF_ERROR(FillDeviceNode(owner, &node));
  }
  out->MergeFrom(filled);
  return absl::OkStatus();
}

std::string UnknownDeviceMessage(const CdiRegistry& registry, const std::string& device) {
  std::string text = absl::StrCat("no CDI spec on this host defines ", device, " (searched ",
                                  absl::StrJoin(registry.dirs, ", "));
  if (!registry.errors.empty()) {
    absl::StrAppend(
        &text, "; ", registry.errors.size(),
        registry.errors.size() == 1 ? " spec file or device was" : " spec files or devices were",
        " left out, the first: ", registry.errors.front().message());
  }
  text.push_back(')');
  return text;
}

runtime::Hook ToOciHook(const runtime::CdiHook& cdi) {
  runtime::Hook hook;
  hook.set_path(cdi.path());
  *hook.mutable_args() = cdi.args();
  *hook.mutable_env() = cdi.env();
  if (cdi.has_timeout()) hook.set_timeout(cdi.timeout());
  return hook;
}

// The OCI hook list of a CDI hookName; nullptr for a name ValidateCdiSpec refuses.
google::protobuf::RepeatedPtrField<runtime::Hook>* HookList(const std::string& name,
                                                            runtime::Hooks* hooks) {
  if (name == "prestart") return hooks->mutable_prestart();
  if (name == "createRuntime") return hooks->mutable_create_runtime();
  if (name == "createContainer") return hooks->mutable_create_container();
  if (name == "startContainer") return hooks->mutable_start_container();
  if (name == "poststart") return hooks->mutable_poststart();
  if (name == "poststop") return hooks->mutable_poststop();
  return nullptr;
}

void AddDeviceNode(const runtime::CdiDeviceNode& node, runtime::Spec* spec) {
  runtime::Linux* linux_config = spec->mutable_linux_config();
  runtime::Device device;
  device.set_path(node.path());
  device.set_type(node.type());
  if (node.has_major_number()) device.set_major_number(node.major_number());
  if (node.has_minor_number()) device.set_minor_number(node.minor_number());
  if (node.has_file_mode()) device.set_file_mode(node.file_mode());
  if (node.has_uid()) device.set_uid(node.uid());
  if (node.has_gid()) device.set_gid(node.gid());
  auto* devices = linux_config->mutable_devices();
  auto same = std::find_if(devices->begin(), devices->end(),
                           [&](const runtime::Device& d) { return d.path() == node.path(); });
  if (same != devices->end()) {
    *same = std::move(device);
  } else {
    *devices->Add() = std::move(device);
  }
  if (node.type() == "p" || !node.has_major_number() || !node.has_minor_number()) return;
  runtime::DeviceRule* rule = linux_config->mutable_resources()->add_devices();
  rule->set_allow(true);
  rule->set_type(node.type() == "b" ? "b" : "c");
  rule->set_major_number(node.major_number());
  rule->set_minor_number(node.minor_number());
  rule->set_access(node.permissions().empty() ? "rwm" : node.permissions());
}

runtime::Mount ToOciMount(const runtime::CdiMount& cdi) {
  runtime::Mount mount;
  mount.set_destination(cdi.container_path());
  mount.set_source(cdi.host_path());
  mount.set_type(cdi.type().empty() ? "bind" : cdi.type());
  *mount.mutable_options() = cdi.options();
  if (mount.type() == "bind" &&
      std::none_of(mount.options().begin(), mount.options().end(),
                   [](const std::string& o) { return o == "bind" || o == "rbind"; })) {
    mount.add_options("bind");
  }
  return mount;
}

}  // namespace cdi_edits_internal

absl::StatusOr<runtime::ContainerEdits> ResolveCdiDevices(
    const CdiRegistry& registry, const std::vector<std::string>& qualified_names) {
  using cdi_edits_internal::AppendEdits;
  using cdi_edits_internal::UnknownDeviceMessage;
  runtime::ContainerEdits edits;
  std::set<std::string> names_done;
  std::set<size_t> specs_done;
  for (const std::string& qualified : qualified_names) {
    std::string kind;
    std::string name;
    TC_RETURN_IF_ERROR(ParseQualifiedCdiName(qualified, &kind, &name));
    if (!names_done.insert(qualified).second) continue;
    auto it = registry.devices.find(qualified);
    if (it == registry.devices.end()) {
      return absl::FailedPreconditionError(UnknownDeviceMessage(registry, qualified));
    }
    const CdiSpecFile& file = registry.specs.at(it->second.spec_index);
    if (specs_done.insert(it->second.spec_index).second) {
      TC_RETURN_IF_ERROR(AppendEdits(file.spec.container_edits(),
                                     absl::StrCat("CDI spec ", file.path, " (", kind, ")"),
                                     &edits));
    }
    TC_RETURN_IF_ERROR(AppendEdits(file.spec.devices(it->second.device_index).container_edits(),
                                   absl::StrCat("CDI device ", qualified, " (", file.path, ")"),
                                   &edits));
  }
  return edits;
}

void ApplyCdiEdits(const runtime::ContainerEdits& edits, runtime::Spec* spec) {
  using cdi_edits_internal::AddDeviceNode;
  using cdi_edits_internal::HookList;
  using cdi_edits_internal::ToOciHook;
  using cdi_edits_internal::ToOciMount;
  for (const std::string& entry : edits.env()) SetEnv(entry, spec);
  for (const runtime::CdiDeviceNode& node : edits.device_nodes()) AddDeviceNode(node, spec);
  for (const runtime::CdiMount& mount : edits.mounts()) SetMount(ToOciMount(mount), spec);
  runtime::User* user = spec->mutable_process()->mutable_user();
  for (uint32_t gid : edits.additional_gids()) {
    if (std::find(user->additional_gids().begin(), user->additional_gids().end(), gid) ==
        user->additional_gids().end()) {
      user->add_additional_gids(gid);
    }
  }
  for (const runtime::CdiHook& hook : edits.hooks()) {
    auto* list = HookList(hook.hook_name(), spec->mutable_hooks());
    if (list != nullptr) *list->Add() = ToOciHook(hook);
  }
}

}  // namespace trainctl::agent
