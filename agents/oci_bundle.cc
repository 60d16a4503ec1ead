// The OCI runtime bundle's config.json (agents/oci_bundle.h): BuildContainerSpec, the JSON
// writer that keeps 64-bit integers numbers, and WriteBundle.
#include "agents/oci_bundle.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/json_text.h"
#include "common/os_error.h"
#include "common/status_macros.h"
#include "common/utf8.h"

namespace trainctl::agent {
namespace oci_bundle_internal {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// `runc spec`'s (runc 1.1).
constexpr const char* kMaskedPaths[] = {
    "/proc/acpi",          "/proc/asound",     "/proc/kcore",       "/proc/keys",
    "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
    "/sys/firmware",       "/proc/scsi"};
constexpr const char* kReadonlyPaths[] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                                          "/proc/sysrq-trigger"};
constexpr const char* kRootCapabilities[] = {"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"};

// The devices every container may use: {type, major, minor (-1: any)}.
struct StandardDevice {
  const char* type;
  int64_t major_number;
  int64_t minor_number;
};
constexpr StandardDevice kStandardDevices[] = {
    {"c", 1, 3},    // /dev/null
    {"c", 1, 5},    // /dev/zero
    {"c", 1, 7},    // /dev/full
    {"c", 1, 8},    // /dev/random
    {"c", 1, 9},    // /dev/urandom
    {"c", 5, 0},    // /dev/tty
    {"c", 5, 2},    // /dev/ptmx
    {"c", 136, -1}  // /dev/pts/*
};

runtime::Mount MakeMount(const std::string& destination, const std::string& type,
                         const std::string& source, std::vector<std::string> options) {
  runtime::Mount mount;
  mount.set_destination(destination);
  mount.set_type(type);
  mount.set_source(source);
  for (std::string& option : options) mount.add_options(std::move(option));
  return mount;
}

runtime::Mount MakeBind(const std::string& source, const std::string& destination, bool read_only) {
  return MakeMount(destination, "bind", source,
                   {"rbind", "nosuid", "nodev", read_only ? "ro" : "rw"});
}

// The number of components of a container path ("/dev/pts" is 2, "/" is 0).
size_t PathDepth(const std::string& path) {
  size_t depth = 0;
  for (absl::string_view part : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    if (part != ".") ++depth;
  }
  return depth;
}

void AddDeviceRule(bool allow, const std::string& type, int64_t major_number, int64_t minor_number,
                   const std::string& access, runtime::Resources* out) {
  runtime::DeviceRule* rule = out->add_devices();
  rule->set_allow(allow);
  rule->set_type(type);
  if (major_number >= 0) rule->set_major_number(major_number);
  if (minor_number >= 0) rule->set_minor_number(minor_number);
  rule->set_access(access);
}

// --- JSON ---

void Indent(int depth, std::string* out) { out->append(static_cast<size_t>(depth) * 2, ' '); }

bool IsUtf8(absl::string_view text) {
  while (!text.empty()) {
    size_t n = Utf8SequenceLength(text);
    if (n == 0) return false;
    text.remove_prefix(n);
  }
  return true;
}

absl::Status AppendMessage(const Message& message, const std::string& path, int depth,
                           std::string* out);

// One value of `field` (element `index` when it is repeated).
absl::Status AppendValue(const Message& message, const FieldDescriptor* field, int index,
                         const std::string& path, int depth, std::string* out) {
  const Reflection* r = message.GetReflection();
  const bool rep = field->is_repeated();
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_BOOL: {
      bool v = rep ? r->GetRepeatedBool(message, field, index) : r->GetBool(message, field);
      out->append(v ? "true" : "false");
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_INT32:
      absl::StrAppend(
          out, rep ? r->GetRepeatedInt32(message, field, index) : r->GetInt32(message, field));
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_INT64:
      absl::StrAppend(
          out, rep ? r->GetRepeatedInt64(message, field, index) : r->GetInt64(message, field));
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_UINT32:
      absl::StrAppend(
          out, rep ? r->GetRepeatedUInt32(message, field, index) : r->GetUInt32(message, field));
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_UINT64:
      absl::StrAppend(
          out, rep ? r->GetRepeatedUInt64(message, field, index) : r->GetUInt64(message, field));
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_DOUBLE:
      absl::StrAppend(
          out, rep ? r->GetRepeatedDouble(message, field, index) : r->GetDouble(message, field));
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_FLOAT:
      absl::StrAppend(
          out, rep ? r->GetRepeatedFloat(message, field, index) : r->GetFloat(message, field));
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_ENUM:
      out->append(JsonQuoted(rep ? r->GetRepeatedEnum(message, field, index)->name()
                                 : r->GetEnum(message, field)->name()));
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string v =
          rep ? r->GetRepeatedString(message, field, index) : r->GetString(message, field);
      if (field->type() == FieldDescriptor::TYPE_BYTES) {
        out->append(JsonQuoted(absl::Base64Escape(v)));
      } else if (!IsUtf8(v)) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": not UTF-8 text"));
      } else {
        out->append(JsonQuoted(v));
      }
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return AppendMessage(
          rep ? r->GetRepeatedMessage(message, field, index) : r->GetMessage(message, field), path,
          depth, out);
  }
  return absl::InternalError(absl::StrCat(path, ": unknown field type"));
}

// A map field as a JSON object with its keys sorted.
absl::Status AppendMap(const Message& message, const FieldDescriptor* field,
                       const std::string& path, int depth, std::string* out) {
  const Reflection* r = message.GetReflection();
  const FieldDescriptor* key = field->message_type()->map_key();
  const FieldDescriptor* value = field->message_type()->map_value();
  std::vector<std::pair<std::string, const Message*>> entries;
  for (int i = 0; i < r->FieldSize(message, field); ++i) {
    const Message& entry = r->GetRepeatedMessage(message, field, i);
    const Reflection* er = entry.GetReflection();
    std::string k;
    switch (key->cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING:
        k = er->GetString(entry, key);
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        k = er->GetBool(entry, key) ? "true" : "false";
        break;
      case FieldDescriptor::CPPTYPE_INT32:
        k = absl::StrCat(er->GetInt32(entry, key));
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        k = absl::StrCat(er->GetInt64(entry, key));
        break;
      case FieldDescriptor::CPPTYPE_UINT32:
        k = absl::StrCat(er->GetUInt32(entry, key));
        break;
      default:
        k = absl::StrCat(er->GetUInt64(entry, key));
        break;
    }
    if (!IsUtf8(k)) return absl::InvalidArgumentError(absl::StrCat(path, ": key not UTF-8"));
    entries.emplace_back(std::move(k), &entry);
  }
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  out->append("{\n");
  for (size_t i = 0; i < entries.size(); ++i) {
    Indent(depth + 1, out);
    absl::StrAppend(out, JsonQuoted(entries[i].first), ": ");
    TC_RETURN_IF_ERROR(AppendValue(*entries[i].second, value, 0,
                                   absl::StrCat(path, "[", entries[i].first, "]"), depth + 1, out));
    out->append(i + 1 < entries.size() ? ",\n" : "\n");
  }
  Indent(depth, out);
  out->append("}");
  return absl::OkStatus();
}

absl::Status AppendMessage(const Message& message, const std::string& path, int depth,
                           std::string* out) {
  std::vector<const FieldDescriptor*> fields;
  // Set fields only, by number: proto3 scalars without presence when not the default, lists
  // and maps when not empty.
  message.GetReflection()->ListFields(message, &fields);
  if (fields.empty()) {
    out->append("{}");
    return absl::OkStatus();
  }
  out->append("{\n");
  for (size_t f = 0; f < fields.size(); ++f) {
    const FieldDescriptor* field = fields[f];
    const std::string field_path =
        path.empty() ? field->json_name() : absl::StrCat(path, ".", field->json_name());
    Indent(depth + 1, out);
    absl::StrAppend(out, JsonQuoted(field->json_name()), ": ");
    if (field->is_map()) {
      TC_RETURN_IF_ERROR(AppendMap(message, field, field_path, depth + 1, out));
    } else if (field->is_repeated()) {
      const int n = message.GetReflection()->FieldSize(message, field);
      out->append("[\n");
      for (int i = 0; i < n; ++i) {
        Indent(depth + 2, out);
        TC_RETURN_IF_ERROR(
            AppendValue(message, field, i, absl::StrCat(field_path, "[", i, "]"), depth + 2, out));
        out->append(i + 1 < n ? ",\n" : "\n");
      }
      Indent(depth + 1, out);
      out->append("]");
    } else {
      TC_RETURN_IF_ERROR(AppendValue(message, field, 0, field_path, depth + 1, out));
    }
    out->append(f + 1 < fields.size() ? ",\n" : "\n");
  }
  Indent(depth, out);
  out->append("}");
  return absl::OkStatus();
}

absl::Status BundleError(absl::string_view what, const std::string& path) {
  const int error = errno;
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", ErrnoText(error)));
}

}  // namespace oci_bundle_internal

void SetMount(const runtime::Mount& mount, runtime::Spec* spec) {
  using oci_bundle_internal::PathDepth;
  auto* mounts = spec->mutable_mounts();
  for (runtime::Mount& m : *mounts) {
    if (m.destination() == mount.destination()) {
      m = mount;  // same depth: the order holds
      return;
    }
  }
  *mounts->Add() = mount;
  std::stable_sort(mounts->begin(), mounts->end(),
                   [](const runtime::Mount& a, const runtime::Mount& b) {
                     return PathDepth(a.destination()) < PathDepth(b.destination());
                   });
}

void SetEnv(const std::string& entry, runtime::Spec* spec) {
  const std::string name = entry.substr(0, entry.find('='));
  auto* env = spec->mutable_process()->mutable_env();
  for (std::string& existing : *env) {
    if (existing.substr(0, existing.find('=')) == name) {
      existing = entry;
      return;
    }
  }
  env->Add(std::string(entry));
}

runtime::Spec BuildContainerSpec(const ContainerRequest& req) {
  using oci_bundle_internal::AddDeviceRule;
  using oci_bundle_internal::kMaskedPaths;
  using oci_bundle_internal::kReadonlyPaths;
  using oci_bundle_internal::kRootCapabilities;
  using oci_bundle_internal::kStandardDevices;
  using oci_bundle_internal::MakeBind;
  using oci_bundle_internal::MakeMount;
  using oci_bundle_internal::StandardDevice;
  runtime::Spec spec;
  spec.set_oci_version(kOciVersion);

  runtime::Root* root = spec.mutable_root();
  root->set_path(req.rootfs);
  root->set_readonly(req.readonly_rootfs);
  if (!req.hostname.empty()) spec.set_hostname(req.hostname);

  runtime::Process* process = spec.mutable_process();
  process->set_terminal(false);
  runtime::User* user = process->mutable_user();
  user->set_uid(req.uid);
  user->set_gid(req.gid);
  for (uint32_t gid : req.additional_gids) user->add_additional_gids(gid);
  for (const std::string& arg : req.args) process->add_args(arg);
  bool has_path = false;
  for (const std::string& entry : req.env) {
    process->add_env(entry);
    has_path = has_path || absl::StartsWith(entry, "PATH=");
  }
  if (!has_path) process->add_env(absl::StrCat("PATH=", kContainerDefaultPath));
  process->set_cwd(req.cwd.empty() ? "/" : req.cwd);
  runtime::Capabilities* caps = process->mutable_capabilities();  // present even when empty
  if (req.uid == 0) {
    for (const char* cap : kRootCapabilities) {
      caps->add_bounding(cap);
      caps->add_effective(cap);
      caps->add_permitted(cap);
      caps->add_ambient(cap);
    }
  }
  process->set_no_new_privileges(true);
  if (req.oom_score_adj) process->set_oom_score_adj(*req.oom_score_adj);

  // `runc spec`'s mounts; /dev/shm without its 64 MiB size.
  SetMount(MakeMount("/proc", "proc", "proc", {}), &spec);
  SetMount(
      MakeMount("/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"}),
      &spec);
  SetMount(MakeMount("/dev/pts", "devpts", "devpts",
                     {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}),
           &spec);
  SetMount(MakeMount("/dev/shm", "tmpfs", "shm", {"nosuid", "noexec", "nodev", "mode=1777"}),
           &spec);
  SetMount(MakeMount("/dev/mqueue", "mqueue", "mqueue", {"nosuid", "noexec", "nodev"}), &spec);
  SetMount(MakeMount("/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro"}), &spec);
  SetMount(MakeMount("/sys/fs/cgroup", "cgroup", "cgroup",
                     {"nosuid", "noexec", "nodev", "relatime", "ro"}),
           &spec);
  // The host's network, so its name resolution too.
  SetMount(MakeBind("/etc/resolv.conf", "/etc/resolv.conf", true), &spec);
  SetMount(MakeBind("/etc/hosts", "/etc/hosts", true), &spec);
  for (const BindMount& bind : req.mounts) {
    SetMount(MakeBind(bind.source, bind.destination, bind.read_only), &spec);
  }

  runtime::Linux* linux_config = spec.mutable_linux_config();
  for (const char* type : {"ipc", "mount"}) linux_config->add_namespaces()->set_type(type);
  if (!req.hostname.empty()) linux_config->add_namespaces()->set_type("uts");
  if (!req.cgroups_path.empty()) linux_config->set_cgroups_path(req.cgroups_path);
  runtime::Resources* resources = linux_config->mutable_resources();
  AddDeviceRule(false, "", -1, -1, "rwm", resources);
  for (const StandardDevice& d : kStandardDevices) {
    AddDeviceRule(true, d.type, d.major_number, d.minor_number, "rwm", resources);
  }
  for (const ContainerDevice& d : req.devices) {
    runtime::Device* device = linux_config->add_devices();
    device->set_path(d.path);
    device->set_type(std::string(1, d.type));
    device->set_major_number(d.major_number);
    device->set_minor_number(d.minor_number);
    device->set_file_mode(d.file_mode);
    AddDeviceRule(true, std::string(1, d.type), d.major_number, d.minor_number,
                  d.access.empty() ? "rwm" : d.access, resources);
  }
  for (const char* path : kMaskedPaths) linux_config->add_masked_paths(path);
  for (const char* path : kReadonlyPaths) linux_config->add_readonly_paths(path);
  return spec;
}

absl::StatusOr<std::string> SpecToJson(const google::protobuf::Message& message) {
  std::string out;
  TC_RETURN_IF_ERROR(oci_bundle_internal::AppendMessage(message, "", 0, &out));
  out.push_back('\n');
  return out;
}

absl::Status WriteBundle(const std::string& bundle_dir, const runtime::Spec& spec) {
  using oci_bundle_internal::BundleError;
  TC_ASSIGN_OR_RETURN(std::string text, SpecToJson(spec));
  if (mkdir(bundle_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return BundleError("cannot create", bundle_dir);
  }
  struct stat st;
  if (stat(bundle_dir.c_str(), &st) != 0) return BundleError("cannot read", bundle_dir);
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(bundle_dir, " is not a directory"));
  }
  const std::string path = bundle_dir + "/config.json";
  const std::string tmp = path + ".tmp";
  unlink(tmp.c_str());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return BundleError("cannot create", tmp);
  auto fail = [&](absl::Status s) {
    close(fd);
    unlink(tmp.c_str());
    return s;
  };
  if (fchmod(fd, 0600) != 0) return fail(BundleError("cannot set the mode of", tmp));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail(BundleError("cannot write", tmp));
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) return fail(BundleError("cannot sync", tmp));
  if (close(fd) != 0) {
    absl::Status s = BundleError("cannot write", tmp);
    unlink(tmp.c_str());
    return s;
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    absl::Status s = BundleError("cannot rename over", path);
    unlink(tmp.c_str());
    return s;
  }
  return absl::OkStatus();
}

}  // namespace trainctl::agent
