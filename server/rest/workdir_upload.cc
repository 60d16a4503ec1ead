// UploadWorkdir (workdir_upload.h): the REST upload of a working directory, streamed from the
// HTTP body into the WorkdirStore through a bounded pipe between two threads.
#include "server/rest/workdir_upload.h"

#include <spdlog/spdlog.h>

#include <deque>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"
#include "server/upload_check.h"
#include "storage/workdir_store.h"

namespace trainctl::server::rest {
namespace workdir_upload_internal {

// How the body is handed over: in blocks of a store chunk, at most this many waiting.
constexpr size_t kUploadBlockBytes = static_cast<size_t>(storage::kWorkdirChunkBytes);
constexpr size_t kUploadBlocksWaiting = 2;

// Blocks of the body, from the HTTP thread that reads them to the upload's thread that stores
// them. Push waits while the pipe is full, Pop while it is empty.
class UploadPipe {
 public:
  // The reader's side. False once the store stopped (done, or an error): the rest is not wanted.
  bool Push(std::string block) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &UploadPipe::HasRoom));
    if (quit_) return false;
    blocks_.push_back(std::move(block));
    return true;
  }
  // The body is over: `read` is OK, or why it was not read whole.
  void End(absl::Status read) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    ended_ = true;
    read_ = std::move(read);
  }

  // The store's side: the next block; false once the body is over; the read's error when it
  // failed.
  absl::StatusOr<bool> Pop(std::string* block) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &UploadPipe::Readable));
    if (!blocks_.empty()) {
      *block = std::move(blocks_.front());
      blocks_.pop_front();
      return true;
    }
    if (!read_.ok()) return read_;
    return false;
  }
  // The store takes no more.
  void Quit() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    quit_ = true;
    blocks_.clear();
  }

 private:
  bool HasRoom() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return quit_ || blocks_.size() < kUploadBlocksWaiting;
  }
  bool Readable() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return ended_ || !blocks_.empty(); }

  absl::Mutex mu_;
  std::deque<std::string> blocks_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool quit_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status read_ ABSL_GUARDED_BY(mu_);
};

// The upload's announcement from the route's parameters and Content-Length, checked with the
// caller's right (Api::Authorize, Api::CheckUpload) before any byte of the body is read.
absl::StatusOr<v1::UploadWorkdirRequest> Announced(Api* api, const HttpRequest& req) {
  TC_ASSIGN_OR_RETURN(const Caller caller, api->Authorize(req.call, server::Route::kUploadWorkdir));
  for (const auto& [name, value] : req.params) {
    if (name != "project" && name != "digest") {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown parameter \"", name,
          "\": an upload takes ?digest=sha256:...; its body is the tar archive, and its "
          "Content-Length the size"));
    }
  }
  v1::UploadWorkdirRequest first;
  TC_RETURN_IF_ERROR(SetFields(req.params, {}, &first));
  if (req.content_length < 0) {
    return absl::InvalidArgumentError(
        "Content-Length: required, the archive's size in bytes (a chunked body is not taken)");
  }
  first.set_size_bytes(req.content_length);
  TC_RETURN_IF_ERROR(api->CheckUpload(caller, first));
  return first;
}

// Stores the body of `req` as announced by `first`: read here, hashed and written on a thread of
// its own.
absl::StatusOr<v1::Workdir> StoreBody(Api* api, HttpRequest& req,
                                      const v1::UploadWorkdirRequest& first) {
  UploadPipe pipe;
  absl::StatusOr<v1::Workdir> stored = absl::InternalError("the upload was not stored");
  std::thread store([api, &first, &pipe, &stored] {
    UploadCheck check(first.digest(), first.size_bytes());
    auto more = [&check, &pipe]() -> absl::StatusOr<bool> {
      std::string block;
      absl::StatusOr<bool> got = pipe.Pop(&block);
      if (!got.ok() || !*got) return got;
      TC_RETURN_IF_ERROR(check.Add(block));
      return true;
    };
    stored = api->StoreUpload(
        first, [&check, &more](std::string* chunk) { return check.Next(chunk, more); });
    pipe.Quit();
  });
  std::string block;
  bool wanted = true;
  const bool read = req.read_body([&block, &wanted, &pipe](const char* data, size_t size) {
    if (!wanted) return true;  // the store stopped: the rest is read and dropped
    block.append(data, size);
    if (block.size() >= kUploadBlockBytes) {
      wanted = pipe.Push(std::move(block));
      block.clear();
    }
    return true;
  });
  if (wanted && !block.empty()) pipe.Push(std::move(block));
  pipe.End(read ? absl::OkStatus()
                : absl::InvalidArgumentError(
                      absl::StrCat("the request body ended before its Content-Length (",
                                   first.size_bytes(), " bytes): the client left or stalled")));
  store.join();
  return stored;
}

}  // namespace workdir_upload_internal

HttpReply UploadWorkdir(Api* api, StreamRegistry* streams, HttpRequest& req) {
  absl::StatusOr<v1::UploadWorkdirRequest> first = workdir_upload_internal::Announced(api, req);
  if (!first.ok()) return ErrorReply(first.status());
  // An upload holds a thread of the pool while it lasts, as a stream does.
  if (absl::Status s = streams->Acquire(); !s.ok()) return ErrorReply(s);
  absl::StatusOr<v1::Workdir> stored = workdir_upload_internal::StoreBody(api, req, *first);
  streams->Release();
  if (!stored.ok()) {
    spdlog::info("HTTP upload of {} for project {} refused: {}", first->digest(), first->project(),
                 stored.status().ToString());
    return ErrorReply(stored.status());
  }
  spdlog::info("HTTP upload of {} for project {} ({} bytes){}", first->digest(), first->project(),
               first->size_bytes(), stored->deduplicated() ? ": held already" : " stored");
  HttpReply reply;
  reply.body = ToJson(*stored);
  return reply;
}

absl::Status CheckWorkdirUpload(Api* api, const HttpRequest& req) {
  return workdir_upload_internal::Announced(api, req).status();
}

}  // namespace trainctl::server::rest
