// The agent's --maintenance-file: a JSON file the host's tooling writes when a vendor announces
// maintenance, read into the window the agent reports to the scheduler (Register and
// Heartbeat.maintenance, agent.proto), so that no operator needs to run `trainctl node
// maintenance`.
//
//   {"start": "2026-12-01T02:00:00Z", "duration": "2h", "reason": "BIOS update"}
//
// "duration" is a duration like 90m or 2h (or a number of seconds); all three keys are required.
// An absent or empty file means no window. A file that is not valid is logged (once per change)
// and leaves the last report standing.
//
//   MaintenanceFile file(path);
//   *reg.mutable_maintenance() = file.Current();                 // Register
//   file.PollInto(message.mutable_heartbeat());                   // each heartbeat
//
// Thread-safety: none; the agent calls it under its own lock.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "trainctl/v1/agent.pb.h"

namespace trainctl::agent {

// The report the file's text describes; empty text (or only whitespace): no window.
// INVALID_ARGUMENT naming the key and what to write.
absl::StatusOr<v1::MaintenanceReport> ParseMaintenanceFile(const std::string& text);

class MaintenanceFile {
 public:
  explicit MaintenanceFile(std::string path) : path_(std::move(path)) {}

  // Reads the file again; the report when it differs from the one last returned by Poll or
  // Current, else nullopt.
  std::optional<v1::MaintenanceReport> Poll();
  // Poll into heartbeat->maintenance, when it changed.
  void PollInto(v1::Heartbeat* heartbeat) {
    if (std::optional<v1::MaintenanceReport> changed = Poll()) {
      *heartbeat->mutable_maintenance() = *std::move(changed);
    }
  }
  // Reads the file again and returns what it says now (the last valid report when it is not
  // valid).
  v1::MaintenanceReport Current();

 private:
  // Reads and parses the file into current_; logs a file that is not valid once per content.
  void Read();

  const std::string path_;
  v1::MaintenanceReport current_;
  // The serialized report last returned, and the text last found not valid.
  std::string sent_;
  bool sent_once_ = false;
  std::string bad_text_;
};

}  // namespace trainctl::agent
