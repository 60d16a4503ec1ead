// admin backup FILE: a consistent copy of trainctld's database (AdminService.Backup), taken
// while jobs run and written to FILE whole or not at all (cli/backup_file.h).
#include <iostream>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "cli/backup_file.h"
#include "cli/commands.h"
#include "common/status_macros.h"
#include "common/time_util.h"

namespace trainctl::cli {

absl::StatusOr<int> RunAdminBackup(const std::string& path, bool force, Client& client) {
  TC_ASSIGN_OR_RETURN(std::unique_ptr<BackupFile> file, BackupFile::Create(path, force));
  // No deadline: a large database streams for as long as it takes.
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<v1::BackupChunk>> reader =
      client.admin().Backup(&context, v1::BackupRequest());
  v1::BackupChunk chunk;
  std::optional<v1::BackupSummary> summary;
  absl::Status failed;
  while (failed.ok() && reader->Read(&chunk)) {
    if (summary) {
      failed = absl::DataLossError("trainctld sent data after the backup's summary");
    } else if (absl::Status s = file->Append(chunk.data()); !s.ok()) {
      failed = s;
    } else if (chunk.has_done()) {
      summary = chunk.done();
    }
  }
  if (!failed.ok()) {
    context.TryCancel();
    while (reader->Read(&chunk)) {
    }
  }
  const grpc::Status status = reader->Finish();
  if (!failed.ok()) return failed;
  if (!status.ok()) return client.ToStatus(status);
  if (!summary) {
    return absl::DataLossError(
        absl::StrCat("the backup stream ended without its summary; nothing was written to ", path));
  }
  TC_RETURN_IF_ERROR(file->Commit(summary->size_bytes(), summary->sha256()));
  std::cout << "wrote " << path << ": trainctld's database as of "
            << FormatRfc3339(TimestampToMs(summary->snapshot_time())) << ", " << file->size()
            << " bytes, sha256 " << file->sha256() << std::endl;
  std::cerr << "the backup holds secret environment values and token hashes: it is mode 0600; "
               "keep it like a password"
            << std::endl;
  return kExitOk;
}

}  // namespace trainctl::cli
