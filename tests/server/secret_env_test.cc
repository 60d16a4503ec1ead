// Secret env entries: the patterns, secretEnv, and the redacted view of a job.
#include "server/secret_env.h"

#include <catch2/catch.hpp>

namespace trainctl::server {
namespace {

TEST_CASE("the default patterns and secretEnv decide what is secret", "[secret_env]") {
  absl::StatusOr<SecretRedactor> r = SecretRedactor::Parse(kDefaultSecretEnvPatterns);
  REQUIRE(r.ok());
  v1::WorkerPool pool;
  pool.add_secret_env("WANDB_API");
  for (const char* name : {"AWS_SECRET_ACCESS_KEY", "HF_TOKEN", "DB_PASSWORD", "SSH_KEY",
                           "GITHUB_TOKEN_RO", "WANDB_API"}) {
    INFO(name);
    CHECK(r->IsSecret(pool, name));
  }
  for (const char* name : {"PATH", "KEYBOARD", "SECRET", "aws_secret_access_key", "KEY_ID"}) {
    INFO(name);
    CHECK_FALSE(r->IsSecret(pool, name));
  }
  // "none": secretEnv alone.
  absl::StatusOr<SecretRedactor> none = SecretRedactor::Parse("none");
  REQUIRE(none.ok());
  CHECK_FALSE(none->IsSecret(pool, "HF_TOKEN"));
  CHECK(none->IsSecret(pool, "WANDB_API"));
}

TEST_CASE("a bad pattern is refused naming it", "[secret_env]") {
  CHECK(SecretRedactor::Parse("*_KEY,,X").status().message() ==
        "--secret-env-pattern: \"\" is not a pattern of letters, digits, '_', '*' and '?' "
        "(comma-separated, or none)");
  CHECK(SecretRedactor::Parse("A/B").status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(SecretRedactor::Parse("[A]*").status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("Redact replaces only the secret values of every pool", "[secret_env]") {
  v1::Job job;
  v1::WorkerPool* chief = job.mutable_spec()->add_worker_pools();
  (*chief->mutable_env())["HF_TOKEN"] = "hf_abc";
  (*chief->mutable_env())["LR"] = "0.1";
  v1::WorkerPool* worker = job.mutable_spec()->add_worker_pools();
  (*worker->mutable_env())["CUSTOM"] = "s3cr3t";
  (*worker->mutable_env())["HF_TOKEN"] = "hf_def";
  worker->add_secret_env("CUSTOM");
  SecretRedactor(std::vector<std::string>{"*_TOKEN"}).Redact(&job);
  CHECK(chief->env().at("HF_TOKEN") == "<redacted>");
  CHECK(chief->env().at("LR") == "0.1");
  CHECK(worker->env().at("CUSTOM") == "<redacted>");
  CHECK(worker->env().at("HF_TOKEN") == "<redacted>");
  // The list of names itself is no secret.
  CHECK(worker->secret_env(0) == "CUSTOM");
}

}  // namespace
}  // namespace trainctl::server
