// Sets every field of a protobuf message, by reflection, for tests that must notice a field
// added later: a round trip through storage, a conversion, a copy. Such a test fills the message
// here and compares what comes back (Differences, below, uses MessageDifferencer); a new field
// is filled without anyone editing the test, and a code path that drops it fails.
//
//   v1::Job job;
//   FillEveryField(&job, {"trainctl.v1.Job.queue_status"});  // computed when read, not stored
//   ... store `job`, load it back as `loaded` ...
//   CHECK(Differences(job, loaded) == "");  // on failure Catch prints the differing fields
//
// Values, chosen so that a field swapped with another or cut short shows:
// - every scalar gets a value of its own from one counter: integers distinct and non-zero
//   (int64 above 2^32, to catch a 32-bit column), floating point with a fraction, strings and
//   bytes named after the field (bytes with a NUL and a 0xff byte), bools true;
// - an enum gets a non-zero value it declares (zero when it declares no other);
// - a nested message is filled recursively; google.protobuf.Timestamp and Duration get valid
//   values: seconds from 1700000000 (November 2023) on, or from 1 on, and nanos within
//   1..999999999 that are not a whole millisecond (so a store that keeps milliseconds shows);
// - a repeated field gets 2 elements, a map 2 entries with different keys;
// - a proto3 `optional` field is set (so has_x() is true);
// - of a oneof, only its first field is set;
// - a message field whose type is already being filled further up (a recursive type) is left
//   unset, so the fill ends.
//
// Thread-safety: both functions are pure functions of their arguments.
#pragma once

#include <google/protobuf/message.h>

#include <set>
#include <string>

namespace trainctl::testing {

// Sets every field of `m` (and of its nested messages) as described above, except the fields
// whose full name ("trainctl.v1.Job.queue_status") is in `excluded_full_names`: those are left
// as they are. Fields already set are overwritten, and repeated fields end with exactly 2
// elements.
// REQUIRES: m != nullptr.
void FillEveryField(google::protobuf::Message* m,
                    const std::set<std::string>& excluded_full_names = {});

// What differs between `expected` and `actual`, one line per field path, as
// google::protobuf::util::MessageDifferencer reports it ("modified: attempts[0].decision:
// \"RETRY_JOB\" -> \"\""); "" when they are equal. Messages of different types differ.
std::string Differences(const google::protobuf::Message& expected,
                        const google::protobuf::Message& actual);

}  // namespace trainctl::testing
