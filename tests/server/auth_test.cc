// API tokens and roles: minting and verifying tokens, each role's permissions, project scopes,
// and that every RPC trainctld serves to users has a route in the permission table.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "common/time_util.h"
#include "server/auth_service.h"
#include "server/authorizer.h"
#include "server/replica_tokens.h"
#include "server/tokens.h"
#include "storage/sqlite_store.h"
#include "trainctl/v1/admin.pb.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::server {
namespace {

v1::ApiToken Fields(const std::string& owner, v1::Role role) {
  v1::ApiToken t;
  t.set_owner(owner);
  t.set_role(role);
  return t;
}

TEST_CASE("a minted token verifies, and only its hash is kept", "[auth]") {
  absl::StatusOr<MintedToken> t = MintToken(Fields("alice", v1::ROLE_VIEWER));
  REQUIRE(t.ok());
  CHECK(absl::StartsWith(t->bearer, "tct_" + t->row.token.id() + "_"));
  CHECK(t->bearer.size() == 4 + 16 + 1 + 64);
  CHECK(t->row.hash == HashToken(t->bearer));
  CHECK_FALSE(absl::StrContains(t->row.hash, t->bearer.substr(21)));
  TokenRegistry registry;
  registry.Put(t->row);
  absl::StatusOr<v1::ApiToken> who = registry.Verify(t->bearer, 0);
  REQUIRE(who.ok());
  CHECK(who->owner() == "alice");
  // Two tokens never share an id or a secret.
  absl::StatusOr<MintedToken> u = MintToken(Fields("alice", v1::ROLE_VIEWER));
  REQUIRE(u.ok());
  CHECK(u->row.token.id() != t->row.token.id());
  CHECK(u->bearer != t->bearer);
}

TEST_CASE("Verify refuses malformed, unknown, altered, revoked and expired tokens", "[auth]") {
  absl::StatusOr<MintedToken> t = MintToken(Fields("bob", v1::ROLE_ADMIN));
  REQUIRE(t.ok());
  TokenRegistry registry;
  registry.Put(t->row);
  auto code_and_message = [&](const std::string& bearer, int64_t now) {
    absl::Status s = registry.Verify(bearer, now).status();
    CHECK(s.code() == absl::StatusCode::kUnauthenticated);
    return std::string(s.message());
  };
  CHECK(absl::StrContains(code_and_message("hunter2", 0), "malformed"));
  CHECK(absl::StrContains(code_and_message("", 0), "malformed"));
  std::string altered = t->bearer;
  altered.back() = altered.back() == 'a' ? 'b' : 'a';
  const std::string unknown = code_and_message(altered, 0);
  CHECK(absl::StrContains(unknown, "not known"));
  // The message never echoes the secret.
  CHECK_FALSE(absl::StrContains(unknown, altered.substr(21)));

  storage::TokenRow expiring = t->row;
  *expiring.token.mutable_expire_time() = MsToTimestamp(5000);
  registry.Put(expiring);
  CHECK(registry.Verify(t->bearer, 4999).ok());
  CHECK(absl::StrContains(code_and_message(t->bearer, 5000), "expired"));

  storage::TokenRow revoked = t->row;
  revoked.token.set_revoked(true);
  registry.Put(revoked);
  CHECK(absl::StrContains(code_and_message(t->bearer, 0), "revoked"));
  // Put replaced the row: still one token.
  CHECK(registry.size() == 1);
  CHECK(registry.List().size() == 1);
}

TEST_CASE("each role has exactly its permissions", "[auth]") {
  using P = Permission;
  for (P p : {P::kRead, P::kReadLogs, P::kSubmit, P::kCancel, P::kReportProgress, P::kOperateNodes,
              P::kDeleteNodes, P::kSetQuota, P::kManageTokens, P::kWhoAmI, P::kBackup}) {
    INFO(PermissionName(p));
    CHECK(RoleHas(v1::ROLE_ADMIN, p));
    CHECK(RoleHas(v1::ROLE_OPERATOR, p) ==
          (p == P::kRead || p == P::kReadLogs || p == P::kOperateNodes || p == P::kWhoAmI));
    CHECK(RoleHas(v1::ROLE_MEMBER, p) == (p == P::kRead || p == P::kReadLogs || p == P::kSubmit ||
                                          p == P::kCancel || p == P::kReportProgress ||
                                          p == P::kWhoAmI));
    CHECK(RoleHas(v1::ROLE_VIEWER, p) == (p == P::kRead || p == P::kWhoAmI));
    CHECK_FALSE(RoleHas(v1::ROLE_UNSPECIFIED, p));
  }
}

TEST_CASE("a member acts only in its projects", "[auth]") {
  TokenRegistry registry;
  const Authorizer auth(true, &registry, [] { return int64_t{0}; });
  Caller member;
  member.name = "alice";
  member.token = Fields("alice", v1::ROLE_MEMBER);
  member.token.add_projects("team-a");
  CHECK(auth.CheckProject(member, Permission::kSubmit, "team-a").ok());
  absl::Status denied = auth.CheckProject(member, Permission::kCancel, "team-b");
  CHECK(denied.code() == absl::StatusCode::kPermissionDenied);
  CHECK(denied.message() ==
        "alice's token lacks the permission cancel in project team-b (it may act in team-a)");
  // Reading is not project-scoped; an admin may act anywhere; an operator reads every log.
  CHECK(auth.CheckProject(member, Permission::kRead, "team-b").ok());
  Caller admin;
  admin.token = Fields("root", v1::ROLE_ADMIN);
  CHECK(auth.CheckProject(admin, Permission::kSubmit, "team-b").ok());
  Caller op;
  op.token = Fields("ops", v1::ROLE_OPERATOR);
  CHECK(auth.CheckProject(op, Permission::kReadLogs, "team-b").ok());
  CHECK(auth.CheckProject(op, Permission::kSubmit, "team-b").code() ==
        absl::StatusCode::kPermissionDenied);
  // Without authentication everything is allowed.
  const Authorizer off(false, nullptr, [] { return int64_t{0}; });
  CHECK(off.CheckProject(member, Permission::kSubmit, "team-b").ok());
}

TEST_CASE("a replica token names its job, and only a key's own tokens verify", "[auth]") {
  char tmpl[] = "/tmp/trainctl-replica-key-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string path = dir + "/replica-token.key";
  absl::StatusOr<ReplicaTokens> made = ReplicaTokens::LoadOrCreate(path);
  REQUIRE(made.ok());
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  // The same key after a restart: the token of a running replica still verifies.
  absl::StatusOr<ReplicaTokens> again = ReplicaTokens::LoadOrCreate(path);
  REQUIRE(again.ok());
  const std::string token = made->Mint("j-abc");
  CHECK(ReplicaTokens::IsReplicaToken(token));
  CHECK(again->JobOf(token) == "j-abc");
  // Altered, for another job, or from another key: refused.
  std::string altered = token;
  altered.back() = altered.back() == '0' ? '1' : '0';
  CHECK_FALSE(made->JobOf(altered).has_value());
  std::string other_job = token;
  other_job.replace(4, 5, "j-abd");
  CHECK_FALSE(made->JobOf(other_job).has_value());
  CHECK_FALSE(ReplicaTokens(std::string(32, 'k')).JobOf(token).has_value());
  CHECK_FALSE(made->JobOf("tcr_").has_value());
  CHECK_FALSE(made->JobOf("tct_abc").has_value());
  // A damaged key file stops trainctld rather than make tokens nobody can check.
  std::ofstream(path) << "not hex\n";
  CHECK(ReplicaTokens::LoadOrCreate(path).status().code() == absl::StatusCode::kFailedPrecondition);
  std::filesystem::remove_all(dir);

  // The authorizer knows it as the job's replica, allowed progress (the service checks the job).
  TokenRegistry registry;
  const ReplicaTokens keys(std::string(32, 'k'));
  const Authorizer auth(
      true, &registry, [] { return int64_t{0}; }, &keys);
  absl::StatusOr<v1::ApiToken> replica = auth.Authenticate("Bearer " + keys.Mint("j-abc"));
  REQUIRE(replica.ok());
  CHECK(replica->id() == "replica:j-abc");
  CHECK(replica->owner() == "replica of j-abc");
  CHECK(auth.Authenticate("Bearer " + made->Mint("j-abc")).status().code() ==
        absl::StatusCode::kUnauthenticated);
  Caller caller;
  caller.token = *replica;
  caller.job = "j-abc";
  CHECK(auth.CheckProject(caller, Permission::kReportProgress, "team-a").ok());
  CHECK(auth.CheckProject(caller, Permission::kSubmit, "team-a").code() ==
        absl::StatusCode::kPermissionDenied);
}

TEST_CASE("trainctld sharing a database share the replica token key, the first one's file's",
          "[auth]") {
  char tmpl[] = "/tmp/trainctl-replica-key-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  auto store = storage::SqliteStore::Open(dir + "/trainctl.db");
  REQUIRE(store.ok());
  // The first start adopts the key file it had, so running replicas' tokens stay good.
  const std::string first_file = dir + "/a.key";
  absl::StatusOr<ReplicaTokens> from_file = ReplicaTokens::LoadOrCreate(first_file);
  REQUIRE(from_file.ok());
  const std::string token = from_file->Mint("j-abc");
  absl::StatusOr<ReplicaTokens> first = ReplicaTokens::Adopt(**store, first_file);
  INFO(first.status().ToString());
  REQUIRE(first.ok());
  CHECK(first->JobOf(token) == "j-abc");
  // Another trainctld, with a key file of its own or none, checks the same tokens.
  const std::string other_file = dir + "/b.key";
  REQUIRE(ReplicaTokens::LoadOrCreate(other_file).ok());
  for (const std::string& file : {other_file, dir + "/none.key"}) {
    absl::StatusOr<ReplicaTokens> other = ReplicaTokens::Adopt(**store, file);
    REQUIRE(other.ok());
    CHECK(other->JobOf(token) == "j-abc");
    CHECK(other->Mint("j-xyz") == first->Mint("j-xyz"));
  }
  CHECK_FALSE(std::filesystem::exists(dir + "/none.key"));
  // A damaged key file stops the start that would adopt it.
  std::ofstream(dir + "/bad.key") << "not hex\n";
  auto empty = storage::SqliteStore::Open(dir + "/empty.db");
  REQUIRE(empty.ok());
  CHECK(ReplicaTokens::Adopt(**empty, dir + "/bad.key").status().code() ==
        absl::StatusCode::kFailedPrecondition);
  std::filesystem::remove_all(dir);
}

TEST_CASE("every user-facing RPC has a route, in Route order", "[auth]") {
  std::set<std::string> routed;
  for (size_t i = 0; i < Routes().size(); ++i) {
    CHECK(static_cast<size_t>(Routes()[i].route) == i);
    routed.insert(Routes()[i].method);
  }
  // Every service of job.proto and admin.proto: the user-facing API (agents have agent.proto and
  // mTLS).
  std::set<std::string> served;
  for (const google::protobuf::FileDescriptor* file :
       {v1::Job::descriptor()->file(), v1::VersionInfo::descriptor()->file()}) {
    REQUIRE(file->service_count() >= 1);
    for (int i = 0; i < file->service_count(); ++i) {
      const google::protobuf::ServiceDescriptor* s = file->service(i);
      for (int m = 0; m < s->method_count(); ++m) {
        served.insert(s->full_name() + "/" + s->method(m)->name());
      }
    }
  }
  CHECK(served.size() >= 26);
  CHECK(routed == served);
}

TEST_CASE("CreateToken requests are validated field by field", "[auth]") {
  v1::CreateTokenRequest r;
  r.set_owner("alice");
  r.set_role(v1::ROLE_MEMBER);
  CHECK(ValidateCreateToken(r).message() == "a member token needs at least one project");
  r.add_projects("Team_A");
  CHECK(ValidateCreateToken(r).message() == "projects[0]: \"Team_A\" is not a valid project name");
  r.set_projects(0, "team-a");
  CHECK(ValidateCreateToken(r).ok());
  r.set_role(v1::ROLE_VIEWER);
  CHECK(absl::StartsWith(ValidateCreateToken(r).message(), "projects are for role member"));
  r.clear_projects();
  r.set_owner("");
  CHECK(ValidateCreateToken(r).message() == "owner must be 1..64 characters, got 0");
  r.set_owner("a\nb");
  CHECK(ValidateCreateToken(r).message() == "owner must not contain control characters");
  r.set_owner("bob");
  r.set_role(v1::ROLE_UNSPECIFIED);
  CHECK(ValidateCreateToken(r).code() == absl::StatusCode::kInvalidArgument);
  r.set_role(v1::ROLE_ADMIN);
  r.mutable_ttl()->set_seconds(-5);
  CHECK(ValidateCreateToken(r).code() == absl::StatusCode::kInvalidArgument);
  r.mutable_ttl()->set_seconds(3600);
  CHECK(ValidateCreateToken(r).ok());
}

}  // namespace
}  // namespace trainctl::server
