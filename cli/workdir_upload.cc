#include "cli/workdir_upload.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "cli/workdir_pack.h"
#include "cli/workdir_scan.h"

namespace trainctl::cli {
namespace {

// The most data one upload message carries.
constexpr size_t kMessageBytes = size_t{1} << 20;

// An unnamed temporary file, closed (and gone) with this.
struct TempFile {
  int fd = -1;
  ~TempFile() {
    if (fd >= 0) close(fd);
  }
};

absl::Status WriteAll(int fd, absl::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError(absl::StrCat("writing the archive: ", strerror(errno)));
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

// True when the project holds `digest` already.
absl::StatusOr<bool> Held(Client& client, const std::string& project, const std::string& digest) {
  v1::GetWorkdirRequest request;
  request.set_project(project);
  request.set_digest(digest);
  v1::Workdir held;
  grpc::Status status = client.Unary([&](grpc::ClientContext* context) {
    return client.workdirs().GetWorkdir(context, request, &held);
  });
  if (status.ok()) return true;
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) return false;
  return client.ToStatus(status);
}

absl::Status Send(Client& client, const std::string& project, const PackedWorkdir& packed, int fd) {
  if (lseek(fd, 0, SEEK_SET) != 0) {
    return absl::InternalError(absl::StrCat("reading the archive: ", strerror(errno)));
  }
  grpc::ClientContext context;
  v1::Workdir stored;
  std::unique_ptr<grpc::ClientWriter<v1::UploadWorkdirRequest>> writer =
      client.workdirs().UploadWorkdir(&context, &stored);
  v1::UploadWorkdirRequest msg;
  msg.set_project(project);
  msg.set_digest(packed.digest);
  msg.set_size_bytes(packed.size);
  std::string buffer(kMessageBytes, '\0');
  for (;;) {
    const ssize_t n = read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError(absl::StrCat("reading the archive: ", strerror(errno)));
    if (n == 0) break;  // a tar archive holds 1 KiB at least: the first message carried data
    msg.set_data(buffer.data(), static_cast<size_t>(n));
    // trainctld may end the call early (it held the bytes, or refused them): Finish says why.
    if (!writer->Write(msg)) break;
    msg.clear_project();
    msg.clear_digest();
    msg.clear_size_bytes();
  }
  writer->WritesDone();
  grpc::Status status = writer->Finish();
  if (!status.ok()) return client.ToStatus(status);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> UploadWorkdir(Client& client, const std::string& project,
                                          const std::string& dir, int64_t max_bytes) {
  absl::StatusOr<WorkdirManifest> manifest = ScanWorkdir(dir, max_bytes);
  if (!manifest.ok()) return manifest.status();
  const char* tmp = std::getenv("TMPDIR");
  TempFile file;
  file.fd =
      open(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (file.fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot make a temporary file for the archive: ", strerror(errno)));
  }
  absl::StatusOr<PackedWorkdir> packed = PackWorkdir(
      dir, *manifest, [&](absl::string_view bytes) { return WriteAll(file.fd, bytes); });
  if (!packed.ok()) return packed.status();
  absl::StatusOr<bool> held = Held(client, project, packed->digest);
  if (!held.ok()) return held.status();
  if (*held) {
    std::cerr << "trainctl: project " << project << " holds " << dir << " already ("
              << packed->digest << ")" << std::endl;
    return packed->digest;
  }
  std::cerr << "trainctl: uploading " << dir << " (" << packed->files << " files, " << packed->size
            << " bytes archived)" << std::endl;
  if (absl::Status sent = Send(client, project, *packed, file.fd); !sent.ok()) return sent;
  return packed->digest;
}

}  // namespace trainctl::cli
