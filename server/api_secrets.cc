// Api: SecretService's operations (see api.h) and the submit-time check of a spec's secretRefs.
// A set or delete is written in a reconcile-loop turn with a SecretSet/SecretDeleted event naming
// its actor (never the value), and reaches ProjectSecrets (what launches open) only once
// committed. Admins and the project's members may use them (Permission::kManageSecrets).
#include "absl/strings/str_cat.h"
#include "common/names.h"
#include "common/status_macros.h"
#include "common/time_util.h"
#include "common/utf8.h"
#include "model/model.h"
#include "scheduler/job_validation.h"
#include "server/api.h"

namespace trainctl::server {
namespace {

absl::Status CheckSecretProject(const std::string& project) {
  if (project.empty()) return absl::InvalidArgumentError("project is required");
  if (!IsDnsLabel(project, 63)) {
    return absl::InvalidArgumentError(
        absl::StrCat("project: \"", project, "\" is not a valid project name"));
  }
  return absl::OkStatus();
}

v1::Secret SecretProto(const std::string& project, const std::string& name, int64_t size,
                       int64_t update_ms) {
  v1::Secret s;
  s.set_project(project);
  s.set_name(name);
  s.set_size_bytes(size);
  *s.mutable_update_time() = MsToTimestamp(update_ms);
  return s;
}

}  // namespace

absl::Status Api::SecretsKept() const {
  if (parts_.secrets != nullptr) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "this trainctld keeps no project secrets: with --store postgres, start every trainctld "
      "with the same --secret-key-file");
}

void Api::SetSecret(const CallContext& call, const v1::SetSecretRequest& req,
                    Reply<v1::Secret> done) {
  absl::StatusOr<Caller> caller = Authorize(call, Route::kSetSecret);
  if (!caller.ok()) return done(caller.status());
  if (absl::Status s = CheckSecretProject(req.project()); !s.ok()) return done(s);
  if (absl::Status s = CheckProject(*caller, Permission::kManageSecrets, req.project()); !s.ok()) {
    return done(s);
  }
  if (absl::Status s = SecretsKept(); !s.ok()) return done(s);
  if (req.value().find('\0') != std::string::npos || SanitizeUtf8(req.value()) != req.value()) {
    return done(absl::InvalidArgumentError(
        "value: must be UTF-8 text without NUL bytes (it becomes an environment variable)"));
  }
  absl::StatusOr<storage::SecretRow> row =
      parts_.secrets->Set(req.project(), req.name(), req.value(), absl::Now());
  if (!row.ok()) return done(row.status());
  parts_.loop->Post(
      [secrets = parts_.secrets, row = *std::move(row), actor = caller->name, done](Turn& t) {
        const size_t first = t.fx->events.size();
        sched::AddEvent(t.fx, t.now, nullptr, "", "", "SecretSet",
                        absl::StrCat("secret ", row.name, " of project ", row.project, " set (",
                                     row.size, " bytes)"));
        StampActor(t.fx, first, actor);
        t.writes->secrets.push_back(row);
        t.after_commit->push_back([secrets, row, done] {
          secrets->Apply(row);
          done(SecretProto(row.project, row.name, row.size, row.update_ms));
        });
      },
      done);
}

void Api::ListSecrets(const CallContext& call, const v1::ListSecretsRequest& req,
                      Reply<v1::ListSecretsResponse> done) {
  absl::StatusOr<Caller> caller = Authorize(call, Route::kListSecrets);
  if (!caller.ok()) return done(caller.status());
  if (absl::Status s = CheckSecretProject(req.project()); !s.ok()) return done(s);
  if (absl::Status s = CheckProject(*caller, Permission::kManageSecrets, req.project()); !s.ok()) {
    return done(s);
  }
  if (absl::Status s = SecretsKept(); !s.ok()) return done(s);
  v1::ListSecretsResponse resp;
  for (const SecretInfo& info : parts_.secrets->List(req.project())) {
    *resp.add_secrets() = SecretProto(info.project, info.name, info.size, info.update_ms);
  }
  done(std::move(resp));
}

void Api::DeleteSecret(const CallContext& call, const v1::DeleteSecretRequest& req,
                       Reply<v1::Secret> done) {
  absl::StatusOr<Caller> caller = Authorize(call, Route::kDeleteSecret);
  if (!caller.ok()) return done(caller.status());
  if (absl::Status s = CheckSecretProject(req.project()); !s.ok()) return done(s);
  if (absl::Status s = CheckProject(*caller, Permission::kManageSecrets, req.project()); !s.ok()) {
    return done(s);
  }
  if (absl::Status s = SecretsKept(); !s.ok()) return done(s);
  parts_.loop->Post(
      [secrets = parts_.secrets, project = req.project(), name = req.name(), actor = caller->name,
       done](Turn& t) {
        absl::StatusOr<SecretInfo> held = secrets->Find(project, name);
        if (!held.ok()) {
          t.after_commit->push_back([missing = held.status(), done] { done(missing); });
          return;
        }
        const size_t first = t.fx->events.size();
        sched::AddEvent(t.fx, t.now, nullptr, "", "", "SecretDeleted",
                        absl::StrCat("secret ", name, " of project ", project, " deleted"));
        StampActor(t.fx, first, actor);
        t.writes->deleted_secrets.emplace_back(project, name);
        t.after_commit->push_back([secrets, info = *held, done] {
          secrets->Forget(info.project, info.name);
          done(SecretProto(info.project, info.name, info.size, info.update_ms));
        });
      },
      done);
}

absl::Status Api::CheckSecretRefs(const v1::JobSpec& spec) const {
  const std::string& project = spec.project().empty() ? sched::kDefaultProject : spec.project();
  auto check = [&](const std::string& field, const std::string& name) -> absl::Status {
    if (!ProjectSecrets::ValidateName(name).ok()) return absl::OkStatus();  // validation names it
    if (parts_.secrets == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(field, ": ", SecretsKept().message()));
    }
    if (!parts_.secrets->CheckExists(project, name).ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ": project ", project, " has no secret \"", name,
          "\"; set it with `trainctl secret set ", name, " --project ", project, " ...`"));
    }
    return absl::OkStatus();
  };
  for (int i = 0; i < spec.worker_pools_size(); ++i) {
    const v1::WorkerPool& pool = spec.worker_pools(i);
    for (const auto& [var, name] : pool.secret_refs()) {
      TC_RETURN_IF_ERROR(check(absl::StrCat("workerPools[", i, "].secretRefs[", var, "]"), name));
    }
    // Without an image the spec's validation refuses the field itself.
    if (!pool.image().empty() && !pool.image_pull_secret().empty()) {
      TC_RETURN_IF_ERROR(
          check(absl::StrCat("workerPools[", i, "].imagePullSecret"), pool.image_pull_secret()));
    }
  }
  return absl::OkStatus();
}

}  // namespace trainctl::server
