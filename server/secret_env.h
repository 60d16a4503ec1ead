// Secrets in job specs: which env entries are secret, and the redacted view of a job that every
// read returns. A replica still gets the real values (the launch and the store keep them); only
// what users read is redacted.
//
//   absl::StatusOr<SecretRedactor> r = SecretRedactor::Parse("*_SECRET*,*_TOKEN*");
//   r->Redact(&job);   // env values of secret entries become "<redacted>"
//
// An entry is secret when its pool lists it in secretEnv or its name matches one of the
// patterns (fnmatch(3) globs over the whole name, case-sensitive). Thread-safe: immutable.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::server {

// What a redacted value reads.
inline constexpr char kRedacted[] = "<redacted>";

// trainctld's default --secret-env-pattern.
inline constexpr char kDefaultSecretEnvPatterns[] = "*_SECRET*,*_TOKEN*,*_PASSWORD*,*_KEY";

class SecretRedactor {
 public:
  // Comma-separated globs of [A-Za-z0-9_*?]; "none" for no pattern (secretEnv still applies).
  // INVALID_ARGUMENT naming the pattern otherwise.
  static absl::StatusOr<SecretRedactor> Parse(const std::string& text);

  SecretRedactor() = default;
  explicit SecretRedactor(std::vector<std::string> patterns) : patterns_(std::move(patterns)) {}

  bool IsSecret(const v1::WorkerPool& pool, const std::string& name) const;
  // Replaces the value of every secret env entry of every pool.
  void Redact(v1::JobSpec* spec) const;
  void Redact(v1::Job* job) const { Redact(job->mutable_spec()); }

 private:
  std::vector<std::string> patterns_;
};

}  // namespace trainctl::server
