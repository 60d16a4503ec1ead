// UploadCheck (upload_check.h): hashing and counting an upload's bytes, cut into store chunks.
#include "server/upload_check.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "storage/workdir_store.h"

namespace trainctl::server {

UploadCheck::UploadCheck(std::string digest, int64_t size)
    : digest_(std::move(digest)), size_(size) {}

absl::Status UploadCheck::Add(absl::string_view data) {
  received_ += static_cast<int64_t>(data.size());
  if (received_ > size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("the upload sent more than the ", size_, " bytes it announced"));
  }
  hash_.Update(data);
  buffer_.append(data.data(), data.size());
  return absl::OkStatus();
}

absl::StatusOr<bool> UploadCheck::Next(std::string* chunk,
                                       const std::function<absl::StatusOr<bool>()>& more) {
  const size_t want = static_cast<size_t>(storage::kWorkdirChunkBytes);
  while (buffer_.size() < want && !ended_) {
    absl::StatusOr<bool> got = more();
    if (!got.ok()) return got.status();
    if (!*got) ended_ = true;
  }
  const size_t n = std::min(want, buffer_.size());
  chunk->assign(buffer_, 0, n);
  buffer_.erase(0, n);
  if (!ended_ || !buffer_.empty()) return true;
  if (received_ != size_) {
    return absl::InvalidArgumentError(absl::StrCat("the upload ended after ", received_, " of the ",
                                                   size_, " bytes it announced"));
  }
  if (const std::string got = absl::StrCat("sha256:", hash_.HexDigest()); got != digest_) {
    return absl::InvalidArgumentError(
        absl::StrCat("the bytes received hash to ", got, ", not the announced ", digest_));
  }
  return false;
}

}  // namespace trainctl::server
