// Api's AdminService operations that every transport serves: GetVersion. (Backup streams a copy
// of the database over gRPC alone: server/admin_service.h.)
#include "common/time_util.h"
#include "common/version.h"
#include "server/api.h"

namespace trainctl::server {
namespace {

// The one store trainctld has: SQLite, in DATA_DIR/trainctl.db.
constexpr char kStoreKind[] = "sqlite";

}  // namespace

void Api::GetVersion(const CallContext& call, const v1::GetVersionRequest& /*req*/,
                     Reply<v1::VersionInfo> done) {
  absl::StatusOr<Caller> caller = Authorize(call, Route::kGetVersion);
  if (!caller.ok()) return done(caller.status());
  v1::VersionInfo info;
  info.set_version(kVersion);
  info.set_commit(kGitCommit);
  info.set_agent_protocol_version(parts_.agent_protocol_version);
  info.set_store(kStoreKind);
  *info.mutable_start_time() = MsToTimestamp(start_ms_);
  done(std::move(info));
}

}  // namespace trainctl::server
