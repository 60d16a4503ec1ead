// Who may call what: the permission of every RPC, the roles, and the one check every service
// handler makes before it does anything.
//
// Each route (an RPC, by its full name) names its permission in kRoutes, the one table of them;
// a test checks that every RPC of every service has a route, so a new one cannot be left open.
// A handler starts with
//
//   absl::StatusOr<Caller> caller = auth.Authorize(*ctx, Route::kCreateJob);
//
// which authenticates the call's bearer token (metadata "authorization: Bearer tct_...") and
// checks the route's permission for the token's role; project-scoped permissions (a member's
// submit, cancel, logs, progress) are checked again with the project, once the handler knows it,
// by CheckProject(). Errors: UNAUTHENTICATED without a valid token, PERMISSION_DENIED naming the
// missing permission. When authentication is off (plaintext on loopback) every call is allowed
// as "anonymous", an admin.
//
// Thread-safe: Authorizer is immutable after construction; TokenRegistry locks itself.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/model.h"
#include "server/replica_tokens.h"
#include "server/tokens.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::server {

enum class Permission {
  kRead,            // jobs, queues, projects, nodes, events
  kReadLogs,        // a job's logs (project-scoped for members)
  kSubmit,          // create a job (project-scoped)
  kCancel,          // cancel a job (project-scoped)
  kDeleteJobs,      // delete a job that ended (project-scoped)
  kReportProgress,  // report a replica's progress (project-scoped)
  kOperateNodes,    // cordon, uncordon, drain, revoke, prepull images
  kDeleteNodes,     // forget a node
  kSetQuota,        // quotas
  kManageTokens,    // create, list, revoke tokens
  kWhoAmI,          // any valid token: who am I, trainctld's version
  kBackup,          // copy the database (it holds secrets): admins only
  kManageSecrets,   // set, list and delete a project's secrets (project-scoped)
};

// "read", "submit", ... as errors name them.
absl::string_view PermissionName(Permission p);

enum class Route {
  kCreateJob,
  kGetJob,
  kListJobs,
  kCancelJob,
  kResizeJob,
  kDeleteJob,
  kWatchJob,
  kReadLogs,
  kGetStacks,
  kReportProgress,
  kGetQuota,
  kSetQuota,
  kListProjects,
  kListQueue,
  kListNodes,
  kGetNode,
  kListEvents,
  kCordonNode,
  kUncordonNode,
  kDrainNode,
  kRevokeNode,
  kDeleteNode,
  kSetNodeMaintenance,
  kPrepullImage,
  kCreateToken,
  kListTokens,
  kRevokeToken,
  kWhoAmI,
  kGetVersion,
  kBackup,
  kSetSecret,
  kListSecrets,
  kDeleteSecret,
  kUploadWorkdir,
  kGetWorkdir,
  kGetUsage,
  kHoldJob,
  kReleaseJob,
  kUpdateJob,
  kRequeueJob,
};

struct RouteInfo {
  Route route;
  // "trainctl.v1.JobService/CreateJob".
  const char* method;
  Permission permission;
};

// Every route, in Route order.
const std::vector<RouteInfo>& Routes();

// The caller of one RPC.
struct Caller {
  // The token's owner, the actor of the events its call causes; "" when authentication is off.
  std::string name;
  v1::ApiToken token;
  bool authenticated = false;
  // A replica's token: the one job it may report progress for. Empty for every other caller.
  std::string job;
};

// Whether `role` has `p` at all (projects aside).
bool RoleHas(v1::Role role, Permission p);

// Stamps the actor on the events fx gained since `first` (an index into fx->events).
void StampActor(sched::Effects* fx, size_t first, const std::string& actor);

// The value of a call's "authorization" metadata (client metadata, or an AuthMetadataProcessor's
// input); nullopt when there is none.
std::optional<absl::string_view> AuthorizationHeader(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata);

class Authorizer {
 public:
  using Clock = std::function<int64_t()>;
  // `tokens` (not owned) may be null when !enabled. `replica_tokens` (not owned; null: none are
  // accepted) checks the job-scoped tokens of replicas.
  Authorizer(bool enabled, const TokenRegistry* tokens, Clock clock,
             const ReplicaTokens* replica_tokens = nullptr)
      : enabled_(enabled),
        tokens_(tokens),
        clock_(std::move(clock)),
        replica_tokens_(replica_tokens) {}

  bool enabled() const { return enabled_; }

  // Authenticates the call and checks the route's permission for the caller's role.
  absl::StatusOr<Caller> Authorize(const grpc::ServerContextBase& context, Route route) const;
  // The same for a call whose "authorization" header (or metadata) is `authorization`, whatever
  // its transport.
  absl::StatusOr<Caller> Authorize(std::optional<absl::string_view> authorization,
                                   Route route) const;

  // The token of an "authorization" header's value ("Bearer tct_..."); nullopt: no header.
  // A replica's token ("Bearer tcr_...") is an ApiToken with the id "replica:<job id>".
  // UNAUTHENTICATED saying what is wrong. REQUIRES: enabled().
  absl::StatusOr<v1::ApiToken> Authenticate(std::optional<absl::string_view> authorization) const;

  // For a project-scoped permission: whether the caller may use it in `project`. Admins may
  // everywhere, a replica's token for its own job (Caller::job, checked by the service);
  // PERMISSION_DENIED otherwise.
  absl::Status CheckProject(const Caller& caller, Permission p, const std::string& project) const;

 private:
  const bool enabled_;
  const TokenRegistry* const tokens_;
  const Clock clock_;
  const ReplicaTokens* const replica_tokens_;
};

}  // namespace trainctl::server
