// The OpenAPI 3 document of trainctld's REST API (GET /v1/openapi.json), written from the route
// table (routes.h) and the messages' descriptors, so it lists exactly what is served. Each
// operation names its RPC in "x-grpc-method" ("trainctl.v1.JobService/CreateJob").
#pragma once

#include <string>

namespace trainctl::server::rest {

// The document as JSON; built once.
const std::string& OpenApiDocument();

}  // namespace trainctl::server::rest
