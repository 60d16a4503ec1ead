// Training steps read from a replica's output: a job's scheduling.progressPattern, a regular
// expression (RE2 syntax: linear time, whatever the pattern or the output) with a group named
// `step`, is matched against each new line of the run's log; the last match of a pass is the
// replica's step, reported like a step from its progress file (progress_watch.h). For programs
// that print "step 1200" and report nothing else.
//
//   std::shared_ptr<const RE2> pattern = CompileStepPattern(R"(step (?P<step>\d+))");
//   int64_t offset = 0;
//   std::optional<int64_t> step = ScanForStep(log_path, *pattern, &offset);  // each pass
//
// Thread-safe: no state; a compiled pattern may be shared.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace re2 {
class RE2;
}  // namespace re2

namespace trainctl::agent {

// The most of a log one pass reads: past it, only its last part (a replica that prints faster
// than that loses nothing but the older steps of the pass).
inline constexpr int64_t kMaxStepScanBytes = 1 << 20;

// The compiled pattern; null when `pattern` is empty, does not compile or has no group `step`
// (the scheduler refuses such a spec).
std::shared_ptr<const re2::RE2> CompileStepPattern(const std::string& pattern);

// The step of the last whole line of `text` the pattern matches (its group `step`, a whole
// number of at most 18 digits); nullopt when none does.
std::optional<int64_t> LastStepIn(absl::string_view text, const re2::RE2& pattern);

// Reads the log at `log_path` from `*offset` to its last complete line, at most
// kMaxStepScanBytes of it, moves `*offset` past what it read, and returns LastStepIn of it.
// nullopt (the offset unchanged) when the file cannot be read or holds no new line.
std::optional<int64_t> ScanForStep(const std::string& log_path, const re2::RE2& pattern,
                                   int64_t* offset);

}  // namespace trainctl::agent
