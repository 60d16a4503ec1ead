// gRPC server reflection behind authentication. Reflection is a service gRPC registers itself,
// outside the services trainctl authorizes call by call, so this gate checks its calls where
// gRPC checks credentials: an AuthMetadataProcessor on the TLS listener. A reflection call needs
// a valid bearer token (any role: reflection describes the API, no data); every other call
// passes through untouched, to be authorized by its service.
//
//   creds->SetAuthMetadataProcessor(std::make_shared<ReflectionGate>(&authorizer));
//
// Thread-safe: it only reads the Authorizer, which is thread-safe.
#pragma once

#include <grpcpp/security/auth_metadata_processor.h>

#include "server/authorizer.h"

namespace trainctl::server {

class ReflectionGate : public grpc::AuthMetadataProcessor {
 public:
  // `auth` (not owned, enabled) must outlive the server.
  explicit ReflectionGate(const Authorizer* auth) : auth_(auth) {}

  // Decides at once, on gRPC's thread: a token lookup never blocks for long.
  bool IsBlocking() const override { return false; }

  grpc::Status Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed_auth_metadata,
                       OutputMetadata* response_metadata) override;

 private:
  const Authorizer* const auth_;
};

// Whether a call to `path` ("/grpc.reflection.v1alpha.ServerReflection/...") is reflection.
bool IsReflectionPath(absl::string_view path);

}  // namespace trainctl::server
