#include "scheduler/request_index.h"

#include "absl/strings/str_cat.h"

namespace trainctl::sched {

absl::Status ValidateRequestId(const std::string& id) {
  if (id.size() > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("requestId must be at most 64 characters, got ", id.size()));
  }
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok) {
      return absl::InvalidArgumentError(
          "requestId may hold only letters, digits and . _ : - (a UUID fits)");
    }
  }
  return absl::OkStatus();
}

absl::Status RequestIdTaken(const std::string& request_id, const std::string& job_id) {
  return absl::AlreadyExistsError(absl::StrCat(
      "requestId ", request_id, " already created job ", job_id,
      " with a different spec within the last 24 hours; use a new request id for a new job"));
}

void RequestIndex::Add(const Job& job) {
  if (job.request_id.empty()) return;
  Key key{job.creator, job.request_id};
  auto [it, inserted] = entries_.try_emplace(key);
  if (!inserted) by_time_.erase({it->second.created, key});
  it->second = Entry{job.id, job.request_hash, job.create_time};
  by_time_.insert({job.create_time, std::move(key)});
}

void RequestIndex::Remove(const Job& job) {
  auto it = entries_.find(Key{job.creator, job.request_id});
  if (it == entries_.end() || it->second.job_id != job.id) return;
  by_time_.erase({it->second.created, it->first});
  entries_.erase(it);
}

const RequestIndex::Entry* RequestIndex::Find(const std::string& scope,
                                              const std::string& request_id, absl::Time now) const {
  auto it = entries_.find(Key{scope, request_id});
  if (it == entries_.end() || it->second.created + kWindow <= now) return nullptr;
  return &it->second;
}

void RequestIndex::Expire(absl::Time now) {
  while (!by_time_.empty() && by_time_.begin()->first + kWindow <= now) {
    entries_.erase(by_time_.begin()->second);
    by_time_.erase(by_time_.begin());
  }
}

}  // namespace trainctl::sched
