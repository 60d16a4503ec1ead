// The working directories of jobs on this node (`trainctl submit --workdir`): each job's is
// fetched from trainctld once (AgentService.FetchWorkdir, apart from the control stream), its
// SHA-256 checked against the digest the launch names, and unpacked read-only
// (agents/workdir_unpack.h); every replica of the job here, every restart and every attempt,
// starts in the same tree.
//
// Layout under `root` (the agent's <work dir>/workdirs, mode 0711):
//   <job id>/          the unpacked tree, owned by the agent's user, group the replicas' (0750)
//   <job id>.digest    the digest it was unpacked from, written once the tree is in place
//   <job id>.tar.tmp   an archive being fetched (removed when done or failed)
// A tree without its .digest file (an agent that died while unpacking) is removed and fetched
// again; so is one of another digest. What a death mid-fetch or mid-unpack left (an archive, an
// unpack's temporary tree) is removed at the first Prepare.
//
// Errors, as the launch reports them: the fetch failed (UNAVAILABLE, a host error: retried as
// an internal error), the bytes do not hash to the digest (INTERNAL, likewise), the archive
// cannot be unpacked safely (INVALID_ARGUMENT, the user's error).
//
//   WorkdirCache cache(work_dir + "/workdirs", fetch);
//   absl::StatusOr<std::string> dir = cache.Prepare("j-1", "sha256:...", gid);
//   cache.Forget("j-1");   // the job's logs went: its tree goes too
//
// Thread-safe: calls run one at a time.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace trainctl::agent {

class WorkdirCache {
 public:
  // Streams the archive of `job_id`'s workdir `digest` to `sink`, in order.
  using Fetch =
      std::function<absl::Status(const std::string& job_id, const std::string& digest,
                                 const std::function<absl::Status(absl::string_view)>& sink)>;

  WorkdirCache(std::string root, Fetch fetch) : root_(std::move(root)), fetch_(std::move(fetch)) {}

  // The unpacked tree of `job_id`'s workdir `digest`, fetched and unpacked first when the node
  // does not hold it; `group` (when the replicas run as another user) may read it.
  absl::StatusOr<std::string> Prepare(const std::string& job_id, const std::string& digest,
                                      std::optional<gid_t> group) ABSL_LOCKS_EXCLUDED(mu_);
  // Removes the job's tree, if any.
  absl::Status Forget(const std::string& job_id) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Status FetchArchive(const std::string& job_id, const std::string& digest,
                            const std::string& path) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Removes what an agent that died mid-fetch or mid-unpack left (*.tar.tmp, *.tmp-* trees).
  void RemoveLeftovers() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string root_;
  const Fetch fetch_;
  absl::Mutex mu_;
  bool swept_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace trainctl::agent
