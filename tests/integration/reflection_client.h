// A raw client of gRPC server reflection (grpc.reflection.v1alpha, the version Debian's gRPC
// serves), for tests that ask trainctld which services and methods it registers. Requests and
// responses are built and read on the wire format, so no generated reflection client is needed.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/sync_stream.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/descriptor.pb.h"

namespace trainctl::testing {

// One ServerReflectionInfo exchange: sends `request` (a ServerReflectionRequest), returns the
// ServerReflectionResponse's bytes, or the call's error.
absl::StatusOr<std::string> ReflectionExchange(const std::shared_ptr<grpc::Channel>& channel,
                                               const std::string& request);

// ServerReflectionRequest{list_services: ""}.
std::string ListServicesRequest();
// ServerReflectionRequest{file_containing_symbol: symbol}.
std::string FileContainingSymbolRequest(const std::string& symbol);

// The service names of a list_services response.
std::vector<std::string> ServiceNames(const std::string& response);
// The files of a file_descriptor_response.
std::vector<google::protobuf::FileDescriptorProto> FileDescriptors(const std::string& response);

}  // namespace trainctl::testing
