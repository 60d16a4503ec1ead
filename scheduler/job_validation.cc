#include "scheduler/job_validation.h"

#include <cmath>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace trainctl::sched {
namespace {

absl::Status Invalid(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, " ", what));
}

bool IsEnvName(const std::string& name) {
  if (name.empty() || name.size() > 256) return false;
  if (!(isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char c : name) {
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

absl::Status ValidateResources(const std::string& path, const v1::Resources& r) {
  if (!std::isfinite(r.cpu()) || r.cpu() < 0 || r.cpu() > 4096) {
    return Invalid(path + ".cpu", absl::StrCat("must be 0..4096 cores, got ", r.cpu()));
  }
  if (r.memory_mb() < 0 || r.memory_mb() > (int64_t{1} << 30)) {
    return Invalid(path + ".memoryMb", absl::StrCat("must be 0..1073741824, got ", r.memory_mb()));
  }
  if (r.gpus() < 0 || r.gpus() > 1024) {
    return Invalid(path + ".gpus", absl::StrCat("must be 0..1024, got ", r.gpus()));
  }
  return absl::OkStatus();
}

absl::Status ValidatePool(const std::string& path, int index, const v1::WorkerPool& pool) {
  if (!IsDnsLabel(pool.name(), 40)) {
    return Invalid(path + ".name",
                   absl::StrCat("must be 1..40 characters of a-z, 0-9 and '-', starting and ending "
                                "with a letter or digit; got \"",
                                pool.name(), "\""));
  }
  if (pool.replica_count() < 1 || pool.replica_count() > kMaxReplicasPerPool) {
    return Invalid(path + ".replicaCount", absl::StrCat("must be 1..", kMaxReplicasPerPool,
                                                        ", got ", pool.replica_count()));
  }
  if (index == 0 && pool.replica_count() != 1) {
    return Invalid(
        path + ".replicaCount",
        absl::StrCat("must be 1: pool 0 holds the primary replica, got ", pool.replica_count()));
  }
  if (pool.command().empty() || pool.command(0).empty()) {
    return Invalid(path + ".command", "must name the program to run, e.g. [python3, train.py]");
  }
  if (pool.command_size() + pool.args_size() > kMaxArgs) {
    return Invalid(path + ".args",
                   absl::StrCat("command and args hold at most ", kMaxArgs, " items in all"));
  }
  for (int i = 0; i < pool.command_size(); ++i) {
    if (pool.command(i).size() > kMaxArgLength || absl::StrContains(pool.command(i), '\0')) {
      return Invalid(absl::StrCat(path, ".command[", i, "]"),
                     absl::StrCat("must be at most ", kMaxArgLength, " bytes with no NUL"));
    }
  }
  for (int i = 0; i < pool.args_size(); ++i) {
    if (pool.args(i).size() > kMaxArgLength || absl::StrContains(pool.args(i), '\0')) {
      return Invalid(absl::StrCat(path, ".args[", i, "]"),
                     absl::StrCat("must be at most ", kMaxArgLength, " bytes with no NUL"));
    }
  }
  if (pool.env_size() > kMaxEnv) {
    return Invalid(path + ".env", absl::StrCat("holds at most ", kMaxEnv, " variables"));
  }
  for (const auto& [key, value] : pool.env()) {
    std::string p = absl::StrCat(path, ".env[\"", key, "\"]");
    if (!IsEnvName(key)) return Invalid(p, "is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)");
    if (absl::StartsWith(key, "TRAINCTL_")) {
      return Invalid(p, "uses the reserved prefix TRAINCTL_; trainctl sets these itself");
    }
    if (value.size() > kMaxArgLength || absl::StrContains(value, '\0')) {
      return Invalid(p, absl::StrCat("must be at most ", kMaxArgLength, " bytes with no NUL"));
    }
  }
  return ValidateResources(path + ".resources", pool.resources());
}

absl::Status ValidateDuration(const std::string& path, const google::protobuf::Duration& d,
                              int64_t max_seconds) {
  if (d.seconds() < 0 || d.nanos() < 0 || d.seconds() > max_seconds) {
    return Invalid(path, absl::StrCat("must be between 0s and ", max_seconds, "s"));
  }
  return absl::OkStatus();
}

}  // namespace

bool IsDnsLabel(const std::string& name, size_t max_len) {
  if (name.empty() || name.size() > max_len) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return name.front() != '-' && name.back() != '-';
}

absl::Status ValidateJobSpec(const v1::JobSpec& spec) {
  if (spec.display_name().size() > kMaxDisplayNameLength) {
    return Invalid("displayName", absl::StrCat("must be at most ", kMaxDisplayNameLength,
                                               " characters, got ", spec.display_name().size()));
  }
  if (!spec.project().empty() && !IsDnsLabel(spec.project(), 63)) {
    return Invalid("project", absl::StrCat("must be 1..63 characters of a-z, 0-9 and '-'; got \"",
                                           spec.project(), "\""));
  }
  if (spec.priority() < -1000 || spec.priority() > 1000) {
    return Invalid("priority", absl::StrCat("must be -1000..1000, got ", spec.priority()));
  }
  if (spec.worker_pools().empty()) {
    return Invalid("workerPools", "must hold at least one pool (pool 0 is the primary replica)");
  }
  if (spec.worker_pools_size() > kMaxPools) {
    return Invalid("workerPools", absl::StrCat("holds at most ", kMaxPools, " pools, got ",
                                               spec.worker_pools_size()));
  }
  std::set<std::string> names;
  int64_t total = 0;
  for (int i = 0; i < spec.worker_pools_size(); ++i) {
    const std::string path = absl::StrCat("workerPools[", i, "]");
    TC_RETURN_IF_ERROR(ValidatePool(path, i, spec.worker_pools(i)));
    if (!names.insert(spec.worker_pools(i).name()).second) {
      return Invalid(path + ".name",
                     absl::StrCat("\"", spec.worker_pools(i).name(), "\" is used by another pool"));
    }
    total += spec.worker_pools(i).replica_count();
  }
  if (total > kMaxReplicasPerJob) {
    return Invalid("workerPools", absl::StrCat("hold at most ", kMaxReplicasPerJob,
                                               " replicas in all, got ", total));
  }
  TC_RETURN_IF_ERROR(
      ValidateDuration("scheduling.stopGracePeriod", spec.scheduling().stop_grace_period(), 3600));
  TC_RETURN_IF_ERROR(
      ValidateDuration("scheduling.timeout", spec.scheduling().timeout(), 366LL * 86400));
  if (!spec.checkpoint_dir().empty()) {
    if (spec.checkpoint_dir()[0] != '/' || spec.checkpoint_dir().size() > 4096 ||
        absl::StrContains(spec.checkpoint_dir(), '\0')) {
      return Invalid("checkpointDir",
                     absl::StrCat("must be an absolute path, got \"", spec.checkpoint_dir(), "\""));
    }
  }
  if (spec.labels_size() > kMaxLabels) {
    return Invalid("labels", absl::StrCat("holds at most ", kMaxLabels, " labels"));
  }
  for (const auto& [key, value] : spec.labels()) {
    if (key.empty() || key.size() > 63 || value.size() > 256) {
      return Invalid(absl::StrCat("labels[\"", key, "\"]"),
                     "keys must be 1..63 characters and values at most 256");
    }
  }
  return absl::OkStatus();
}

void ApplyDefaults(v1::JobSpec* spec) {
  if (spec->project().empty()) spec->set_project(kDefaultProject);
  if (!spec->scheduling().has_stop_grace_period()) {
    spec->mutable_scheduling()->mutable_stop_grace_period()->set_seconds(kDefaultStopGraceMs /
                                                                         1000);
  }
}

}  // namespace trainctl::sched
