// What `trainctl submit --workdir DIR` does before the job is created: scans DIR
// (cli/workdir_scan.h), packs it into a temporary file (cli/workdir_pack.h), and uploads it
// through WorkdirService.UploadWorkdir unless the project holds those bytes already; the job's
// spec then names the digest (JobSpec.workdir).
//
//   absl::StatusOr<std::string> digest = UploadWorkdir(client, "team-a", "./src", 100 << 20);
//   spec.set_workdir(*digest);
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "cli/client.h"

namespace trainctl::cli {

// The digest of DIR's archive, held by trainctld for `project` once this returns. `max_bytes`:
// the most the files may hold (the CLI's --max-workdir-mb; trainctld checks its own).
absl::StatusOr<std::string> UploadWorkdir(Client& client, const std::string& project,
                                          const std::string& dir, int64_t max_bytes);

}  // namespace trainctl::cli
