// Project secrets at rest: sealing opens only with the same key and row, tampering is caught, the
// key file is made 0600 once and refused when others can read it or it has the wrong size.
#include "server/secret_box.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "tests/storage/temp_dir.h"

namespace trainctl::server {
namespace {

TEST_CASE("secret box: a sealed value opens with its key and row only", "[secret_box]") {
  const SecretKey key(std::string(32, 'k'));
  const std::string sealed = key.Seal("team-a/WANDB", "token-123");
  CHECK(sealed.size() == 1 + 12 + 9 + 16);
  CHECK(sealed.find("token-123") == std::string::npos);
  CHECK(key.Open("team-a/WANDB", sealed).value() == "token-123");
  // Fresh nonces: the same value seals differently each time.
  CHECK(key.Seal("team-a/WANDB", "token-123") != sealed);
  // Another row, another key, a flipped byte: DATA_LOSS naming the row, not the value.
  absl::StatusOr<std::string> moved = key.Open("team-b/WANDB", sealed);
  REQUIRE_FALSE(moved.ok());
  CHECK(moved.status().code() == absl::StatusCode::kDataLoss);
  CHECK(moved.status().message().find("team-b/WANDB") != std::string::npos);
  CHECK(moved.status().message().find("token") == std::string::npos);
  CHECK_FALSE(SecretKey(std::string(32, 'x')).Open("team-a/WANDB", sealed).ok());
  std::string flipped = sealed;
  flipped[15] ^= 1;
  CHECK_FALSE(key.Open("team-a/WANDB", flipped).ok());
  CHECK_FALSE(key.Open("team-a/WANDB", sealed.substr(0, 20)).ok());
  // An empty value seals and opens.
  CHECK(key.Open("p/EMPTY", key.Seal("p/EMPTY", "")).value().empty());
}

TEST_CASE("secret box: the key file is made once, 0600, and checked when read", "[secret_box]") {
  const storage::TempDir dir;
  const std::string path = dir.path + "/secrets.key";
  absl::StatusOr<SecretKey> made = LoadOrCreateSecretKey(path);
  REQUIRE(made.ok());
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  CHECK(st.st_size == 32);
  const std::string sealed = made->Seal("p/N", "v");
  // Read back: the same key.
  absl::StatusOr<SecretKey> again = LoadOrCreateSecretKey(path);
  REQUIRE(again.ok());
  CHECK(again->Open("p/N", sealed).value() == "v");

  REQUIRE(chmod(path.c_str(), 0644) == 0);
  absl::StatusOr<SecretKey> open_to_all = LoadOrCreateSecretKey(path);
  REQUIRE_FALSE(open_to_all.ok());
  CHECK(open_to_all.status().message().find("chmod 600") != std::string::npos);
  REQUIRE(chmod(path.c_str(), 0600) == 0);
  std::ofstream(path, std::ios::app) << "extra";
  absl::StatusOr<SecretKey> wrong_size = LoadOrCreateSecretKey(path);
  REQUIRE_FALSE(wrong_size.ok());
  CHECK(wrong_size.status().message().find("exactly 32 bytes, it holds 37") != std::string::npos);
}

}  // namespace
}  // namespace trainctl::server
