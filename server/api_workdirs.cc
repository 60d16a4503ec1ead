// Api: WorkdirService's checks and reads (see api.h), and the submit-time check of a spec's
// workdir. The upload's stream itself is the transport's (server/workdir_service.h): it hands the
// bytes to StoreUpload, which writes them through the WorkdirStore on the caller's thread, never
// through the reconcile loop.
#include "absl/strings/str_cat.h"
#include "common/names.h"
#include "common/status_macros.h"
#include "common/time_util.h"
#include "scheduler/job_validation.h"
#include "server/api.h"

namespace trainctl::server {
namespace {

v1::Workdir WorkdirProto(const storage::WorkdirInfo& info) {
  v1::Workdir w;
  w.set_project(info.project);
  w.set_digest(info.digest);
  w.set_size_bytes(info.size);
  *w.mutable_upload_time() = MsToTimestamp(info.upload_ms);
  return w;
}

absl::Status CheckProjectAndDigest(const std::string& project, const std::string& digest) {
  if (!IsDnsLabel(project, 63)) {
    return absl::InvalidArgumentError(
        absl::StrCat("project: \"", project, "\" is not a valid project name"));
  }
  if (!IsSha256Digest(digest)) {
    return absl::InvalidArgumentError(
        absl::StrCat("digest: must be \"sha256:\" and 64 lowercase hex digits, got \"",
                     digest.substr(0, 80), "\""));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Api::CheckWorkdir(const v1::JobSpec& spec) const {
  if (spec.workdir().empty() || !IsSha256Digest(spec.workdir())) return absl::OkStatus();
  if (parts_.workdirs == nullptr) {
    return absl::FailedPreconditionError("workdir: this trainctld keeps no working directories");
  }
  const std::string& project = spec.project().empty() ? sched::kDefaultProject : spec.project();
  absl::StatusOr<std::optional<storage::WorkdirInfo>> held =
      parts_.workdirs->Get(project, spec.workdir());
  if (!held.ok()) return held.status();
  if (!held->has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "workdir: project ", project, " holds no upload ", spec.workdir(),
        " (uploads no job uses are deleted after an hour); upload it again with `trainctl submit "
        "--workdir DIR`"));
  }
  return absl::OkStatus();
}

void Api::GetWorkdir(const CallContext& call, const v1::GetWorkdirRequest& req,
                     Reply<v1::Workdir> done) {
  absl::StatusOr<Caller> caller = Authorize(call, Route::kGetWorkdir);
  if (!caller.ok()) return done(caller.status());
  if (absl::Status s = CheckProjectAndDigest(req.project(), req.digest()); !s.ok()) return done(s);
  if (absl::Status s = CheckProject(*caller, Permission::kSubmit, req.project()); !s.ok()) {
    return done(s);
  }
  if (parts_.workdirs == nullptr) {
    return done(absl::FailedPreconditionError("this trainctld keeps no working directories"));
  }
  absl::StatusOr<std::optional<storage::WorkdirInfo>> held =
      parts_.workdirs->Get(req.project(), req.digest());
  if (!held.ok()) return done(held.status());
  if (!held->has_value()) {
    return done(absl::NotFoundError(
        absl::StrCat("project ", req.project(), " holds no upload ", req.digest())));
  }
  done(WorkdirProto(**held));
}

absl::Status Api::CheckUpload(const Caller& caller, const v1::UploadWorkdirRequest& first) const {
  TC_RETURN_IF_ERROR(CheckProjectAndDigest(first.project(), first.digest()));
  if (first.size_bytes() < 1 || first.size_bytes() > parts_.max_workdir_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("size_bytes: an upload holds 1 byte to ", parts_.max_workdir_bytes >> 20,
                     " MiB (trainctld --max-workdir-mb), got ", first.size_bytes()));
  }
  TC_RETURN_IF_ERROR(CheckProject(caller, Permission::kSubmit, first.project()));
  if (parts_.workdirs == nullptr) {
    return absl::FailedPreconditionError("this trainctld keeps no working directories");
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Workdir> Api::StoreUpload(
    const v1::UploadWorkdirRequest& first,
    const std::function<absl::StatusOr<bool>(std::string*)>& next) const {
  storage::WorkdirInfo info;
  info.project = first.project();
  info.digest = first.digest();
  info.size = first.size_bytes();
  info.upload_ms = WallNowMs();
  absl::StatusOr<bool> stored = parts_.workdirs->Put(info, next);
  if (!stored.ok()) return stored.status();
  v1::Workdir w = WorkdirProto(info);
  w.set_deduplicated(!*stored);
  return w;
}

}  // namespace trainctl::server
