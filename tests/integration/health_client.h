// A raw client of gRPC's health service (grpc.health.v1.Health/Check) for tests that ask
// trainctld whether it serves. The request and response are read and written on the wire
// format, so no generated health client is needed.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>

#include "absl/status/statusor.h"

namespace trainctl::testing {

// HealthCheckResponse.ServingStatus values.
enum class Serving { kUnknown = 0, kServing = 1, kNotServing = 2, kServiceUnknown = 3 };

// Checks the server's overall health (service ""); the call's error when it fails.
absl::StatusOr<Serving> CheckHealth(const std::shared_ptr<grpc::Channel>& channel);

}  // namespace trainctl::testing
