// The secrets projects keep in trainctld's memory: rows made sealed and applied only once
// committed, names and sizes listed per project, values opened only for their own project.
#include "server/project_secrets.h"

#include <catch2/catch.hpp>

namespace trainctl::server {
namespace {

const absl::Time kNow = absl::FromUnixMillis(1'800'000'000'000);

TEST_CASE("project secrets: set, list, open and delete, each project its own", "[secrets]") {
  ProjectSecrets secrets(SecretKey(std::string(32, 'k')));
  absl::StatusOr<storage::SecretRow> row = secrets.Set("team-a", "WANDB_KEY", "token-1", kNow);
  REQUIRE(row.ok());
  CHECK(row->sealed.find("token-1") == std::string::npos);
  CHECK(row->size == 7);
  CHECK(row->update_ms == absl::ToUnixMillis(kNow));
  // Not held until applied (the commit came first).
  CHECK(secrets.Open("team-a", "WANDB_KEY").status().code() == absl::StatusCode::kNotFound);
  secrets.Apply(*row);
  CHECK(secrets.Open("team-a", "WANDB_KEY").value() == "token-1");
  // Another project's name space: team-b has no such secret, and a row moved there won't open.
  absl::StatusOr<std::string> other = secrets.Open("team-b", "WANDB_KEY");
  REQUIRE_FALSE(other.ok());
  CHECK(other.status().message() == "project team-b has no secret named WANDB_KEY");
  storage::SecretRow moved = *row;
  moved.project = "team-b";
  secrets.Apply(moved);
  CHECK(secrets.Open("team-b", "WANDB_KEY").status().code() == absl::StatusCode::kDataLoss);
  secrets.Forget("team-b", "WANDB_KEY");

  secrets.Apply(*secrets.Set("team-a", "hf.token", "x", kNow));
  secrets.Apply(*secrets.Set("team-c", "A", "yy", kNow));
  std::vector<SecretInfo> listed = secrets.List("team-a");
  REQUIRE(listed.size() == 2);
  CHECK(listed[0].name == "WANDB_KEY");
  CHECK(listed[1].name == "hf.token");
  CHECK(listed[1].size == 1);
  CHECK(secrets.List("").size() == 3);
  CHECK(secrets.List("team-b").empty());

  CHECK(secrets.CheckExists("team-a", "hf.token").ok());
  secrets.Forget("team-a", "hf.token");
  CHECK(secrets.CheckExists("team-a", "hf.token").code() == absl::StatusCode::kNotFound);

  // Restored rows open as they were sealed.
  ProjectSecrets restarted(SecretKey(std::string(32, 'k')));
  restarted.Restore({*row});
  CHECK(restarted.Open("team-a", "WANDB_KEY").value() == "token-1");
}

TEST_CASE("project secrets: names and values are checked", "[secrets]") {
  ProjectSecrets secrets(SecretKey(std::string(32, 'k')));
  for (const std::string& bad :
       std::vector<std::string>{"", "-x", "a b", "a/b", std::string(254, 'a')}) {
    INFO(bad);
    absl::StatusOr<storage::SecretRow> row = secrets.Set("p", bad, "v", kNow);
    REQUIRE_FALSE(row.ok());
    CHECK(row.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(row.status().message().find("secret name must be") == 0);
  }
  CHECK(secrets.Set("p", "EMPTY", "", kNow).status().message() == "secret EMPTY needs a value");
  CHECK(secrets.Set("p", "BIG", std::string(64 * 1024 + 1, 'v'), kNow).status().message() ==
        "secret BIG is 65537 bytes; a secret holds at most 65536 bytes");
  CHECK(secrets.Set("p", "FULL", std::string(64 * 1024, 'v'), kNow).ok());
}

}  // namespace
}  // namespace trainctl::server
