#include "cli/workdir_scan.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/ignore_rules.h"
#include "common/os_error.h"

namespace trainctl::cli {
namespace {

std::string Mib(int64_t bytes) {
  return absl::StrCat(static_cast<double>(bytes * 10 / (1 << 20)) / 10, " MiB");
}

// Walks `rel` (relative to `root`; "" for the top) into `out`.
absl::Status Walk(const std::string& root, const std::string& rel, const IgnoreRules& rules,
                  WorkdirManifest* out) {
  const std::string path = rel.empty() ? root : root + "/" + rel;
  DIR* d = opendir(path.c_str());
  if (d == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--workdir: cannot read directory ", path, ": ", ErrnoText(errno)));
  }
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const std::string child = rel.empty() ? name : rel + "/" + name;
    const std::string full = root + "/" + child;
    struct stat st;
    if (lstat(full.c_str(), &st) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--workdir: cannot read ", full, ": ", ErrnoText(errno)));
    }
    const bool is_dir = S_ISDIR(st.st_mode);
    if (rules.Ignored(child, is_dir)) {
      ++out->ignored;
      continue;
    }
    WorkdirEntry entry;
    entry.path = child;
    entry.mode = st.st_mode & 07777;
    if (is_dir) {
      entry.kind = WorkdirEntry::Kind::kDirectory;
      out->entries.push_back(entry);
      if (absl::Status s = Walk(root, child, rules, out); !s.ok()) return s;
    } else if (S_ISREG(st.st_mode)) {
      // Readable now: open it, so a file the user cannot read is named before any upload.
      const int fd = open(full.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("--workdir: cannot read ", full, ": ", ErrnoText(errno),
                         "; make it readable or list it in ", kIgnoreFile));
      }
      close(fd);
      entry.size = st.st_size;
      out->total_bytes += st.st_size;
      out->entries.push_back(entry);
    } else if (S_ISLNK(st.st_mode)) {
      entry.kind = WorkdirEntry::Kind::kSymlink;
      std::string target(4096, '\0');
      const ssize_t n = readlink(full.c_str(), target.data(), target.size());
      if (n < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("--workdir: cannot read link ", full, ": ", ErrnoText(errno)));
      }
      target.resize(static_cast<size_t>(n));
      entry.target = std::move(target);
      out->entries.push_back(entry);
    } else {
      out->skipped_special.push_back(child);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<WorkdirManifest> ScanWorkdir(const std::string& dir, int64_t max_bytes) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--workdir ", dir, ": ", ErrnoText(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("--workdir ", dir, " is not a directory"));
  }
  IgnoreRules rules;
  const std::string ignore_path = dir + "/" + kIgnoreFile;
  if (access(ignore_path.c_str(), F_OK) == 0) {
    std::ifstream in(ignore_path);
    if (!in) {
      return absl::InvalidArgumentError(
          absl::StrCat("--workdir: cannot read ", ignore_path, ": ", ErrnoText(errno)));
    }
    std::stringstream text;
    text << in.rdbuf();
    rules = IgnoreRules::Parse(text.str());
  }
  WorkdirManifest out;
  if (absl::Status s = Walk(dir, "", rules, &out); !s.ok()) return s;
  if (out.total_bytes > max_bytes) {
    std::vector<const WorkdirEntry*> files;
    for (const WorkdirEntry& e : out.entries) {
      if (e.kind == WorkdirEntry::Kind::kFile) files.push_back(&e);
    }
    std::sort(files.begin(), files.end(), [](const WorkdirEntry* a, const WorkdirEntry* b) {
      return a->size != b->size ? a->size > b->size : a->path < b->path;
    });
    std::vector<std::string> largest;
    for (size_t i = 0; i < files.size() && i < 5; ++i) {
      largest.push_back(absl::StrCat(files[i]->path, " (", Mib(files[i]->size), ")"));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "--workdir ", dir, " holds ", Mib(out.total_bytes), ", more than the ", Mib(max_bytes),
        " a job may ship; the largest files: ", absl::StrJoin(largest, ", "),
        ". List what the "
        "job does not need in ",
        dir, "/", kIgnoreFile, " (gitignore syntax)"));
  }
  return out;
}

}  // namespace trainctl::cli
