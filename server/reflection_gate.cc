#include "server/reflection_gate.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace trainctl::server {

bool IsReflectionPath(absl::string_view path) {
  return absl::StartsWith(path, "/grpc.reflection.");
}

grpc::Status ReflectionGate::Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                                     OutputMetadata* consumed_auth_metadata,
                                     OutputMetadata* response_metadata) {
  (void)context;
  (void)consumed_auth_metadata;
  (void)response_metadata;
  auto path = auth_metadata.find(":path");
  if (path == auth_metadata.end() ||
      !IsReflectionPath(absl::string_view(path->second.data(), path->second.size()))) {
    return grpc::Status::OK;
  }
  absl::StatusOr<v1::ApiToken> token = auth_->Authenticate(AuthorizationHeader(auth_metadata));
  if (!token.ok()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        absl::StrCat("server reflection: ", token.status().message()));
  }
  return grpc::Status::OK;
}

}  // namespace trainctl::server
