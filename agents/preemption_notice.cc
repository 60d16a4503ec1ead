#include "agents/preemption_notice.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/json_text.h"
#include "common/signals.h"
#include "common/time_util.h"
#include "common/utf8.h"

namespace trainctl::agent {
namespace {

absl::Status NoticeError(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

// Writes `text` to `path` + ".tmp" (no link followed), gives it `mode` and `owner`, and renames
// it over `path`.
absl::Status ReplaceNoticeFile(const std::string& path, const std::string& text, mode_t mode,
                               const std::optional<NoticeOwner>& owner) {
  const std::string tmp = path + ".tmp";
  unlink(tmp.c_str());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return NoticeError("cannot create", tmp);
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      absl::Status s = NoticeError("cannot write", tmp);
      close(fd);
      unlink(tmp.c_str());
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if ((owner && fchown(fd, owner->uid, owner->gid) != 0) || fchmod(fd, mode) != 0) {
    absl::Status s = NoticeError("cannot set the owner and mode of", tmp);
    close(fd);
    unlink(tmp.c_str());
    return s;
  }
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    absl::Status s = NoticeError("cannot rename over", path);
    unlink(tmp.c_str());
    return s;
  }
  return absl::OkStatus();
}

// mkdir `path` (mode 0711 whatever the umask) unless it is a directory already; refuses a link.
absl::Status MakeNoticeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0711) == 0) {
    if (chmod(path.c_str(), 0711) != 0) return NoticeError("cannot set the mode of", path);
    return absl::OkStatus();
  }
  if (errno != EEXIST) return NoticeError("cannot create", path);
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return NoticeError("cannot read", path);
  if (!S_ISDIR(st.st_mode)) {
    return absl::InternalError(absl::StrCat("cannot create ", path, ": not a directory"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string NoticePath(const std::string& work_dir, const RunIdParts& run) {
  return absl::StrCat(work_dir, "/notices/", run.job_id, "/attempt-", run.attempt, "/",
                      run.replica_name, ".restart-", run.restart, ".json");
}

absl::Status CheckNotice(const trainctl::v1::NoticeReplica& notice) {
  const std::string& kind = notice.kind();
  if (kind != "preemption" && kind != "drain" && kind != "maintenance") {
    return absl::InvalidArgumentError(absl::StrCat(
        "notice kind must be preemption, drain or maintenance, got \"", SanitizeUtf8(kind), "\""));
  }
  if (notice.deadline_ms() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("notice deadline must be a positive Unix time, got ", notice.deadline_ms()));
  }
  if (notice.signal() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("notice signal must be 0 or a signal number, got ", notice.signal()));
  }
  return absl::OkStatus();
}

std::string NoticeJson(const trainctl::v1::NoticeReplica& notice) {
  return absl::StrCat("{\"kind\":", JsonQuoted(SanitizeUtf8(notice.kind())),
                      ",\"reason\":", JsonQuoted(SanitizeUtf8(notice.reason())),
                      ",\"preemptingJob\":", JsonQuoted(SanitizeUtf8(notice.preempting_job())),
                      ",\"deadline\":", JsonQuoted(FormatRfc3339(notice.deadline_ms())),
                      ",\"deadlineUnixMs\":", notice.deadline_ms(), ",\"signal\":",
                      JsonQuoted(notice.signal() > 0 ? SignalName(notice.signal()) : ""), "}\n");
}

std::string NoticeKey(const trainctl::v1::NoticeReplica& notice) {
  return absl::StrCat(SanitizeUtf8(notice.kind()), " ", notice.deadline_ms());
}

absl::Status WriteNoticeFile(const std::string& work_dir, const std::string& path,
                             const std::string& json, const std::optional<NoticeOwner>& owner) {
  const std::string root = work_dir + "/";
  if (path.compare(0, root.size(), root) != 0) {
    return absl::InternalError(absl::StrCat("notice file ", path, " is not under ", work_dir));
  }
  // Each directory between the work dir and the file, made and checked in order.
  for (size_t slash = path.find('/', root.size()); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    if (absl::Status s = MakeNoticeDir(path.substr(0, slash)); !s.ok()) return s;
  }
  return ReplaceNoticeFile(path, json, 0440, owner);
}

absl::Status RemoveJobNotices(const std::string& work_dir, const std::string& job_id) {
  if (absl::Status s = CheckPathComponent("job id", job_id); !s.ok()) return s;
  std::error_code ec;
  const std::string dir = absl::StrCat(work_dir, "/notices/", job_id);
  std::filesystem::remove_all(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot remove ", dir, ": ", ec.message()));
  return absl::OkStatus();
}

bool NoticeDelivered(const std::string& run_dir, const std::string& key) {
  const std::string path = absl::StrCat(run_dir, "/", kNoticeRecordFile);
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[256];
  ssize_t n = read(fd, buf, sizeof(buf));
  close(fd);
  return n > 0 && absl::string_view(buf, static_cast<size_t>(n)) == key + "\n";
}

absl::Status RecordNoticeDelivered(const std::string& run_dir, const std::string& key) {
  return ReplaceNoticeFile(absl::StrCat(run_dir, "/", kNoticeRecordFile), key + "\n", 0644,
                           std::nullopt);
}

}  // namespace trainctl::agent
