#include "server/project_data.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/time_util.h"
#include "server/secret_box.h"

namespace trainctl::server {
namespace {

constexpr char kKeyCheckName[] = "project-secret-key-check";
constexpr char kKeyCheckBinding[] = "trainctl/key-check";
constexpr char kKeyCheckValue[] = "the key project secrets are sealed with";

}  // namespace

absl::StatusOr<std::unique_ptr<ProjectSecrets>> OpenProjectSecrets(
    storage::Store& store, const std::string& key_file, bool create,
    std::vector<storage::SecretRow> rows) {
  struct stat st;
  if (!create && stat(key_file.c_str(), &st) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("--secret-key-file ", key_file,
                     " does not exist: make it once with `(umask 077; head -c "
                     "32 /dev/urandom > ",
                     key_file, ")` and copy it to every trainctld of the database"));
  }
  absl::StatusOr<SecretKey> key = LoadOrCreateSecretKey(key_file);
  if (!key.ok()) return key.status();
  const std::string candidate = absl::BytesToHexString(key->Seal(kKeyCheckBinding, kKeyCheckValue));
  absl::StatusOr<std::string> held = store.AdoptSecret(kKeyCheckName, candidate);
  if (!held.ok()) return held.status();
  if (!key->Open(kKeyCheckBinding, absl::HexStringToBytes(*held)).ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the key in ", key_file,
        " is not the one the database's project secrets were sealed with: restore the original "
        "file (with PostgreSQL, every trainctld must read the same --secret-key-file)"));
  }
  auto secrets = std::make_unique<ProjectSecrets>(*std::move(key));
  secrets->Restore(std::move(rows));
  return secrets;
}

WorkdirSweeper::WorkdirSweeper(storage::WorkdirStore* workdirs, absl::Duration interval,
                               absl::Duration grace)
    : workdirs_(workdirs), interval_(interval), grace_(grace), thread_([this] { Run(); }) {}

WorkdirSweeper::~WorkdirSweeper() {
  stop_.Notify();
  thread_.join();
}

void WorkdirSweeper::Run() {
  do {
    absl::StatusOr<std::vector<storage::WorkdirInfo>> swept =
        workdirs_->Sweep(WallNowMs(), absl::ToInt64Milliseconds(grace_));
    if (!swept.ok()) {
      spdlog::warn("deleting unused working directories: {}", swept.status().ToString());
      continue;
    }
    for (const storage::WorkdirInfo& w : *swept) {
      spdlog::info("deleted the working directory {} of project {} ({} bytes): no job uses it",
                   w.digest, w.project, w.size);
    }
  } while (!stop_.WaitForNotificationWithTimeout(interval_));
}

}  // namespace trainctl::server
