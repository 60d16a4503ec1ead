#include "server/workdir_service.h"

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/status_macros.h"
#include "server/grpc_unary.h"
#include "server/upload_check.h"

namespace trainctl::server {
namespace workdir_service_internal {

// The most one message may carry.
constexpr size_t kMaxMessageData = size_t{1} << 20;

// A message of the upload, checked against the first (a later one may repeat its announcement).
absl::Status CheckUploadMessage(const v1::UploadWorkdirRequest& msg,
                                const v1::UploadWorkdirRequest& first) {
  if ((!msg.project().empty() && msg.project() != first.project()) ||
      (!msg.digest().empty() && msg.digest() != first.digest()) ||
      (msg.size_bytes() != 0 && msg.size_bytes() != first.size_bytes())) {
    return absl::InvalidArgumentError(
        "a later message of the upload names another project, digest or size than the first");
  }
  if (msg.data().size() > kMaxMessageData) {
    return absl::InvalidArgumentError(
        absl::StrCat("a message carries ", msg.data().size(), " bytes, at most 1 MiB"));
  }
  return absl::OkStatus();
}

}  // namespace workdir_service_internal

grpc::Status WorkdirServiceImpl::UploadWorkdir(grpc::ServerContext* ctx,
                                               grpc::ServerReader<v1::UploadWorkdirRequest>* reader,
                                               v1::Workdir* resp) {
  using workdir_service_internal::CheckUploadMessage;
  const CallContext call = CallContextOf(*ctx);
  absl::StatusOr<Caller> caller = api_->Authorize(call, Route::kUploadWorkdir);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  v1::UploadWorkdirRequest first;
  if (!reader->Read(&first)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the upload sent no message");
  }
  if (absl::Status s = api_->CheckUpload(*caller, first); !s.ok()) return ToGrpcStatus(s);
  // The first message's data, alone: `first` keeps the announcement.
  v1::UploadWorkdirRequest head;
  head.set_data(std::move(*first.mutable_data()));
  first.clear_data();
  UploadCheck check(first.digest(), first.size_bytes());
  if (absl::Status s = CheckUploadMessage(head, first); !s.ok()) return ToGrpcStatus(s);
  if (absl::Status s = check.Add(head.data()); !s.ok()) return ToGrpcStatus(s);
  // Reads messages as the store wants bytes, each checked against the first.
  auto more = [&]() -> absl::StatusOr<bool> {
    v1::UploadWorkdirRequest msg;
    if (!reader->Read(&msg)) return false;
    TC_RETURN_IF_ERROR(CheckUploadMessage(msg, first));
    TC_RETURN_IF_ERROR(check.Add(msg.data()));
    return true;
  };
  absl::StatusOr<v1::Workdir> stored = api_->StoreUpload(
      first, [&check, &more](std::string* chunk) { return check.Next(chunk, more); });
  if (!stored.ok()) {
    spdlog::info("upload of {} for project {} refused: {}", first.digest(), first.project(),
                 stored.status().ToString());
    return ToGrpcStatus(stored.status());
  }
  spdlog::info("upload of {} for project {} ({} bytes){}", first.digest(), first.project(),
               first.size_bytes(), stored->deduplicated() ? ": held already" : " stored");
  *resp = *std::move(stored);
  return grpc::Status::OK;
}

grpc::Status WorkdirServiceImpl::GetWorkdir(grpc::ServerContext* ctx,
                                            const v1::GetWorkdirRequest* req, v1::Workdir* resp) {
  absl::Status result;
  // Api::GetWorkdir answers on this thread.
  api_->GetWorkdir(CallContextOf(*ctx), *req, [&](absl::StatusOr<v1::Workdir> w) {
    result = w.status();
    if (w.ok()) *resp = *std::move(w);
  });
  return ToGrpcStatus(result);
}

}  // namespace trainctl::server
