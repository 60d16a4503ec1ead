// Container Device Interface (CDI): the spec files vendors' tools put in /etc/cdi and
// /var/run/cdi (`nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`), which say what a
// container needs to use a device: device nodes, mounts (driver libraries), environment
// variables and OCI hooks (proto/trainctl/runtime/cdi.proto). The agent reads them to give a
// replica's container the GPUs allocated to it ("nvidia.com/gpu=0", "nvidia.com/gpu=all").
//
// As the CDI specification and its reference implementation's registry do:
//   - a spec file is <dir>/*.json or <dir>/*.yaml (symlinks followed), YAML or JSON, parsed
//     strictly (common/spec_parse.h: an unknown key is an error naming it) and validated;
//   - a file that cannot be read or is invalid is left out with an error naming it, and the
//     others load all the same (CdiRegistry::errors);
//   - for the same device ("<kind>=<name>"), a spec of a later directory wins over one of an
//     earlier directory; two of one directory conflict, and the device is left out (an error
//     names both files) unless a later directory defines it;
//   - devices of one spec get its spec-level containerEdits once, before the first of them;
//   - a device node without type, major or minor gets them from its host node (stat of hostPath,
//     or of path when hostPath is empty), and its file mode too where it has none.
//
//   TC_ASSIGN_OR_RETURN(CdiRegistry cdi, LoadCdiSpecs(DefaultCdiDirs()));
//   for (const absl::Status& e : cdi.errors) spdlog::warn("CDI: {}", e.message());
//   TC_ASSIGN_OR_RETURN(runtime::ContainerEdits edits,
//                       ResolveCdiDevices(cdi, {"nvidia.com/gpu=0", "nvidia.com/gpu=1"}));
//   runtime::Spec spec = BuildContainerSpec(req);  // agents/oci_bundle.h
//   ApplyCdiEdits(edits, &spec);
//
// Thread-safe: the functions keep no state; a CdiRegistry may be read from many threads.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "trainctl/runtime/cdi.pb.h"
#include "trainctl/runtime/oci.pb.h"

namespace trainctl::agent {

// The spec directories, in order of priority (a later one wins): /etc/cdi, /var/run/cdi.
std::vector<std::string> DefaultCdiDirs();

// The largest spec file read; a larger one is an error.
inline constexpr size_t kMaxCdiSpecBytes = 16 << 20;

struct CdiSpecFile {
  std::string path;
  size_t dir_index = 0;  // its directory's index in CdiRegistry::dirs: its priority
  runtime::CdiSpec spec;
};

// Where a device is defined: CdiRegistry::specs[spec_index].spec.devices(device_index).
struct CdiDeviceRef {
  size_t spec_index = 0;
  int device_index = 0;
};

struct CdiRegistry {
  std::vector<std::string> dirs;   // searched, in order of priority
  std::vector<CdiSpecFile> specs;  // every valid file, by directory, then by name
  // Every device by its qualified name, "nvidia.com/gpu=0".
  std::map<std::string, CdiDeviceRef> devices;
  // Why a file was left out (INVALID_ARGUMENT for an invalid one, another code when it could not
  // be read), or a device: each message starts with the file's path.
  std::vector<absl::Status> errors;
};

// Reads every spec file of `dirs` (absolute; a missing one is skipped). INVALID_ARGUMENT only for
// a relative directory: what is wrong with a file or a directory goes to CdiRegistry::errors.
absl::StatusOr<CdiRegistry> LoadCdiSpecs(const std::vector<std::string>& dirs);

// One spec file's text (YAML or JSON), parsed and validated. INVALID_ARGUMENT with the path of the
// offending field ("devices[1].containerEdits.deviceNodes[0].path: ...").
absl::StatusOr<runtime::CdiSpec> ParseCdiSpec(absl::string_view text);

// What ParseCdiSpec checks: cdiVersion is "MAJOR.MINOR.PATCH"; kind is "vendor/class" (the
// vendor a domain-like name, both starting with a letter and ending with a letter or digit, of
// letters, digits, '-', '_' and '.'); at least one device; device names of letters, digits,
// '-', '_', '.' and ':' starting and ending with a letter or digit, unique, each with some
// containerEdits; env entries "NAME=VALUE"; device node paths absolute, types one of b, c, u, p,
// permissions of r, w and m; mounts with a hostPath and an absolute containerPath; hooks with a
// known hookName and a path.
absl::Status ValidateCdiSpec(const runtime::CdiSpec& spec);

// Splits a qualified device name, "nvidia.com/gpu=0", into its kind ("nvidia.com/gpu") and
// name ("0"). INVALID_ARGUMENT when it is not "<vendor>/<class>=<name>" with the names
// ValidateCdiSpec accepts.
absl::Status ParseQualifiedCdiName(absl::string_view qualified, std::string* kind,
                                   std::string* name);

// The edits that give a container the devices `qualified_names` ("nvidia.com/gpu=0") name, in
// order, each once: a spec's containerEdits before its first device's, then each device's, with
// the device nodes' type, major, minor (and file mode) filled in from the host.
// INVALID_ARGUMENT for a name that is not "<vendor>/<class>=<name>"; FAILED_PRECONDITION for a
// device no spec defines ("no CDI spec on this host defines nvidia.com/gpu=3 (searched /etc/cdi,
// /var/run/cdi)", with the first error of CdiRegistry::errors when there are some) or whose host
// node cannot be read.
absl::StatusOr<runtime::ContainerEdits> ResolveCdiDevices(
    const CdiRegistry& registry, const std::vector<std::string>& qualified_names);

// Applies `edits` (from ResolveCdiDevices) to `spec`: env entries replace those of the same name
// or are appended; device nodes are added to linux.devices (replacing one of the same path) and
// allowed in linux.resources.devices (access: permissions, "rwm" when empty; none for a fifo, or
// for a node without major and minor, which ResolveCdiDevices never leaves); mounts are added
// with SetMount (oci_bundle.h; type "bind" with a "bind" option when they have no type);
// additionalGids join process.user.additionalGids; hooks join the OCI hook list of their
// hookName.
void ApplyCdiEdits(const runtime::ContainerEdits& edits, runtime::Spec* spec);

}  // namespace trainctl::agent
