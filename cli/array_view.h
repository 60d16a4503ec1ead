// How the CLI shows job arrays (JobSpec.array) and their elements: an array's element counts in
// `list`, its "Array:" line in `get` and `describe`, an element's "Element:" line, and the line
// `submit` writes for an array.
//
//   ArrayCountsText(job.array());  // "7 waiting (2 held), 3 running, 10 succeeded"
//   ArrayText(job);                // "20 elements (indices 0-19, at most 3 at once): 7 waiting,
//   ..." ElementText(element);          // "7 of array j-0abc (20 elements)"
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {

// Whether `job` is a job array: it has an array status, or a spec.array and is no element.
bool IsArray(const v1::Job& job);

// The non-zero counts, in the order waiting, queued, pending, running, cancelling, succeeded,
// failed, cancelled: "7 waiting (2 held), 3 running, 10 succeeded"; "" when every count is zero.
std::string ArrayCountsText(const v1::ArrayStatus& status);

// The array's element count: Job.array.count, else the number of spec.array.indices (0 when
// they do not parse).
int32_t ArrayElementCount(const v1::Job& job);

// An array's "Array:" line: "20 elements (indices 0-19, at most 3 at once): 7 waiting, 3 running,
// 10 succeeded"; without a parallelism, "(indices 0-19)". "" for a job that is not an array.
std::string ArrayText(const v1::Job& job);

// The hint under an array's counts: "`trainctl list --array j-0abc` lists its elements"; "" for a
// job that is not an array.
std::string ArrayElementsHint(const v1::Job& job);

// An element's "Element:" line: "7 of array j-0abc (20 elements)"; "" for a job that is not an
// element.
std::string ElementText(const v1::Job& job);

// What `submit` writes (to stderr, after the id on stdout) for an array it created: "submitted
// job array j-0abc (20 elements, at most 3 at once)"; "" for a job that is not an array.
std::string ArraySubmittedLine(const v1::Job& job);

}  // namespace trainctl::cli
