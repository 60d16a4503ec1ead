#include "cli/client.h"

#include <catch2/catch.hpp>

namespace trainctl::cli {
namespace {

TEST_CASE("ResolveServer prefers the flag, then the environment", "[client]") {
  CHECK(ResolveServer("a:1", "b:2") == "a:1");
  CHECK(ResolveServer("", "b:2") == "b:2");
  CHECK(ResolveServer("", "") == "127.0.0.1:7070");
  CHECK(ResolveServer("", nullptr) == "127.0.0.1:7070");
}

TEST_CASE("UnavailableMessage names the server and how to change it", "[client]") {
  std::string message = UnavailableMessage("10.0.0.1:7070", "Connection refused");
  CHECK_THAT(message, Catch::StartsWith("cannot reach the trainctl server at 10.0.0.1:7070 "
                                        "(Connection refused)"));
  CHECK_THAT(message, Catch::Contains("--server"));
  CHECK_THAT(message, Catch::Contains("TRAINCTL_SERVER"));
}

TEST_CASE("ToStatus keeps the code and explains an unreachable server", "[client]") {
  Client client("127.0.0.1:1");
  absl::Status not_found = client.ToStatus(grpc::Status(grpc::StatusCode::NOT_FOUND, "no job x"));
  CHECK(not_found.code() == absl::StatusCode::kNotFound);
  CHECK(not_found.message() == "no job x");
  absl::Status down = client.ToStatus(grpc::Status(grpc::StatusCode::UNAVAILABLE, "refused"));
  CHECK(down.code() == absl::StatusCode::kUnavailable);
  CHECK_THAT(std::string(down.message()), Catch::Contains("127.0.0.1:1"));
}

TEST_CASE("IsTransient retries outages, not rejections", "[client]") {
  CHECK(IsTransient(grpc::StatusCode::UNAVAILABLE));
  CHECK(IsTransient(grpc::StatusCode::INTERNAL));
  CHECK_FALSE(IsTransient(grpc::StatusCode::NOT_FOUND));
  CHECK_FALSE(IsTransient(grpc::StatusCode::INVALID_ARGUMENT));
  CHECK_FALSE(IsTransient(grpc::StatusCode::FAILED_PRECONDITION));
}

}  // namespace
}  // namespace trainctl::cli
