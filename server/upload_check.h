// UploadCheck: the bytes of a working directory's upload checked against the size and digest it
// announced, and cut into the WorkdirStore's chunks, for both transports: gRPC's WorkdirService
// (workdir_service.h, the bytes in messages) and REST's POST /v1/projects/{project}/workdirs
// (rest/workdir_upload.h, the bytes as the HTTP body). The bytes are hashed as they come and at
// most a chunk and the last piece read are held, however large the upload.
//
//   UploadCheck check(first.digest(), first.size_bytes());
//   api->StoreUpload(first, [&](std::string* chunk) {
//     return check.Next(chunk, [&]() -> absl::StatusOr<bool> {
//       if (!ReadSome(&bytes)) return false;      // the input ended
//       TC_RETURN_IF_ERROR(check.Add(bytes));
//       return true;
//     });
//   });
//
// Not thread-safe: one upload, read on one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/sha256.h"

namespace trainctl::server {

class UploadCheck {
 public:
  // `digest` ("sha256:<hex>") and `size` as the upload announced them (Api::CheckUpload'ed).
  UploadCheck(std::string digest, int64_t size);

  UploadCheck(const UploadCheck&) = delete;
  UploadCheck& operator=(const UploadCheck&) = delete;

  // Takes bytes received, hashing them: INVALID_ARGUMENT once more than the size announced came.
  absl::Status Add(absl::string_view data);

  // WorkdirStore::Put's `next`: fills `chunk` with up to kWorkdirChunkBytes, calling `more`
  // while fewer are held and the input has not ended (`more` Adds what it read and returns false
  // once the input ended; its error abandons the upload). True while bytes remain after this
  // chunk; with the last, INVALID_ARGUMENT when fewer bytes than announced came or they hash to
  // another digest.
  absl::StatusOr<bool> Next(std::string* chunk, const std::function<absl::StatusOr<bool>()>& more);

  // Bytes taken so far.
  int64_t received() const { return received_; }

 private:
  const std::string digest_;
  const int64_t size_;
  std::string buffer_;
  Sha256 hash_;
  int64_t received_ = 0;
  bool ended_ = false;
};

}  // namespace trainctl::server
