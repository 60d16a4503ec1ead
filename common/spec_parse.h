// Reads job specs written by users (YAML, or JSON, which is YAML too) into trainctl::v1::JobSpec.
//
// Keys are protobuf field names in either form: the JSON mapping name ("replicaCount") or the
// proto name ("replica_count"). The conversion walks the message descriptor, so every error names
// the field it is about, in JSON-mapping names:
//
//   workerPools[1].replicaCount: expected an integer, got "abc"
//   workerPools[0].resouces: unknown field; known fields: name, replicaCount, command, ...
//
// The checks are syntactic only (types, ranges of the integer types, known fields and enum
// values). Whether a spec makes sense (replica counts, empty commands, ...) is the server's
// validator's call.
//
//   absl::StatusOr<v1::JobSpec> spec = ParseJobSpecFile("examples/hello.yaml");
//   if (!spec.ok()) return spec.status();  // INVALID_ARGUMENT with the field path
//
// Value mapping: integers are range-checked; a double accepts any number; a string field takes
// the text of any scalar (`FOO: 1` in env gives "1"); enums take the value name with or without
// the type prefix, in any case ("JOB_STATE_RUNNING", "RUNNING", "running"), in CamelCase as
// Kubernetes writes them ("IfNotPresent" for IMAGE_PULL_POLICY_IF_NOT_PRESENT) or the number;
// google.protobuf.Duration takes "30s", "500ms", "5m", "1h30m"; google.protobuf.Timestamp takes
// RFC 3339; bytes take base64; a string (a map's keys too) must be valid UTF-8. A null value
// leaves the field unset.
//
// Thread-safe: these are pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl {

// The most a document may hold once YAML aliases are expanded: far more than any real job spec
// (4,096 replicas are one number), far less than a "billion laughs" document, a few lines of
// nested aliases that would expand to gigabytes.
inline constexpr int64_t kMaxExpandedNodes = 200'000;
inline constexpr int64_t kMaxExpandedBytes = int64_t{64} << 20;
// The deepest nesting of mappings and sequences a spec may have; a JobSpec needs fewer than ten.
inline constexpr int kMaxNestingDepth = 64;

// Parses one YAML or JSON document into a JobSpec. Errors are INVALID_ARGUMENT: malformed text
// ("line 3, column 5: ..."), an empty document, a top level that is not a mapping, a document
// that expands past kMaxExpandedNodes or kMaxExpandedBytes, or a value that does not fit its
// field (with the field path).
absl::StatusOr<v1::JobSpec> ParseJobSpec(absl::string_view text);

// Reads `path` ("-" means stdin) and parses it with ParseJobSpec. Errors are prefixed with the
// path; an unreadable file is NOT_FOUND (missing) or INVALID_ARGUMENT (other read errors).
absl::StatusOr<v1::JobSpec> ParseJobSpecFile(const std::string& path);

// The conversion behind ParseJobSpec, for any message type: clears `*message`, then fills it from
// one YAML or JSON document whose top level is a mapping.
// REQUIRES: message != nullptr.
absl::Status ParseYamlToMessage(absl::string_view text, google::protobuf::Message* message);

}  // namespace trainctl
