// CDI spec files (agents/cdi.h): reading the directories, parsing and validating each file, and
// the registry of devices with CDI's rules of priority and conflict. Resolving devices and
// applying their edits to an OCI spec are in cdi_edits.cc.
#include "agents/cdi.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/os_error.h"
#include "common/spec_parse.h"
#include "common/status_macros.h"

namespace trainctl::agent {
namespace cdi_internal {

absl::Status FieldError(const std::string& path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

// A vendor or class name: letters, digits, '-', '_', '.'; a letter first; a letter or digit last.
bool IsKindPart(absl::string_view s) {
  if (s.empty() || !absl::ascii_isalpha(s.front()) || !absl::ascii_isalnum(s.back())) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.';
  });
}

// A device name: letters, digits, '-', '_', '.', ':'; a letter or digit first and last.
bool IsDeviceName(absl::string_view s) {
  if (s.empty() || !absl::ascii_isalnum(s.front()) || !absl::ascii_isalnum(s.back())) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == ':';
  });
}

bool IsVersion(absl::string_view s) {
  std::vector<absl::string_view> parts = absl::StrSplit(s, '.');
  if (parts.size() != 3) return false;
  for (absl::string_view part : parts) {
    if (part.empty() || !std::all_of(part.begin(), part.end(), absl::ascii_isdigit)) {
      return false;
    }
  }
  return true;
}

bool IsHookName(absl::string_view s) {
  for (const char* name : {"prestart", "createRuntime", "createContainer", "startContainer",
                           "poststart", "poststop"}) {
    if (s == name) return true;
  }
  return false;
}

bool EditsEmpty(const runtime::ContainerEdits& e) {
  return e.env().empty() && e.device_nodes().empty() && e.hooks().empty() && e.mounts().empty() &&
         e.additional_gids().empty();
}

absl::Status ValidateEdits(const runtime::ContainerEdits& edits, const std::string& path) {
  for (int i = 0; i < edits.env_size(); ++i) {
    const std::string& entry = edits.env(i);
    if (entry.find('=') == std::string::npos || entry.front() == '=') {
      return FieldError(absl::StrCat(path, ".env[", i, "]"),
                        absl::StrCat("\"", entry, "\" is not NAME=VALUE"));
    }
  }
  for (int i = 0; i < edits.device_nodes_size(); ++i) {
    const runtime::CdiDeviceNode& node = edits.device_nodes(i);
    const std::string at = absl::StrCat(path, ".deviceNodes[", i, "]");
    if (!absl::StartsWith(node.path(), "/")) {
      return FieldError(at + ".path", absl::StrCat("\"", node.path(), "\" is not absolute"));
    }
    if (!node.host_path().empty() && !absl::StartsWith(node.host_path(), "/")) {
      return FieldError(at + ".hostPath",
                        absl::StrCat("\"", node.host_path(), "\" is not absolute"));
    }
    const std::string& type = node.type();
    if (!type.empty() && type != "b" && type != "c" && type != "u" && type != "p") {
      return FieldError(at + ".type", absl::StrCat("\"", type, "\" is not one of b, c, u, p"));
    }
    if (node.permissions().find_first_not_of("rwm") != std::string::npos) {
      return FieldError(at + ".permissions",
                        absl::StrCat("\"", node.permissions(), "\" is not made of r, w and m"));
    }
    if ((node.has_major_number() && node.major_number() < 0) ||
        (node.has_minor_number() && node.minor_number() < 0)) {
      return FieldError(at, "major and minor must not be negative");
    }
  }
  for (int i = 0; i < edits.mounts_size(); ++i) {
    const runtime::CdiMount& mount = edits.mounts(i);
    const std::string at = absl::StrCat(path, ".mounts[", i, "]");
    if (mount.host_path().empty()) return FieldError(at + ".hostPath", "missing");
    if (!absl::StartsWith(mount.container_path(), "/")) {
      return FieldError(at + ".containerPath",
                        absl::StrCat("\"", mount.container_path(), "\" is not absolute"));
    }
  }
  for (int i = 0; i < edits.hooks_size(); ++i) {
    const runtime::CdiHook& hook = edits.hooks(i);
    const std::string at = absl::StrCat(path, ".hooks[", i, "]");
    if (!IsHookName(hook.hook_name())) {
      return FieldError(at + ".hookName",
                        absl::StrCat("\"", hook.hook_name(),
                                     "\" is not one of prestart, createRuntime, createContainer, "
                                     "startContainer, poststart, poststop"));
    }
    if (hook.path().empty()) return FieldError(at + ".path", "missing");
  }
  return absl::OkStatus();
}

// The whole of a regular file of at most kMaxCdiSpecBytes.
absl::StatusOr<std::string> ReadSpecFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    const int error = errno;
    return absl::Status(
        error == ENOENT ? absl::StatusCode::kNotFound : absl::StatusCode::kPermissionDenied,
        absl::StrCat(path, ": cannot open: ", ErrnoText(error)));
  }
  std::string text;
  struct stat st;
  absl::Status status;
  if (fstat(fd, &st) != 0) {
    status = absl::InternalError(absl::StrCat(path, ": cannot stat: ", ErrnoText(errno)));
  } else if (!S_ISREG(st.st_mode)) {
    status = absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  } else if (static_cast<size_t>(st.st_size) > kMaxCdiSpecBytes) {
    status = absl::InvalidArgumentError(
        absl::StrCat(path, ": larger than ", kMaxCdiSpecBytes, " bytes"));
  } else {
    char buffer[65536];
    while (true) {
      ssize_t n = read(fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        status = absl::InternalError(absl::StrCat(path, ": cannot read: ", ErrnoText(errno)));
        break;
      }
      if (n == 0) break;
      text.append(buffer, static_cast<size_t>(n));
      if (text.size() > kMaxCdiSpecBytes) {
        status = absl::InvalidArgumentError(
            absl::StrCat(path, ": larger than ", kMaxCdiSpecBytes, " bytes"));
        break;
      }
    }
  }
  close(fd);
  if (!status.ok()) return status;
  return text;
}

// The spec files of `dir`, sorted by name: *.json and *.yaml that are (or link to) regular files.
// An empty list when it does not exist.
absl::StatusOr<std::vector<std::string>> ListSpecFiles(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    const int error = errno;
    if (error == ENOENT) return std::vector<std::string>{};
    return absl::Status(
        error == ENOTDIR ? absl::StatusCode::kInvalidArgument : absl::StatusCode::kPermissionDenied,
        absl::StrCat(dir, ": cannot read the CDI spec directory: ", ErrnoText(error)));
  }
  std::vector<std::string> names;
  while (dirent* entry = readdir(d)) {
    std::string name = entry->d_name;
    if (!absl::EndsWith(name, ".json") && !absl::EndsWith(name, ".yaml")) continue;
    struct stat st;
    const std::string path = absl::StrCat(dir, "/", name);
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    names.push_back(std::move(name));
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  std::vector<std::string> paths;
  for (const std::string& name : names) paths.push_back(absl::StrCat(dir, "/", name));
  return paths;
}

// Who defines a device so far, while the registry is built.
struct Definition {
  CdiDeviceRef ref;
  size_t dir_index = 0;
  // Set while two specs of dir_index define it: the other file's path.
  std::string conflict;
};

}  // namespace cdi_internal

std::vector<std::string> DefaultCdiDirs() { return {"/etc/cdi", "/var/run/cdi"}; }

absl::Status ValidateCdiSpec(const runtime::CdiSpec& spec) {
  using cdi_internal::EditsEmpty;
  using cdi_internal::FieldError;
  using cdi_internal::IsDeviceName;
  using cdi_internal::IsKindPart;
  using cdi_internal::IsVersion;
  using cdi_internal::ValidateEdits;
  if (spec.cdi_version().empty()) return FieldError("cdiVersion", "missing");
  if (!IsVersion(spec.cdi_version())) {
    return FieldError("cdiVersion",
                      absl::StrCat("\"", spec.cdi_version(), "\" is not MAJOR.MINOR.PATCH"));
  }
  std::vector<absl::string_view> kind = absl::StrSplit(spec.kind(), absl::MaxSplits('/', 1));
  if (spec.kind().empty()) return FieldError("kind", "missing");
  if (kind.size() != 2 || !IsKindPart(kind[0]) || !IsKindPart(kind[1])) {
    return FieldError("kind", absl::StrCat("\"", spec.kind(), "\" is not vendor.com/class"));
  }
  TC_RETURN_IF_ERROR(ValidateEdits(spec.container_edits(), "containerEdits"));
  if (spec.devices().empty()) return FieldError("devices", "no devices");
  std::map<std::string, int> seen;
  for (int i = 0; i < spec.devices_size(); ++i) {
    const runtime::CdiDevice& device = spec.devices(i);
    const std::string at = absl::StrCat("devices[", i, "]");
    if (!IsDeviceName(device.name())) {
      return FieldError(at + ".name",
                        absl::StrCat("\"", device.name(), "\" is not a valid device name"));
    }
    if (auto [it, added] = seen.emplace(device.name(), i); !added) {
      return FieldError(
          at + ".name",
          absl::StrCat("\"", device.name(), "\" is also the name of devices[", it->second, "]"));
    }
    if (EditsEmpty(device.container_edits())) {
      return FieldError(at + ".containerEdits", "no edits");
    }
    TC_RETURN_IF_ERROR(ValidateEdits(device.container_edits(), at + ".containerEdits"));
  }
  return absl::OkStatus();
}

absl::Status ParseQualifiedCdiName(absl::string_view qualified, std::string* kind,
                                   std::string* name) {
  using cdi_internal::IsDeviceName;
  using cdi_internal::IsKindPart;
  std::vector<absl::string_view> parts = absl::StrSplit(qualified, absl::MaxSplits('=', 1));
  std::vector<absl::string_view> kind_parts;
  if (parts.size() == 2) kind_parts = absl::StrSplit(parts[0], absl::MaxSplits('/', 1));
  if (kind_parts.size() != 2 || !IsKindPart(kind_parts[0]) || !IsKindPart(kind_parts[1]) ||
      !IsDeviceName(parts[1])) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", qualified, "\" is not a qualified CDI device name (vendor.com/class=name)"));
  }
  *kind = std::string(parts[0]);
  *name = std::string(parts[1]);
  return absl::OkStatus();
}

absl::StatusOr<runtime::CdiSpec> ParseCdiSpec(absl::string_view text) {
  runtime::CdiSpec spec;
  TC_RETURN_IF_ERROR(ParseYamlToMessage(text, &spec));
  TC_RETURN_IF_ERROR(ValidateCdiSpec(spec));
  return spec;
}

absl::StatusOr<CdiRegistry> LoadCdiSpecs(const std::vector<std::string>& dirs) {
  using cdi_internal::Definition;
  using cdi_internal::ListSpecFiles;
  using cdi_internal::ReadSpecFile;
  CdiRegistry registry;
  for (const std::string& dir : dirs) {
    if (!absl::StartsWith(dir, "/")) {
      return absl::InvalidArgumentError(
          absl::StrCat("CDI spec directory \"", dir, "\" is not absolute"));
    }
    registry.dirs.push_back(dir);
  }
  for (size_t d = 0; d < registry.dirs.size(); ++d) {
    absl::StatusOr<std::vector<std::string>> files = ListSpecFiles(registry.dirs[d]);
    if (!files.ok()) {
      registry.errors.push_back(files.status());
      continue;
    }
    for (const std::string& path : *files) {
      absl::StatusOr<std::string> text = ReadSpecFile(path);
      if (!text.ok()) {
        registry.errors.push_back(text.status());
        continue;
      }
      absl::StatusOr<runtime::CdiSpec> spec = ParseCdiSpec(*text);
      if (!spec.ok()) {
        registry.errors.push_back(
            absl::Status(spec.status().code(),
                         absl::StrCat(path, ": invalid CDI spec: ", spec.status().message())));
        continue;
      }
      registry.specs.push_back({path, d, *std::move(spec)});
    }
  }
  // Specs come by directory, so a definition is only ever replaced by a later directory's.
  std::map<std::string, Definition> defined;
  for (size_t s = 0; s < registry.specs.size(); ++s) {
    const CdiSpecFile& file = registry.specs[s];
    for (int i = 0; i < file.spec.devices_size(); ++i) {
      const std::string name = absl::StrCat(file.spec.kind(), "=", file.spec.devices(i).name());
      auto [it, added] = defined.try_emplace(name);
      Definition& def = it->second;
      if (!added && def.dir_index == file.dir_index) {
        if (def.conflict.empty()) {
          def.conflict = file.path;
          const std::string& first = registry.specs[def.ref.spec_index].path;
          registry.errors.push_back(absl::FailedPreconditionError(
              absl::StrCat(first, ": device ", name, " is also defined by ", file.path,
                           " in the same directory; neither is used")));
        }
        continue;
      }
      def.ref = {s, i};
      def.dir_index = file.dir_index;
      def.conflict.clear();
    }
  }
  for (auto& [name, def] : defined) {
    if (def.conflict.empty()) registry.devices.emplace(name, def.ref);
  }
  return registry;
}

}  // namespace trainctl::agent
