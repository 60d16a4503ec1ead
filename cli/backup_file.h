// The file `trainctl admin backup FILE` writes: the copy of trainctld's database as it streams
// in, never a partial FILE. The bytes go to a temporary file beside FILE (mode 0600: the copy
// holds secret environment values and the hashes of API tokens), hashed as they come; Commit()
// checks the size and SHA-256 trainctld reported, syncs the file and renames it into place, then
// syncs the directory. Without Commit() (an error, a broken stream) the temporary file is
// removed and FILE is untouched.
//
//   absl::StatusOr<std::unique_ptr<BackupFile>> file = BackupFile::Create("db.bak", false);
//   (*file)->Append(chunk.data());              // for each chunk
//   (*file)->Commit(summary.size_bytes(), summary.sha256());
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/sha256.h"

namespace trainctl::cli {

class BackupFile {
 public:
  // Starts the temporary file beside `path`. FAILED_PRECONDITION when `path` exists and not
  // `overwrite` (--force); INVALID_ARGUMENT when its directory cannot take the file.
  static absl::StatusOr<std::unique_ptr<BackupFile>> Create(const std::string& path,
                                                            bool overwrite);
  // Removes the temporary file unless Commit() succeeded.
  ~BackupFile();
  BackupFile(const BackupFile&) = delete;
  BackupFile& operator=(const BackupFile&) = delete;

  // Writes the next bytes. INTERNAL naming the file on a write error (a full disk).
  absl::Status Append(absl::string_view bytes);

  // Checks that the bytes written are `size` bytes with SHA-256 `sha256` (DATA_LOSS when not),
  // then makes them `path`: synced, renamed into place (refused if `path` appeared meanwhile
  // without `overwrite`), the directory synced.
  absl::Status Commit(int64_t size, const std::string& sha256);

  // The bytes written so far, and their SHA-256 once committed.
  int64_t size() const { return hash_.size(); }
  const std::string& sha256() const { return digest_; }
  // Where the bytes go until Commit().
  const std::string& temp_path() const { return temp_; }

 private:
  BackupFile(std::string path, std::string temp, int fd, bool overwrite);

  const std::string path_;
  const std::string temp_;
  const bool overwrite_;
  int fd_;
  bool committed_ = false;
  Sha256 hash_;
  std::string digest_;
};

}  // namespace trainctl::cli
