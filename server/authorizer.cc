#include "server/authorizer.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/enum_names.h"

namespace trainctl::server {
namespace {

// The id of the ApiToken Authenticate makes of a replica's token: this, then the job id.
constexpr char kReplicaTokenIdPrefix[] = "replica:";

// "admin", "operator", ... as messages name them.
std::string RoleName(v1::Role role) { return absl::AsciiStrToLower(EnumShortName(role)); }

bool ProjectScoped(Permission p) {
  return p == Permission::kSubmit || p == Permission::kCancel || p == Permission::kDeleteJobs ||
         p == Permission::kReadLogs || p == Permission::kReportProgress ||
         p == Permission::kManageSecrets;
}

}  // namespace

absl::string_view PermissionName(Permission p) {
  switch (p) {
    case Permission::kRead:
      return "read";
    case Permission::kReadLogs:
      return "read-logs";
    case Permission::kSubmit:
      return "submit";
    case Permission::kCancel:
      return "cancel";
    case Permission::kDeleteJobs:
      return "delete-jobs";
    case Permission::kReportProgress:
      return "report-progress";
    case Permission::kOperateNodes:
      return "operate-nodes";
    case Permission::kDeleteNodes:
      return "delete-nodes";
    case Permission::kSetQuota:
      return "set-quota";
    case Permission::kManageTokens:
      return "manage-tokens";
    case Permission::kWhoAmI:
      return "whoami";
    case Permission::kBackup:
      return "backup";
    case Permission::kManageSecrets:
      return "manage-secrets";
  }
  return "unknown";
}

const std::vector<RouteInfo>& Routes() {
  static const std::vector<RouteInfo> kRoutes = {
      {Route::kCreateJob, "trainctl.v1.JobService/CreateJob", Permission::kSubmit},
      {Route::kGetJob, "trainctl.v1.JobService/GetJob", Permission::kRead},
      {Route::kListJobs, "trainctl.v1.JobService/ListJobs", Permission::kRead},
      {Route::kCancelJob, "trainctl.v1.JobService/CancelJob", Permission::kCancel},
      {Route::kResizeJob, "trainctl.v1.JobService/ResizeJob", Permission::kSubmit},
      {Route::kDeleteJob, "trainctl.v1.JobService/DeleteJob", Permission::kDeleteJobs},
      {Route::kWatchJob, "trainctl.v1.JobService/WatchJob", Permission::kRead},
      {Route::kReadLogs, "trainctl.v1.JobService/ReadLogs", Permission::kReadLogs},
      {Route::kGetStacks, "trainctl.v1.JobService/GetStacks", Permission::kReadLogs},
      {Route::kReportProgress, "trainctl.v1.JobService/ReportProgress",
       Permission::kReportProgress},
      {Route::kGetQuota, "trainctl.v1.QuotaService/GetQuota", Permission::kRead},
      {Route::kSetQuota, "trainctl.v1.QuotaService/SetQuota", Permission::kSetQuota},
      {Route::kListProjects, "trainctl.v1.QuotaService/ListProjects", Permission::kRead},
      {Route::kListQueue, "trainctl.v1.QuotaService/ListQueue", Permission::kRead},
      {Route::kListNodes, "trainctl.v1.ClusterService/ListNodes", Permission::kRead},
      {Route::kGetNode, "trainctl.v1.ClusterService/GetNode", Permission::kRead},
      {Route::kListEvents, "trainctl.v1.ClusterService/ListEvents", Permission::kRead},
      {Route::kCordonNode, "trainctl.v1.ClusterService/CordonNode", Permission::kOperateNodes},
      {Route::kUncordonNode, "trainctl.v1.ClusterService/UncordonNode", Permission::kOperateNodes},
      {Route::kDrainNode, "trainctl.v1.ClusterService/DrainNode", Permission::kOperateNodes},
      {Route::kRevokeNode, "trainctl.v1.ClusterService/RevokeNode", Permission::kOperateNodes},
      {Route::kDeleteNode, "trainctl.v1.ClusterService/DeleteNode", Permission::kDeleteNodes},
      {Route::kSetNodeMaintenance, "trainctl.v1.ClusterService/SetNodeMaintenance",
       Permission::kOperateNodes},
      {Route::kPrepullImage, "trainctl.v1.ClusterService/PrepullImage", Permission::kOperateNodes},
      {Route::kCreateToken, "trainctl.v1.AuthService/CreateToken", Permission::kManageTokens},
      {Route::kListTokens, "trainctl.v1.AuthService/ListTokens", Permission::kManageTokens},
      {Route::kRevokeToken, "trainctl.v1.AuthService/RevokeToken", Permission::kManageTokens},
      {Route::kWhoAmI, "trainctl.v1.AuthService/WhoAmI", Permission::kWhoAmI},
      {Route::kGetVersion, "trainctl.v1.AdminService/GetVersion", Permission::kWhoAmI},
      {Route::kBackup, "trainctl.v1.AdminService/Backup", Permission::kBackup},
      {Route::kSetSecret, "trainctl.v1.SecretService/SetSecret", Permission::kManageSecrets},
      {Route::kListSecrets, "trainctl.v1.SecretService/ListSecrets", Permission::kManageSecrets},
      {Route::kDeleteSecret, "trainctl.v1.SecretService/DeleteSecret", Permission::kManageSecrets},
      {Route::kUploadWorkdir, "trainctl.v1.WorkdirService/UploadWorkdir", Permission::kSubmit},
      {Route::kGetWorkdir, "trainctl.v1.WorkdirService/GetWorkdir", Permission::kSubmit},
      {Route::kGetUsage, "trainctl.v1.UsageService/GetUsage", Permission::kRead},
      // The queue operations change a job as a cancel does: the same permission, in its project.
      {Route::kHoldJob, "trainctl.v1.JobService/HoldJob", Permission::kCancel},
      {Route::kReleaseJob, "trainctl.v1.JobService/ReleaseJob", Permission::kCancel},
      {Route::kUpdateJob, "trainctl.v1.JobService/UpdateJob", Permission::kCancel},
      {Route::kRequeueJob, "trainctl.v1.JobService/RequeueJob", Permission::kCancel},
  };
  return kRoutes;
}

bool RoleHas(v1::Role role, Permission p) {
  if (p == Permission::kWhoAmI) return role != v1::ROLE_UNSPECIFIED;
  switch (role) {
    case v1::ROLE_ADMIN:
      return true;
    case v1::ROLE_OPERATOR:
      return p == Permission::kRead || p == Permission::kReadLogs || p == Permission::kOperateNodes;
    case v1::ROLE_MEMBER:
      return p == Permission::kRead || ProjectScoped(p);
    case v1::ROLE_VIEWER:
      return p == Permission::kRead;
    default:
      return false;
  }
}

void StampActor(sched::Effects* fx, size_t first, const std::string& actor) {
  for (size_t i = first; i < fx->events.size(); ++i) fx->events[i].actor = actor;
}

std::optional<absl::string_view> AuthorizationHeader(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return std::nullopt;
  return absl::string_view(it->second.data(), it->second.size());
}

absl::StatusOr<Caller> Authorizer::Authorize(const grpc::ServerContextBase& context,
                                             Route route) const {
  return Authorize(AuthorizationHeader(context.client_metadata()), route);
}

absl::StatusOr<Caller> Authorizer::Authorize(std::optional<absl::string_view> authorization,
                                             Route route) const {
  Caller caller;
  if (!enabled_) {
    caller.token.set_owner("anonymous");
    caller.token.set_role(v1::ROLE_ADMIN);
    return caller;
  }
  absl::StatusOr<v1::ApiToken> token = Authenticate(authorization);
  if (!token.ok()) return token.status();
  caller.name = token->owner();
  caller.token = *std::move(token);
  caller.authenticated = true;
  if (absl::StartsWith(caller.token.id(), kReplicaTokenIdPrefix)) {
    caller.job = caller.token.id().substr(sizeof(kReplicaTokenIdPrefix) - 1);
    if (route != Route::kReportProgress) {
      return absl::PermissionDeniedError(
          absl::StrCat("a replica's token (job ", caller.job,
                       ") allows only ReportProgress for its own job, not ",
                       Routes()[static_cast<size_t>(route)].method));
    }
    return caller;
  }
  const Permission p = Routes()[static_cast<size_t>(route)].permission;
  if (!RoleHas(caller.token.role(), p)) {
    return absl::PermissionDeniedError(absl::StrCat(
        caller.name, "'s token (role ", RoleName(caller.token.role()), ") lacks the permission ",
        PermissionName(p), " that ", Routes()[static_cast<size_t>(route)].method, " needs"));
  }
  return caller;
}

absl::StatusOr<v1::ApiToken> Authorizer::Authenticate(
    std::optional<absl::string_view> authorization) const {
  if (!authorization.has_value()) {
    return absl::UnauthenticatedError(
        "this trainctld requires a token: pass --token, --token-file or TRAINCTL_TOKEN "
        "(an admin creates one with `trainctl admin token create`)");
  }
  absl::string_view header = *authorization;
  if (!absl::ConsumePrefix(&header, "Bearer ")) {
    return absl::UnauthenticatedError("the authorization header must read \"Bearer <token>\"");
  }
  const std::string bearer(absl::StripAsciiWhitespace(header));
  if (ReplicaTokens::IsReplicaToken(bearer)) {
    std::optional<std::string> job =
        replica_tokens_ == nullptr ? std::nullopt : replica_tokens_->JobOf(bearer);
    if (!job) return absl::UnauthenticatedError("the replica token is not one this trainctld made");
    v1::ApiToken t;
    t.set_id(absl::StrCat(kReplicaTokenIdPrefix, *job));
    t.set_owner(absl::StrCat("replica of ", *job));
    return t;
  }
  return tokens_->Verify(bearer, clock_());
}

absl::Status Authorizer::CheckProject(const Caller& caller, Permission p,
                                      const std::string& project) const {
  const v1::ApiToken& t = caller.token;
  if (!enabled_ || t.role() == v1::ROLE_ADMIN) return absl::OkStatus();
  // A replica's token: the service checks that the job is its own.
  if (!caller.job.empty() && p == Permission::kReportProgress) return absl::OkStatus();
  if (!RoleHas(t.role(), p)) {
    return absl::PermissionDeniedError(absl::StrCat(caller.name, "'s token (role ",
                                                    RoleName(t.role()), ") lacks the permission ",
                                                    PermissionName(p)));
  }
  if (!ProjectScoped(p) || t.role() == v1::ROLE_OPERATOR) return absl::OkStatus();
  if (std::find(t.projects().begin(), t.projects().end(), project) != t.projects().end()) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat(caller.name, "'s token lacks the permission ", PermissionName(p), " in project ",
                   project, " (it may act in ", absl::StrJoin(t.projects(), ", "), ")"));
}

}  // namespace trainctl::server
