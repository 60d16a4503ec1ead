#include "server/project_secrets.h"

#include "absl/strings/str_cat.h"
#include "common/names.h"

namespace trainctl::server {

absl::Status ProjectSecrets::ValidateName(const std::string& name) {
  if (IsSecretName(name)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("secret name must be 1 to 253 characters of A-Z, a-z, 0-9, '_', '.' and '-', "
                   "starting with a letter or digit, got \"",
                   name.substr(0, 300), "\""));
}

void ProjectSecrets::Restore(std::vector<storage::SecretRow> rows) {
  absl::MutexLock lock(&mu_);
  for (storage::SecretRow& r : rows) {
    std::pair<std::string, std::string> key{r.project, r.name};
    rows_[std::move(key)] = std::move(r);
  }
}

absl::StatusOr<storage::SecretRow> ProjectSecrets::Set(const std::string& project,
                                                       const std::string& name,
                                                       const std::string& value,
                                                       absl::Time now) const {
  if (absl::Status s = ValidateName(name); !s.ok()) return s;
  if (value.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("secret ", name, " needs a value"));
  }
  if (static_cast<int64_t>(value.size()) > kMaxValueBytes) {
    return absl::InvalidArgumentError(absl::StrCat("secret ", name, " is ", value.size(),
                                                   " bytes; a secret holds at most ",
                                                   kMaxValueBytes, " bytes"));
  }
  storage::SecretRow row;
  row.project = project;
  row.name = name;
  row.sealed = key_.Seal(Binding(project, name), value);
  row.size = static_cast<int64_t>(value.size());
  row.update_ms = absl::ToUnixMillis(now);
  return row;
}

void ProjectSecrets::Apply(storage::SecretRow row) {
  absl::MutexLock lock(&mu_);
  std::pair<std::string, std::string> key{row.project, row.name};
  rows_[std::move(key)] = std::move(row);
}

absl::Status ProjectSecrets::CheckExists(const std::string& project,
                                         const std::string& name) const {
  absl::MutexLock lock(&mu_);
  if (rows_.count({project, name}) != 0) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat("project ", project, " has no secret named ", name));
}

void ProjectSecrets::Forget(const std::string& project, const std::string& name) {
  absl::MutexLock lock(&mu_);
  rows_.erase({project, name});
}

std::vector<SecretInfo> ProjectSecrets::List(const std::string& project) const {
  absl::MutexLock lock(&mu_);
  std::vector<SecretInfo> out;
  auto it = project.empty() ? rows_.begin() : rows_.lower_bound({project, ""});
  for (; it != rows_.end() && (project.empty() || it->first.first == project); ++it) {
    const storage::SecretRow& r = it->second;
    out.push_back({r.project, r.name, r.size, r.update_ms});
  }
  return out;
}

absl::StatusOr<SecretInfo> ProjectSecrets::Find(const std::string& project,
                                                const std::string& name) const {
  {
    absl::MutexLock lock(&mu_);
    auto it = rows_.find({project, name});
    if (it != rows_.end()) {
      const storage::SecretRow& r = it->second;
      return SecretInfo{r.project, r.name, r.size, r.update_ms};
    }
  }
  return CheckExists(project, name);  // NOT_FOUND, worded as everywhere
}

absl::StatusOr<std::string> ProjectSecrets::Open(const std::string& project,
                                                 const std::string& name) const {
  std::string sealed;
  {
    absl::MutexLock lock(&mu_);
    auto it = rows_.find({project, name});
    if (it == rows_.end()) {
      return absl::NotFoundError(absl::StrCat("project ", project, " has no secret named ", name));
    }
    sealed = it->second.sealed;
  }
  return key_.Open(Binding(project, name), sealed);
}

}  // namespace trainctl::server
