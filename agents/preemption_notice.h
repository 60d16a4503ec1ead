// The notice file a replica gets before it is preempted, drained or moved for maintenance
// (NoticeReplica): where it lies, what it says, how it is written, and the record that a run's
// notice was delivered.
//
// Layout under the agent's --work-dir (every directory the agent's, mode 0711, so that a
// replica's user can reach its own file by name but list nothing):
//   notices/<job id>/attempt-<n>/<replica>.restart-<r>.json    TRAINCTL_PREEMPTION_NOTICE
// The file is absent until a notice; it then holds one JSON object:
//   {"kind":"preemption","reason":"...","preemptingJob":"j-abc","deadline":"2026-12-04T17:00:00Z",
//    "deadlineUnixMs":1796403600000,"signal":"SIGTERM"}
// and is replaced whole (a temporary file renamed over it), owned by the replica's user, mode
// 0440. It lies outside the replica's working directory, which the replica owns, so that no link
// a replica plants redirects the agent's write; the replica's mount namespace (private /tmp)
// still shows it, since only /tmp, /dev/shm and the agent's scratch root differ there.
//
// Delivery is recorded in the run's directory (run_records.h) as the file `notice`, so the same
// notice again (a reconnect, a scheduler or agent restart) writes nothing and signals nothing.
//
// Owns no state; never signals a process (the launcher does). Thread-safe.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "agents/run_files.h"
#include "trainctl/v1/agent.pb.h"

namespace trainctl::agent {

// The marker file in a run's directory that records its delivered notice (NoticeKey).
inline constexpr char kNoticeRecordFile[] = "notice";

// The run's TRAINCTL_PREEMPTION_NOTICE: <work_dir>/notices/<job>/attempt-<n>/<replica>.restart-
// <r>.json.
std::string NoticePath(const std::string& work_dir, const RunIdParts& run);

// OK when kind is "preemption", "drain" or "maintenance" and the deadline is positive; else
// INVALID_ARGUMENT saying what is wrong.
absl::Status CheckNotice(const trainctl::v1::NoticeReplica& notice);

// The file's JSON (see the file comment), one line with a trailing newline. "signal" is the
// signal's name, "" when notice.signal is 0.
std::string NoticeJson(const trainctl::v1::NoticeReplica& notice);

// What makes two notices of a run the same: their kind and deadline ("preemption 1796403600000").
std::string NoticeKey(const trainctl::v1::NoticeReplica& notice);

// The owner a notice file gets: the replica's user and group.
struct NoticeOwner {
  uid_t uid = 0;
  gid_t gid = 0;
};

// Writes `json` to `path` atomically (path + ".tmp", then renamed over `path`), creating the
// missing directories of notices/ beneath `work_dir` with mode 0711, opening nothing through a
// link. With an `owner`, the file becomes theirs (needs root); its mode is 0440 either way.
// INTERNAL when a step fails.
absl::Status WriteNoticeFile(const std::string& work_dir, const std::string& path,
                             const std::string& json, const std::optional<NoticeOwner>& owner);

// Removes <work_dir>/notices/<job_id> and what it holds, when the job's logs go (ForgetJobs,
// --job-retention). OK when there is none.
absl::Status RemoveJobNotices(const std::string& work_dir, const std::string& job_id);

// Whether the run whose directory is `run_dir` already got the notice with `key`.
bool NoticeDelivered(const std::string& run_dir, const std::string& key);

// Records in `run_dir` that the notice with `key` was delivered (atomically, replacing an older
// record).
absl::Status RecordNoticeDelivered(const std::string& run_dir, const std::string& key);

}  // namespace trainctl::agent
