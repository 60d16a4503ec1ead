#include "tests/integration/health_client.h"

#include <grpcpp/impl/codegen/client_unary_call.h>

#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace trainctl::testing {

absl::StatusOr<Serving> CheckHealth(const std::shared_ptr<grpc::Channel>& channel) {
  grpc::internal::RpcMethod method("/grpc.health.v1.Health/Check",
                                   grpc::internal::RpcMethod::NORMAL_RPC, channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Slice empty("", 0);  // HealthCheckRequest{service: ""} is empty on the wire
  grpc::ByteBuffer request(&empty, 1);
  grpc::ByteBuffer response;
  grpc::Status status = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
      channel.get(), method, &ctx, request, &response);
  if (!status.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  }
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (response.Dump(&slices).ok()) {
    for (const grpc::Slice& s : slices)
      bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  // HealthCheckResponse{status = 1: varint}; an empty message is UNKNOWN.
  if (bytes.empty()) return Serving::kUnknown;
  if (bytes.size() != 2 || bytes[0] != 0x08) {
    return absl::InternalError(
        absl::StrCat("unexpected health response of ", bytes.size(), " bytes"));
  }
  return static_cast<Serving>(bytes[1]);
}

}  // namespace trainctl::testing
