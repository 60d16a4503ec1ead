#include "agents/report_journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace trainctl::agent {
namespace {

constexpr uint8_t kReport = 1;
constexpr uint8_t kAck = 2;
// kind + id.
constexpr size_t kBodyHeader = 1 + 8;
// Far above any report (the agent's messages are capped well below this).
constexpr uint32_t kMaxBody = 64 << 20;

void PutLe(std::string* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t GetLe(const char* p, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i)
    value |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return value;
}

std::string Record(uint8_t kind, uint64_t id, const std::string& payload) {
  std::string out;
  out.reserve(4 + kBodyHeader + payload.size());
  PutLe(&out, kBodyHeader + payload.size(), 4);
  out.push_back(static_cast<char>(kind));
  PutLe(&out, id, 8);
  out += payload;
  return out;
}

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

absl::StatusOr<std::string> ReadAll(int fd, const std::string& path) {
  std::string data;
  char buf[1 << 16];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("read", path);
    if (n == 0) return data;
    data.append(buf, static_cast<size_t>(n));
  }
}

absl::Status WriteAll(int fd, const std::string& data, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("write", path);
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ReportJournal>> ReportJournal::Open(const std::string& path,
                                                                   std::vector<Entry>* unacked) {
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("open", path);
  absl::StatusOr<std::string> data = ReadAll(fd, path);
  if (!data.ok()) {
    close(fd);
    return data.status();
  }
  std::deque<Live> live;
  uint64_t max_id = 0;
  size_t pos = 0;
  bool damaged = false;
  while (pos < data->size()) {
    if (data->size() - pos < 4 + kBodyHeader) {
      damaged = true;
      break;
    }
    const uint32_t body = static_cast<uint32_t>(GetLe(data->data() + pos, 4));
    if (body < kBodyHeader || body > kMaxBody || data->size() - pos - 4 < body) {
      damaged = true;
      break;
    }
    const uint8_t kind = static_cast<uint8_t>((*data)[pos + 4]);
    const uint64_t id = GetLe(data->data() + pos + 5, 8);
    if (kind == kReport) {
      live.push_back({id, data->substr(pos, 4 + body)});
      max_id = std::max(max_id, id);
    } else if (kind == kAck) {
      while (!live.empty() && live.front().id <= id) live.pop_front();
      max_id = std::max(max_id, id);
    } else {
      damaged = true;
      break;
    }
    pos += 4 + body;
  }
  if (damaged) {
    spdlog::warn("{}: dropping {} bytes that are not whole journal records (a write cut short)",
                 path, data->size() - pos);
  }
  unacked->clear();
  std::deque<Live> parsed;
  for (Live& entry : live) {
    Entry& out = unacked->emplace_back();
    out.id = entry.id;
    const std::string& record = entry.record;
    if (!out.report.ParseFromArray(record.data() + 4 + kBodyHeader,
                                   static_cast<int>(record.size() - 4 - kBodyHeader))) {
      spdlog::warn("{}: dropping journal record {}: not a report", path, entry.id);
      unacked->pop_back();
      continue;
    }
    parsed.push_back(std::move(entry));
  }
  std::unique_ptr<ReportJournal> journal(
      new ReportJournal(path, fd, max_id + 1, std::move(parsed), static_cast<int64_t>(pos)));
  // Starts from a file that holds exactly the live records: no torn tail to append after, and
  // no acknowledged records carried along.
  if (damaged || journal->live_bytes_ != journal->file_bytes_) {
    if (absl::Status s = journal->Compact(); !s.ok()) return s;
  }
  return journal;
}

ReportJournal::ReportJournal(std::string path, int fd, uint64_t next_id, std::deque<Live> live,
                             int64_t file_bytes)
    : path_(std::move(path)),
      fd_(fd),
      next_id_(next_id),
      live_(std::move(live)),
      file_bytes_(file_bytes) {
  for (const Live& entry : live_) live_bytes_ += static_cast<int64_t>(entry.record.size());
}

ReportJournal::~ReportJournal() { close(fd_); }

absl::Status ReportJournal::Write(const std::string& record) {
  absl::Status s = WriteAll(fd_, record, path_);
  struct stat st;
  // A failed write may have left part of the record: the size says where the file ends.
  if (fstat(fd_, &st) == 0) {
    file_bytes_ = st.st_size;
  } else if (s.ok()) {
    file_bytes_ += static_cast<int64_t>(record.size());
  }
  return s;
}

absl::StatusOr<uint64_t> ReportJournal::Append(const trainctl::v1::AgentMessage& report) {
  const uint64_t id = next_id_++;
  std::string record = Record(kReport, id, report.SerializeAsString());
  if (absl::Status s = Write(record); !s.ok()) {
    // Whatever part of it reached the file is dropped as a torn record at the next start; the
    // next write must not follow it, so start over from the live records.
    Compact().IgnoreError();
    return s;
  }
  live_bytes_ += static_cast<int64_t>(record.size());
  live_.push_back({id, std::move(record)});
  return id;
}

absl::Status ReportJournal::AckThrough(uint64_t id) {
  const size_t before = live_.size();
  while (!live_.empty() && live_.front().id <= id) {
    live_bytes_ -= static_cast<int64_t>(live_.front().record.size());
    live_.pop_front();
  }
  if (live_.size() == before) return absl::OkStatus();
  if (live_.empty()) {
    if (ftruncate(fd_, 0) != 0) return Errno("truncate", path_);
    file_bytes_ = 0;
    return absl::OkStatus();
  }
  if (absl::Status s = Write(Record(kAck, id, "")); !s.ok()) return s;
  if (file_bytes_ > kCompactBytes && live_bytes_ * 4 <= file_bytes_) return Compact();
  return absl::OkStatus();
}

absl::Status ReportJournal::Compact() {
  const std::string tmp = path_ + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("open", tmp);
  std::string data;
  data.reserve(static_cast<size_t>(live_bytes_));
  for (const Live& entry : live_) data += entry.record;
  if (absl::Status s = WriteAll(fd, data, tmp); !s.ok()) {
    close(fd);
    unlink(tmp.c_str());
    return s;
  }
  if (rename(tmp.c_str(), path_.c_str()) != 0) {
    absl::Status s = Errno("rename", tmp);
    close(fd);
    unlink(tmp.c_str());
    return s;
  }
  close(fd_);
  fd_ = fd;
  file_bytes_ = static_cast<int64_t>(data.size());
  return absl::OkStatus();
}

}  // namespace trainctl::agent
