// The gRPC side of a unary Api operation: the call's context goes in, the reply finishes the
// call. Every unary method of the gRPC services is one line:
//
//   return Unary(api_, &Api::GetJob, ctx, req, resp);
#pragma once

#include <grpcpp/grpcpp.h>

#include "common/grpc_status.h"
#include "server/api.h"

namespace trainctl::server {

// The context of a gRPC call, as Api takes it.
inline CallContext CallContextOf(const grpc::ServerContextBase& context) {
  CallContext call;
  if (std::optional<absl::string_view> h = AuthorizationHeader(context.client_metadata())) {
    call.authorization = std::string(*h);
  }
  call.peer = context.peer();
  return call;
}

template <class Req, class Resp>
grpc::ServerUnaryReactor* Unary(Api* api,
                                void (Api::*op)(const CallContext&, const Req&, Reply<Resp>),
                                grpc::CallbackServerContext* ctx, const Req* req, Resp* resp) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  (api->*op)(CallContextOf(*ctx), *req, [reactor, resp](absl::StatusOr<Resp> reply) {
    if (reply.ok()) *resp = *std::move(reply);
    reactor->Finish(ToGrpcStatus(reply.status()));
  });
  return reactor;
}

}  // namespace trainctl::server
