// Requests that do not parse: INVALID_ARGUMENT naming the field, not gRPC's bare UNIMPLEMENTED.
//
// Protobuf refuses a proto3 string field that is not UTF-8 while parsing, before any handler
// runs, and gRPC's callback handlers answer every failed parse with UNIMPLEMENTED and an empty
// message. A client cannot act on that. DiagnosingService re-installs a service's unary and
// server-streaming methods behind handlers that keep the request's bytes until the parse is
// known to have succeeded; when it failed, they walk the wire format against the message's
// descriptor and answer `INVALID_ARGUMENT: spec.workerPools[0].env["K"] must be valid UTF-8`
// (or that the bytes are no valid message at all), without calling the service's method.
#pragma once

#include <grpc/byte_buffer.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/server_callback_handlers.h>

#include <optional>
#include <string>
#include <string_view>

#include "google/protobuf/descriptor.h"

namespace trainctl::server {

// The JSON path of the first string field of a `type` message encoded in `wire` that is not
// valid UTF-8 (`spec.workerPools[1].command[0]`, `spec.workerPools[0].env["K"]`), or nullopt.
std::optional<std::string> FindInvalidUtf8(const google::protobuf::Descriptor* type,
                                           std::string_view wire);

// The message for a `type` request whose bytes did not parse: the field that is not UTF-8, or
// that the bytes are not a `type` at all.
std::string DescribeUnparsable(const google::protobuf::Descriptor* type, grpc_byte_buffer* bytes);

namespace request_diagnosis_internal {

// Set while a diagnosing handler runs the wrapped handler for a request that did not parse:
// the message the request is refused with. Handlers run their reactor getter synchronously.
const std::string*& PendingRefusal();

// Deserializes `req` with `deserialize`, keeping a copy of the bytes (a reference count, no
// copy of the data) to describe a failure: then `*status` is INVALID_ARGUMENT with the reason.
template <class Deserialize>
void* DeserializeOrDescribe(const google::protobuf::Descriptor* type, grpc_byte_buffer* req,
                            grpc::Status* status, Deserialize&& deserialize) {
  grpc_byte_buffer* kept = req == nullptr ? nullptr : grpc_byte_buffer_copy(req);
  void* parsed = deserialize(req);
  if (!status->ok()) {
    *status = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, DescribeUnparsable(type, kept));
  }
  if (kept != nullptr) grpc_byte_buffer_destroy(kept);
  return parsed;
}

// Runs `run` with a parameter whose status is OK, so that the wrapped handler asks its getter
// for a reactor; the getter sees PendingRefusal() and refuses the call with that message.
template <class Run>
void RunOrRefuse(const grpc::internal::MethodHandler::HandlerParameter& p, Run&& run) {
  if (p.status.ok()) {
    run(p);
    return;
  }
  const std::string refusal = p.status.error_message();
  grpc::internal::MethodHandler::HandlerParameter ok(
      p.call, p.server_context, p.request, grpc::Status::OK, p.internal_data, p.call_requester);
  PendingRefusal() = &refusal;
  run(ok);
  PendingRefusal() = nullptr;
}

// A server-streaming reactor that only finishes with `status`.
template <class Resp>
class RefusedWriteReactor final : public grpc::ServerWriteReactor<Resp> {
 public:
  explicit RefusedWriteReactor(grpc::Status status) { this->Finish(std::move(status)); }
  void OnDone() override { delete this; }
};

// A method's handler: `Inner`, gRPC's handler for the method's kind, behind a parse that
// describes its failures. The getter given to Inner refuses the call when PendingRefusal is set.
template <class Req, class Inner>
class Handler final : public grpc::internal::MethodHandler {
 public:
  template <class Getter>
  explicit Handler(Getter getter) : inner_(std::move(getter)) {}

  void* Deserialize(grpc_call* call, grpc_byte_buffer* req, grpc::Status* status,
                    void** handler_data) override {
    return DeserializeOrDescribe(Req::descriptor(), req, status, [&](grpc_byte_buffer* b) {
      return inner_.Deserialize(call, b, status, handler_data);
    });
  }
  void RunHandler(const HandlerParameter& p) override {
    RunOrRefuse(p, [&](const HandlerParameter& q) { inner_.RunHandler(q); });
  }

 private:
  Inner inner_;
};

// The index of `method` in the service named `service` (the order of the .proto file, which is
// the generated code's order too).
int MethodIndex(const char* service, const char* method);

}  // namespace request_diagnosis_internal

// Base of a callback service implementation whose methods refuse unparsable requests with a
// message; `Grpc` is the generated service class (v1::JobService). Its constructor calls
// Diagnose for each method:
//   Diagnose("CreateJob", &JobServiceImpl::CreateJob);
template <class Grpc>
class DiagnosingService : public Grpc::CallbackService {
 protected:
  template <class Impl, class Req, class Resp>
  void Diagnose(const char* method,
                grpc::ServerUnaryReactor* (Impl::*fn)(grpc::CallbackServerContext*, const Req*,
                                                      Resp*)) {
    namespace in = request_diagnosis_internal;
    Impl* self = static_cast<Impl*>(this);
    this->MarkMethodCallback(
        in::MethodIndex(Grpc::service_full_name(), method),
        new in::Handler<Req, grpc::internal::CallbackUnaryHandler<Req, Resp>>(
            [self, fn](grpc::CallbackServerContext* ctx, const Req* req,
                       Resp* resp) -> grpc::ServerUnaryReactor* {
              if (const std::string* refusal = in::PendingRefusal()) {
                grpc::ServerUnaryReactor* r = ctx->DefaultReactor();
                r->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, *refusal));
                return r;
              }
              return (self->*fn)(ctx, req, resp);
            }));
  }
  template <class Impl, class Req, class Resp>
  void Diagnose(const char* method,
                grpc::ServerWriteReactor<Resp>* (Impl::*fn)(grpc::CallbackServerContext*,
                                                            const Req*)) {
    namespace in = request_diagnosis_internal;
    Impl* self = static_cast<Impl*>(this);
    this->MarkMethodCallback(
        in::MethodIndex(Grpc::service_full_name(), method),
        new in::Handler<Req, grpc::internal::CallbackServerStreamingHandler<Req, Resp>>(
            [self, fn](grpc::CallbackServerContext* ctx,
                       const Req* req) -> grpc::ServerWriteReactor<Resp>* {
              if (const std::string* refusal = in::PendingRefusal()) {
                return new in::RefusedWriteReactor<Resp>(
                    grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, *refusal));
              }
              return (self->*fn)(ctx, req);
            }));
  }
};

}  // namespace trainctl::server
