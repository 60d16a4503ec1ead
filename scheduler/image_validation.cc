// The image fields of a worker pool (image_validation.h).
#include "scheduler/image_validation.h"

#include <algorithm>
#include <map>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/names.h"

namespace trainctl::sched {
namespace {

absl::Status ImageInvalid(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, " ", what));
}

bool IsLowerAlnumChar(char c) { return absl::ascii_islower(c) || absl::ascii_isdigit(c); }

// [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*: one component of a repository's path.
bool IsImagePathComponent(absl::string_view s) {
  size_t i = 0;
  while (true) {
    const size_t start = i;
    while (i < s.size() && IsLowerAlnumChar(s[i])) ++i;
    if (i == start) return false;  // empty, or a separator where letters belong
    if (i == s.size()) return true;
    if (s[i] == '.') {
      ++i;
    } else if (s[i] == '_') {
      i += (i + 1 < s.size() && s[i + 1] == '_') ? 2 : 1;
    } else if (s[i] == '-') {
      while (i < s.size() && s[i] == '-') ++i;
    } else {
      return false;
    }
  }
}

// [A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?
bool IsRegistryHostLabel(absl::string_view s) {
  if (s.empty() || s.front() == '-' || s.back() == '-') return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(c) && c != '-') return false;
  }
  return true;
}

// A registry: a host name of labels joined by '.' or an IPv6 address in brackets, with an
// optional :port of 1..65535.
bool IsImageRegistry(absl::string_view s) {
  absl::string_view host = s;
  const size_t bracket = s.rfind(']');
  const size_t colon = s.rfind(':');
  if (colon != absl::string_view::npos && (bracket == absl::string_view::npos || colon > bracket)) {
    const absl::string_view port = s.substr(colon + 1);
    int number = 0;
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return absl::ascii_isdigit(c); }) ||
        !absl::SimpleAtoi(port, &number) || number < 1 || number > 65535) {
      return false;
    }
    host = s.substr(0, colon);
  }
  if (absl::StartsWith(host, "[")) {
    if (host.size() < 3 || host.back() != ']') return false;
    const absl::string_view inside = host.substr(1, host.size() - 2);
    return std::all_of(inside.begin(), inside.end(),
                       [](char c) { return absl::ascii_isxdigit(c) || c == ':' || c == '.'; });
  }
  const std::vector<absl::string_view> labels = absl::StrSplit(host, '.');
  return std::all_of(labels.begin(), labels.end(), IsRegistryHostLabel);
}

// [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
bool IsImageTag(absl::string_view s) {
  if (s.empty() || s.size() > 128 || s.front() == '.' || s.front() == '-') return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(c) && c != '_' && c != '.' && c != '-') return false;
  }
  return true;
}

// What is wrong with the reference `image`, or "" when nothing is.
std::string ImageReferenceProblem(const std::string& image) {
  absl::string_view rest = image;
  if (const size_t at = rest.find('@'); at != absl::string_view::npos) {
    if (!IsSha256Digest(rest.substr(at + 1))) {
      return "its digest (after '@') must be \"sha256:\" and 64 lowercase hex digits";
    }
    rest = rest.substr(0, at);
  }
  const size_t slash = rest.rfind('/');
  const size_t colon = rest.rfind(':');
  if (colon != absl::string_view::npos && (slash == absl::string_view::npos || colon > slash)) {
    const absl::string_view tag = rest.substr(colon + 1);
    if (!IsImageTag(tag)) {
      return absl::StrCat("its tag \"", tag,
                          "\" must be 1..128 characters of A-Z, a-z, 0-9, '_', '.' and '-', not "
                          "starting with '.' or '-'");
    }
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) return "it names no repository";
  std::vector<absl::string_view> parts = absl::StrSplit(rest, '/');
  if (parts.size() > 1 && (absl::StrContains(parts[0], '.') || absl::StrContains(parts[0], ':') ||
                           parts[0] == "localhost")) {
    if (!IsImageRegistry(parts[0])) {
      return absl::StrCat("its registry \"", parts[0],
                          "\" must be a host name or a [IPv6 address], with an optional :port "
                          "of 1..65535");
    }
    parts.erase(parts.begin());
  }
  for (absl::string_view part : parts) {
    if (!IsImagePathComponent(part)) {
      return absl::StrCat("its repository's part \"", part,
                          "\" must be lowercase letters and digits, joined by '.', '_', '__' or "
                          "'-'");
    }
  }
  return "";
}

// What is wrong with `p` as an absolute, lexically normal path, or "" when nothing is.
std::string MountPathProblem(const std::string& p) {
  if (p.empty() || p[0] != '/') return "must be absolute";
  if (p.size() > kMaxMountPathLength) {
    return absl::StrCat("must be at most ", kMaxMountPathLength, " bytes");
  }
  if (p == "/") return "";
  for (absl::string_view part : absl::StrSplit(absl::string_view(p).substr(1), '/')) {
    if (part.empty() || part == "." || part == "..") {
      return "must be lexically normal (no \".\" or \"..\" parts, no repeated or trailing '/')";
    }
  }
  return "";
}

// Whether `p` is `dir` or lies under it.
bool IsMountAtOrUnder(const std::string& p, absl::string_view dir) {
  return p == dir || (absl::StartsWith(p, dir) && p.size() > dir.size() && p[dir.size()] == '/');
}

absl::Status ValidateImageMounts(const std::string& path, const v1::WorkerPool& pool) {
  if (pool.mounts_size() > kMaxImageMounts) {
    return ImageInvalid(path + ".mounts", absl::StrCat("holds at most ", kMaxImageMounts,
                                                       " mounts, got ", pool.mounts_size()));
  }
  std::map<std::string, int> seen;
  for (int i = 0; i < pool.mounts_size(); ++i) {
    const v1::ImageMount& m = pool.mounts(i);
    const std::string at = absl::StrCat(path, ".mounts[", i, "]");
    if (std::string why = MountPathProblem(m.host_path()); !why.empty()) {
      return ImageInvalid(at + ".hostPath",
                          absl::StrCat(why, ", got \"", m.host_path().substr(0, 300), "\""));
    }
    if (std::string why = MountPathProblem(m.path()); !why.empty()) {
      return ImageInvalid(at + ".path",
                          absl::StrCat(why, ", got \"", m.path().substr(0, 300), "\""));
    }
    if (m.path() == "/" || IsMountAtOrUnder(m.path(), "/proc") ||
        IsMountAtOrUnder(m.path(), "/sys") || IsMountAtOrUnder(m.path(), "/dev")) {
      return ImageInvalid(at + ".path",
                          absl::StrCat("must not be \"/\" or lie under /proc, /sys or /dev, got \"",
                                       m.path(), "\""));
    }
    auto [other, added] = seen.emplace(m.path(), i);
    if (!added) {
      return ImageInvalid(at + ".path", absl::StrCat("\"", m.path(), "\" is also the path of ",
                                                     path, ".mounts[", other->second, "]"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateImageReference(const std::string& path, const std::string& image) {
  if (image.size() > kMaxImageReferenceLength) {
    return ImageInvalid(path, absl::StrCat("must be at most ", kMaxImageReferenceLength,
                                           " characters, got ", image.size()));
  }
  if (std::string why = ImageReferenceProblem(image); !why.empty()) {
    return ImageInvalid(path, absl::StrCat("must be an OCI image reference such as "
                                           "registry:5000/team/train:1.4: ",
                                           why, "; got \"", image, "\""));
  }
  return absl::OkStatus();
}

absl::Status ValidatePoolImage(const std::string& path, const v1::WorkerPool& pool) {
  const std::string image_path = path + ".image";
  if (!pool.image().empty()) {
    if (absl::Status s = ValidateImageReference(image_path, pool.image()); !s.ok()) return s;
  }
  if (!v1::ImagePullPolicy_IsValid(pool.image_pull_policy())) {
    return ImageInvalid(
        path + ".imagePullPolicy",
        absl::StrCat("must be IF_NOT_PRESENT or ALWAYS, got ", pool.image_pull_policy()));
  }
  if (!pool.image_pull_secret().empty()) {
    if (pool.image().empty()) {
      return ImageInvalid(path + ".imagePullSecret", absl::StrCat("is only used with ", image_path,
                                                                  "; set an image or remove it"));
    }
    if (!IsSecretName(pool.image_pull_secret())) {
      return ImageInvalid(path + ".imagePullSecret",
                          absl::StrCat("must name a secret: 1 to 253 characters of A-Z, a-z, 0-9, "
                                       "'_', '.' and '-', starting with a letter or digit; got \"",
                                       pool.image_pull_secret().substr(0, 300), "\""));
    }
  }
  if (pool.mounts_size() > 0 && pool.image().empty()) {
    return ImageInvalid(path + ".mounts",
                        absl::StrCat("are only used with ", image_path,
                                     " (they are bound into its containers); set an image or "
                                     "remove them"));
  }
  return ValidateImageMounts(path, pool);
}

}  // namespace trainctl::sched
