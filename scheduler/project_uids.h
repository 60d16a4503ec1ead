// ProjectUids: the uid each project's replicas run under on every host, when neither the agent's
// --run-as nor the project quota's runAsUser names a user (agents/run_user.h). trainctld hands
// them out from --replica-uid-range, as systemd's DynamicUser= does for services: each project
// gets the lowest uid of the range that no project holds, at its first submit, and keeps it for
// good (the store keeps it, storage/store.h), so two projects never share one and a project's
// uid is the same number on every host, across restarts and failovers. A uid is never given to
// another project, even after its project has no job left.
//
// A range that shrinks or moves later keeps the uids already given (a project's files are
// owned by it); only new projects get uids of the new range.
//
//   ProjectUids uids(UidRange{65536, 99999});
//   absl::StatusOr<ProjectUids::Allocation> a = uids.Allocate("team-a");  // {65536, true}
//   uids.Find("team-a");                                                 // 65536
//
// Thread-safety: none; owned by the core.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trainctl::sched {

// An inclusive range of uids, "FIRST-LAST" in flags and configs.
struct UidRange {
  uint32_t first = 65536;
  uint32_t last = 99999;

  std::string ToString() const;
  bool Contains(uint32_t uid) const { return uid >= first && uid <= last; }
};

// Parses "FIRST-LAST". INVALID_ARGUMENT naming `what` (the flag or key) unless both are numbers
// with 1000 <= FIRST <= LAST <= 2147483646 (no system ids; uids past 2^31 - 1 break tools that
// keep ids in a signed int) and the range holds neither 65534 (nobody) nor 65535 (-1 as a 16-bit
// id).
absl::StatusOr<UidRange> ParseUidRange(absl::string_view what, absl::string_view text);

class ProjectUids {
 public:
  explicit ProjectUids(UidRange range = {}) : range_(range) {}

  // Replaces every project's uid with the stored ones (Store::Load).
  void Restore(std::map<std::string, uint32_t> uids);

  struct Allocation {
    uint32_t uid = 0;
    // True when this call gave the project its uid: the caller persists it with what it commits.
    bool fresh = false;
  };
  // The project's uid, given now (the lowest free one of the range) when it has none.
  // RESOURCE_EXHAUSTED naming the range and --replica-uid-range when every uid of the range is
  // taken.
  absl::StatusOr<Allocation> Allocate(const std::string& project);

  // The project's uid, if it has one.
  std::optional<uint32_t> Find(const std::string& project) const;
  const std::map<std::string, uint32_t>& all() const { return by_project_; }
  const UidRange& range() const { return range_; }

 private:
  UidRange range_;
  std::map<std::string, uint32_t> by_project_;
  std::set<uint32_t> taken_;
};

}  // namespace trainctl::sched
