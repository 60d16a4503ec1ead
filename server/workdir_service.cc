#include "server/workdir_service.h"

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/sha256.h"
#include "server/grpc_unary.h"

namespace trainctl::server {
namespace {

// The most one message may carry.
constexpr size_t kMaxMessageData = size_t{1} << 20;

// Yields an upload's bytes in store-sized chunks (WorkdirStore::Put's `next`), reading messages
// as it needs them and checking each against the first; the last call checks the digest and size.
class UploadBytes {
 public:
  UploadBytes(grpc::ServerReader<v1::UploadWorkdirRequest>* reader,
              const v1::UploadWorkdirRequest& first)
      : reader_(reader), first_(first) {}

  absl::Status Take(const v1::UploadWorkdirRequest& msg) {
    if ((!msg.project().empty() && msg.project() != first_.project()) ||
        (!msg.digest().empty() && msg.digest() != first_.digest()) ||
        (msg.size_bytes() != 0 && msg.size_bytes() != first_.size_bytes())) {
      return absl::InvalidArgumentError(
          "a later message of the upload names another project, digest or size than the first");
    }
    if (msg.data().size() > kMaxMessageData) {
      return absl::InvalidArgumentError(
          absl::StrCat("a message carries ", msg.data().size(), " bytes, at most 1 MiB"));
    }
    received_ += static_cast<int64_t>(msg.data().size());
    if (received_ > first_.size_bytes()) {
      return absl::InvalidArgumentError(absl::StrCat("the upload sent more than the ",
                                                     first_.size_bytes(), " bytes it announced"));
    }
    hash_.Update(msg.data());
    buffer_.append(msg.data());
    return absl::OkStatus();
  }

  absl::StatusOr<bool> Next(std::string* chunk) {
    const size_t want = static_cast<size_t>(storage::kWorkdirChunkBytes);
    v1::UploadWorkdirRequest msg;
    while (buffer_.size() < want && !ended_) {
      if (!reader_->Read(&msg)) {
        ended_ = true;
        break;
      }
      if (absl::Status s = Take(msg); !s.ok()) return s;
    }
    const size_t n = std::min(want, buffer_.size());
    chunk->assign(buffer_, 0, n);
    buffer_.erase(0, n);
    if (!ended_ || !buffer_.empty()) return true;
    if (received_ != first_.size_bytes()) {
      return absl::InvalidArgumentError(absl::StrCat("the upload ended after ", received_,
                                                     " of the ", first_.size_bytes(),
                                                     " bytes it announced"));
    }
    if (const std::string got = absl::StrCat("sha256:", hash_.HexDigest());
        got != first_.digest()) {
      return absl::InvalidArgumentError(absl::StrCat("the bytes received hash to ", got,
                                                     ", not the announced ", first_.digest()));
    }
    return false;
  }

 private:
  grpc::ServerReader<v1::UploadWorkdirRequest>* const reader_;
  const v1::UploadWorkdirRequest& first_;
  std::string buffer_;
  Sha256 hash_;
  int64_t received_ = 0;
  bool ended_ = false;
};

}  // namespace

grpc::Status WorkdirServiceImpl::UploadWorkdir(grpc::ServerContext* ctx,
                                               grpc::ServerReader<v1::UploadWorkdirRequest>* reader,
                                               v1::Workdir* resp) {
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
  UploadBytes bytes(reader, first);
  if (absl::Status s = bytes.Take(head); !s.ok()) return ToGrpcStatus(s);
  absl::StatusOr<v1::Workdir> stored =
      api_->StoreUpload(first, [&bytes](std::string* chunk) { return bytes.Next(chunk); });
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
