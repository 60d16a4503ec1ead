#include "scheduler/job_validation.h"

#include <re2/re2.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/names.h"
#include "common/signals.h"
#include "common/status_macros.h"
#include "common/time_util.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "scheduler/elastic.h"
#include "scheduler/image_validation.h"
#include "scheduler/job_arrays.h"
#include "scheduler/node_selection.h"
#include "scheduler/retry_engine.h"
#include "scheduler/topology.h"

namespace trainctl::sched {
namespace {

// Variables that say which devices a replica owns and its place on its host: a job that set
// them would run on GPUs another replica owns.
bool IsDeviceVariable(const std::string& key) {
  static const std::set<std::string>* const kNames =
      new std::set<std::string>{"CUDA_VISIBLE_DEVICES",
                                "NVIDIA_VISIBLE_DEVICES",
                                "CUDA_DEVICE_ORDER",
                                "LOCAL_RANK",
                                "LOCAL_WORLD_SIZE",
                                "NODE_RANK",
                                "GROUP_RANK"};
  return kNames->count(key) > 0;
}

absl::Status Invalid(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, " ", what));
}

// scheduling.progressPattern: RE2 (linear time, whatever the replicas print) with a group step.
absl::Status ValidateProgressPattern(const std::string& pattern) {
  if (pattern.empty()) return absl::OkStatus();
  constexpr char kPath[] = "scheduling.progressPattern";
  constexpr char kExample[] = "e.g. 'step (?P<step>\\d+)'";
  if (pattern.size() > 256 || pattern.find_first_of("\n\r") != std::string::npos) {
    return Invalid(
        kPath, absl::StrCat("must be one line of at most 256 characters, got ", pattern.size()));
  }
  re2::RE2::Options options;
  options.set_log_errors(false);
  const re2::RE2 re(pattern, options);
  if (!re.ok()) {
    return Invalid(kPath, absl::StrCat("must be a regular expression (RE2 syntax), ", kExample,
                                       ": ", re.error()));
  }
  if (re.NamedCapturingGroups().count("step") == 0) {
    return Invalid(kPath, absl::StrCat("must have a group named step, ", kExample));
  }
  return absl::OkStatus();
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

// The most secretRefs entries a pool may have.
constexpr int kMaxSecretRefs = 64;

absl::Status ValidateSecretRefs(const std::string& path, const v1::WorkerPool& pool) {
  if (pool.secret_refs_size() > kMaxSecretRefs) {
    return Invalid(path + ".secretRefs",
                   absl::StrCat("holds at most ", kMaxSecretRefs, " entries"));
  }
  for (const auto& [var, name] : pool.secret_refs()) {
    std::string p = absl::StrCat(path, ".secretRefs[\"", var, "\"]");
    if (!IsEnvName(var)) return Invalid(p, "is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)");
    if (absl::StartsWith(var, "TRAINCTL_")) {
      return Invalid(p, "uses the reserved prefix TRAINCTL_; trainctl sets these itself");
    }
    if (IsDeviceVariable(var)) {
      return Invalid(p, "is set by trainctl for each replica (its GPUs and host-local ranks)");
    }
    if (pool.env().count(var) > 0) {
      return Invalid(p, absl::StrCat("is also set by ", path, ".env; set it in one place"));
    }
    if (!IsSecretName(name)) {
      return Invalid(p, absl::StrCat("must name a secret: 1 to 253 characters of A-Z, a-z, 0-9, "
                                     "'_', '.' and '-', starting with a letter or digit; got \"",
                                     name.substr(0, 300), "\""));
    }
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
    if (IsDeviceVariable(key)) {
      return Invalid(p, "is set by trainctl for each replica (its GPUs and host-local ranks)");
    }
    if (value.size() > kMaxArgLength || absl::StrContains(value, '\0')) {
      return Invalid(p, absl::StrCat("must be at most ", kMaxArgLength, " bytes with no NUL"));
    }
  }
  for (int i = 0; i < pool.secret_env_size(); ++i) {
    if (pool.env().count(pool.secret_env(i)) == 0) {
      return Invalid(absl::StrCat(path, ".secretEnv[", i, "]"),
                     absl::StrCat("\"", pool.secret_env(i), "\" is not a key of ", path, ".env"));
    }
  }
  TC_RETURN_IF_ERROR(ValidateSecretRefs(path, pool));
  TC_RETURN_IF_ERROR(ValidatePoolImage(path, pool));
  TC_RETURN_IF_ERROR(ValidateNodeSelection(path, pool));
  TC_RETURN_IF_ERROR(ValidateElastic(path, index, pool));
  return ValidateResources(path + ".resources", pool.resources());
}

absl::Status ValidateDuration(const std::string& path, const google::protobuf::Duration& d,
                              int64_t max_seconds) {
  return ValidateProtoDuration(path, d, max_seconds);
}

absl::Status ValidateCount(const std::string& path, bool has, int32_t value) {
  if (has && (value < 0 || value > 100)) {
    return Invalid(path, absl::StrCat("must be 0..100, got ", value));
  }
  return absl::OkStatus();
}

absl::Status ValidateSignals(const std::string& path,
                             const google::protobuf::RepeatedPtrField<std::string>& signals) {
  for (int i = 0; i < signals.size(); ++i) {
    if (!ParseSignal(signals[i])) {
      return Invalid(absl::StrCat(path, "[", i, "]"),
                     absl::StrCat("is not a signal: \"", signals[i],
                                  "\"; use a name like SIGSEGV or a number like 11"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateExitCodes(const std::string& path,
                               const google::protobuf::RepeatedField<int32_t>& codes) {
  for (int i = 0; i < codes.size(); ++i) {
    if (codes[i] < 1 || codes[i] > 255) {
      return Invalid(absl::StrCat(path, "[", i, "]"),
                     absl::StrCat("must be an exit code 1..255, got ", codes[i]));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateBackoff(const std::string& path, const v1::Backoff& b) {
  TC_RETURN_IF_ERROR(ValidateDuration(path + ".initial", b.initial(), 3600));
  TC_RETURN_IF_ERROR(ValidateDuration(path + ".max", b.max(), 86400));
  if (b.multiplier() != 0 && (!(b.multiplier() >= 1) || b.multiplier() > 10)) {
    return Invalid(path + ".multiplier", absl::StrCat("must be 1..10, got ", b.multiplier()));
  }
  return absl::OkStatus();
}

// scheduling.preemptionSignal, minRuntime and preemptionGracePeriod.
absl::Status ValidatePreemption(const v1::Scheduling& s) {
  if (!s.preemption_signal().empty() && !ParseSignal(s.preemption_signal())) {
    return Invalid("scheduling.preemptionSignal",
                   absl::StrCat("is not a signal: \"", s.preemption_signal(),
                                "\"; use a name like SIGTERM or a number like 15"));
  }
  TC_RETURN_IF_ERROR(ValidateDuration("scheduling.minRuntime", s.min_runtime(), 366LL * 86400));
  const google::protobuf::Duration& grace = s.preemption_grace_period();
  if (!ValidateDuration("scheduling.preemptionGracePeriod", grace, 3600).ok()) {
    const bool whole_ms = grace.seconds() >= 0 && grace.nanos() >= 0 &&
                          grace.nanos() <= 999'999'999 && grace.nanos() % 1'000'000 == 0;
    return Invalid(
        "scheduling.preemptionGracePeriod",
        absl::StrCat("must be 0s..1h, got ",
                     whole_ms ? FormatDurationExact(DurationToMs(grace))
                              : absl::StrCat(grace.seconds(), "s and ", grace.nanos(), "ns")));
  }
  return absl::OkStatus();
}

absl::Status ValidateScheduling(const v1::JobSpec& spec) {
  const v1::Scheduling& s = spec.scheduling();
  TC_RETURN_IF_ERROR(ValidateDuration("scheduling.stopGracePeriod", s.stop_grace_period(), 3600));
  TC_RETURN_IF_ERROR(ValidateDuration("scheduling.timeout", s.timeout(), 366LL * 86400));
  TC_RETURN_IF_ERROR(
      ValidateDuration("scheduling.expectedDuration", s.expected_duration(), 366LL * 86400));
  TC_RETURN_IF_ERROR(ValidateCount("scheduling.maxReplicaRestarts", s.has_max_replica_restarts(),
                                   s.max_replica_restarts()));
  TC_RETURN_IF_ERROR(
      ValidateCount("scheduling.maxJobRetries", s.has_max_job_retries(), s.max_job_retries()));
  TC_RETURN_IF_ERROR(ValidateCount("scheduling.maxInternalRetries", s.has_max_internal_retries(),
                                   s.max_internal_retries()));
  TC_RETURN_IF_ERROR(ValidateCount("scheduling.maxCapacityRetries", s.has_max_capacity_retries(),
                                   s.max_capacity_retries()));
  TC_RETURN_IF_ERROR(ValidatePlacement(s.placement()));
  const v1::FaultTolerance& ft = spec.fault_tolerance();
  if (ft.has_job_retry_num() && (ft.job_retry_num() < 0 || ft.job_retry_num() > 3)) {
    return Invalid(
        "faultTolerance.jobRetryNum",
        absl::StrCat("must be 0..3 (0 turns re-dispatch off), got ", ft.job_retry_num()));
  }
  TC_RETURN_IF_ERROR(ValidateExitCodes("scheduling.transientExitCodes", s.transient_exit_codes()));
  TC_RETURN_IF_ERROR(ValidateSignals("scheduling.transientSignals", s.transient_signals()));
  if (s.exit_code_rules_size() > 32) {
    return Invalid("scheduling.exitCodeRules", "holds at most 32 rules");
  }
  for (int i = 0; i < s.exit_code_rules_size(); ++i) {
    const v1::ExitCodeRule& r = s.exit_code_rules(i);
    const std::string path = absl::StrCat("scheduling.exitCodeRules[", i, "]");
    if (r.exit_codes().empty() && r.signals().empty()) {
      return Invalid(path, "must match at least one of exitCodes or signals");
    }
    if (r.action() == v1::FAILURE_ACTION_UNSPECIFIED) {
      return Invalid(path + ".action", "must be one of RESTART, RETRY_JOB, FAIL_JOB, IGNORE");
    }
    TC_RETURN_IF_ERROR(ValidateExitCodes(path + ".exitCodes", r.exit_codes()));
    TC_RETURN_IF_ERROR(ValidateSignals(path + ".signals", r.signals()));
    for (int j = 0; j < r.pools_size(); ++j) {
      bool found = false;
      for (const v1::WorkerPool& p : spec.worker_pools()) found |= p.name() == r.pools(j);
      if (!found) {
        return Invalid(absl::StrCat(path, ".pools[", j, "]"),
                       absl::StrCat("\"", r.pools(j), "\" is not a pool of this job"));
      }
    }
  }
  TC_RETURN_IF_ERROR(ValidateBackoff("scheduling.restartBackoff", s.restart_backoff()));
  TC_RETURN_IF_ERROR(ValidateBackoff("scheduling.retryBackoff", s.retry_backoff()));
  TC_RETURN_IF_ERROR(
      ValidateDuration("scheduling.placementTimeout", s.placement_timeout(), 366LL * 86400));
  TC_RETURN_IF_ERROR(
      ValidateDuration("scheduling.progressResetPeriod", s.progress_reset_period(), 366LL * 86400));
  TC_RETURN_IF_ERROR(ValidateDuration("scheduling.hangTimeout", s.hang_timeout(), 366LL * 86400));
  TC_RETURN_IF_ERROR(
      ValidateDuration("scheduling.launchTimeout", s.launch_timeout(), 366LL * 86400));
  if (!v1::RestartScope_IsValid(s.restart_scope())) {
    return Invalid("scheduling.restartScope",
                   absl::StrCat("must be GANG or REPLICA, got ", s.restart_scope()));
  }
  TC_RETURN_IF_ERROR(ValidateProgressPattern(s.progress_pattern()));
  if (!v1::CaptureStacks_IsValid(s.capture_stacks())) {
    return Invalid("scheduling.captureStacks",
                   absl::StrCat("must be AUTO, ALWAYS or NEVER, got ", s.capture_stacks()));
  }
  if (!v1::StragglerAction_IsValid(s.straggler_action())) {
    return Invalid("scheduling.stragglerAction",
                   absl::StrCat("must be REPORT or REPLACE, got ", s.straggler_action()));
  }
  TC_RETURN_IF_ERROR(ValidateDuration("scheduling.settleWindow", s.settle_window(), 60));
  TC_RETURN_IF_ERROR(ValidateDuration("scheduling.queueTimeout", s.queue_timeout(), 366LL * 86400));
  TC_RETURN_IF_ERROR(ValidatePreemption(s));
  return ValidateElasticJob(spec);
}

void DefaultBackoff(v1::Backoff* b, int64_t initial_ms, int64_t max_ms) {
  if (!b->has_initial()) *b->mutable_initial() = MsToDuration(initial_ms);
  if (!b->has_max()) *b->mutable_max() = MsToDuration(max_ms);
  if (b->multiplier() == 0) b->set_multiplier(2);
}

// Every string of `message` (at `path`), in nested messages, lists and maps too, free of NUL
// bytes: they would cut a command, an env entry or a path short where it reaches C.
absl::Status CheckNoNul(const google::protobuf::Message& message, const std::string& path) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  auto check = [](const std::string& at, const std::string& value) {
    return absl::StrContains(value, '\0') ? Invalid(at, "must not contain NUL bytes")
                                          : absl::OkStatus();
  };
  for (const FieldDescriptor* field : fields) {
    const std::string at = path.empty() ? field->json_name() : path + "." + field->json_name();
    if (field->is_map()) {
      for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
        const google::protobuf::Message& entry = reflection->GetRepeatedMessage(message, field, i);
        const google::protobuf::Reflection* er = entry.GetReflection();
        const FieldDescriptor* key = entry.GetDescriptor()->map_key();
        const FieldDescriptor* value = entry.GetDescriptor()->map_value();
        const std::string key_text =
            key->cpp_type() == FieldDescriptor::CPPTYPE_STRING ? er->GetString(entry, key) : "";
        TC_RETURN_IF_ERROR(check(at, key_text));
        const std::string entry_path = absl::StrCat(at, "[\"", key_text, "\"]");
        if (value->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
          TC_RETURN_IF_ERROR(check(entry_path, er->GetString(entry, value)));
        } else if (value->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
          TC_RETURN_IF_ERROR(CheckNoNul(er->GetMessage(entry, value), entry_path));
        }
      }
    } else if (field->is_repeated()) {
      for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
        const std::string item = absl::StrCat(at, "[", i, "]");
        if (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
          TC_RETURN_IF_ERROR(check(item, reflection->GetRepeatedString(message, field, i)));
        } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
          TC_RETURN_IF_ERROR(CheckNoNul(reflection->GetRepeatedMessage(message, field, i), item));
        }
      }
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      TC_RETURN_IF_ERROR(check(at, reflection->GetString(message, field)));
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      TC_RETURN_IF_ERROR(CheckNoNul(reflection->GetMessage(message, field), at));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateJobSpec(const v1::JobSpec& spec) {
  // Whole-message limits first: nothing below has to walk a huge or malformed spec.
  if (const size_t bytes = spec.ByteSizeLong(); bytes > kMaxSpecBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the job spec is ", bytes, " bytes, at most ", kMaxSpecBytes,
        " are allowed (each replica's launch carries its pool's command, args and env)"));
  }
  TC_RETURN_IF_ERROR(CheckNoNul(spec, ""));
  if (absl::StripAsciiWhitespace(spec.display_name()).empty()) {
    return Invalid("displayName", "is required: a name people know the job by, e.g. resnet50-lr3");
  }
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
  if (!spec.workdir().empty() && !IsSha256Digest(spec.workdir())) {
    return Invalid("workdir", absl::StrCat("must be an upload's digest, \"sha256:\" and 64 "
                                           "lowercase hex digits (trainctl submit --workdir DIR "
                                           "uploads one); got \"",
                                           spec.workdir().substr(0, 80), "\""));
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
  TC_RETURN_IF_ERROR(ValidateScheduling(spec));
  TC_RETURN_IF_ERROR(ValidateArraySpec(spec));
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
  v1::Scheduling* s = spec->mutable_scheduling();
  if (!s->has_stop_grace_period()) {
    *s->mutable_stop_grace_period() = MsToDuration(kDefaultStopGraceMs);
  }
  if (s->restart_policy() == v1::RESTART_POLICY_UNSPECIFIED) {
    s->set_restart_policy(v1::RESTART_POLICY_ON_TRANSIENT_FAILURE);
  }
  if (!s->has_max_replica_restarts()) s->set_max_replica_restarts(kDefaultMaxReplicaRestarts);
  if (!s->has_max_job_retries()) s->set_max_job_retries(kDefaultMaxJobRetries);
  if (!s->has_max_internal_retries()) s->set_max_internal_retries(kDefaultMaxInternalRetries);
  if (!s->has_max_capacity_retries()) s->set_max_capacity_retries(kDefaultMaxCapacityRetries);
  if (s->transient_exit_codes().empty()) {
    for (int code : {6, 134, 11, 139}) s->add_transient_exit_codes(code);
  }
  if (s->transient_signals().empty()) {
    s->add_transient_signals("SIGABRT");
    s->add_transient_signals("SIGSEGV");
  }
  DefaultBackoff(s->mutable_restart_backoff(), 1000, 60'000);
  DefaultBackoff(s->mutable_retry_backoff(), 5000, 300'000);
  if (!s->has_placement_timeout()) *s->mutable_placement_timeout() = MsToDuration(300'000);
  if (!s->has_progress_reset_period()) {
    *s->mutable_progress_reset_period() = MsToDuration(3'600'000);
  }
  if (!s->has_launch_timeout()) *s->mutable_launch_timeout() = MsToDuration(120'000);
  if (s->restart_scope() == v1::RESTART_SCOPE_UNSPECIFIED) {
    int replicas = 0;
    for (const v1::WorkerPool& p : spec->worker_pools()) replicas += p.replica_count();
    s->set_restart_scope(replicas > 1 ? v1::RESTART_SCOPE_GANG : v1::RESTART_SCOPE_REPLICA);
  }
  if (s->capture_stacks() == v1::CAPTURE_STACKS_UNSPECIFIED) {
    s->set_capture_stacks(v1::CAPTURE_STACKS_AUTO);
  }
  if (s->straggler_action() == v1::STRAGGLER_ACTION_UNSPECIFIED) {
    s->set_straggler_action(v1::STRAGGLER_ACTION_REPORT);
  }
  if (!s->has_preemptible()) s->set_preemptible(true);
  if (!s->has_min_runtime()) *s->mutable_min_runtime() = MsToDuration(0);
  if (s->preemption_signal().empty()) s->set_preemption_signal(kDefaultPreemptionSignal);
  if (!s->has_preemption_grace_period()) {
    *s->mutable_preemption_grace_period() = MsToDuration(kDefaultPreemptionGraceMs);
  }
  if (IsElastic(*spec) && !s->has_elastic_wait()) {
    *s->mutable_elastic_wait() = MsToDuration(kDefaultElasticWaitMs);
  }
  v1::FaultTolerance* ft = spec->mutable_fault_tolerance();
  if (!ft->has_job_retry_num()) ft->set_job_retry_num(kDefaultJobRetryNum);
}

namespace {

// `path` lexically normal, without a trailing slash (but "/").
std::string NormalPath(const std::string& path) {
  std::string out = std::filesystem::path(path).lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

}  // namespace

std::string CheckpointRootOf(const std::string& dir, const std::vector<std::string>& roots) {
  const std::filesystem::path normal(NormalPath(dir));
  std::string best;
  for (const std::string& root : roots) {
    const std::string normal_root = NormalPath(root);
    const std::filesystem::path relative = normal.lexically_relative(normal_root);
    const std::string first = relative.empty() ? "" : relative.begin()->string();
    if (!relative.empty() && first != ".." && first != "." && normal_root.size() > best.size()) {
      best = normal_root;
    }
  }
  return best;
}

absl::StatusOr<std::string> CheckpointDirUnder(const std::string& dir,
                                               const std::vector<std::string>& roots) {
  if (!CheckpointRootOf(dir, roots).empty()) return NormalPath(dir);
  return Invalid(
      "checkpointDir",
      absl::StrCat("must be under one of the allowed roots (", absl::StrJoin(roots, ", "),
                   "; trainctld --checkpoint-allowed-roots), got \"", dir, "\""));
}

}  // namespace trainctl::sched
