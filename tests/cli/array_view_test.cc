// Job arrays in the CLI's pure helpers: how `list`, `get` and `describe` show an array's counts
// and an element's array (cli/array_view.h, cli/job_view.h, cli/describe_view.h), and how cancel,
// hold, release and delete expand a range of elements (cli/element_range.h).
#include "cli/array_view.h"

#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "cli/commands.h"
#include "cli/describe_view.h"
#include "cli/element_range.h"
#include "cli/job_view.h"
#include "common/time_util.h"
#include "tests/cli/view_clock.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {
namespace {

// j-arr: 20 elements 0-19, at most 3 at once: 7 waiting (2 of them held), 3 running, 10
// succeeded.
v1::Job ArrayJob() {
  v1::Job job;
  job.set_id("j-arr");
  job.set_display_name("sweep");
  job.set_project("team-a");
  job.set_state(v1::JOB_STATE_RUNNING);
  *job.mutable_create_time() = MsToTimestamp(kNowMs - 5 * kMinuteMs);
  job.mutable_spec()->mutable_array()->set_indices("0-19");
  job.mutable_spec()->mutable_array()->set_parallelism(3);
  v1::ArrayStatus* a = job.mutable_array();
  a->set_count(20);
  a->set_waiting(7);
  a->set_held(2);
  a->set_running(3);
  a->set_succeeded(10);
  a->set_started_indices("0-12");
  a->set_held_indices("18-19");
  return job;
}

v1::Job ElementJob() {
  v1::Job job;
  job.set_id("j-arr-7");
  job.set_display_name("sweep-7");
  job.set_project("team-a");
  job.set_state(v1::JOB_STATE_RUNNING);
  *job.mutable_create_time() = MsToTimestamp(kNowMs - 2 * kMinuteMs);
  job.mutable_element()->set_array("j-arr");
  job.mutable_element()->set_index(7);
  job.mutable_element()->set_count(20);
  v1::Replica* r = job.add_replicas();
  r->set_name("chief-0");
  r->set_state(v1::REPLICA_STATE_RUNNING);
  return job;
}

TEST_CASE("ArrayCountsText shows the non-zero counts in state order", "[array_view]") {
  v1::ArrayStatus status;
  CHECK(ArrayCountsText(status).empty());
  status.set_count(20);
  status.set_cancelled(1);
  status.set_succeeded(10);
  status.set_running(3);
  status.set_waiting(6);
  CHECK(ArrayCountsText(status) == "6 waiting, 3 running, 10 succeeded, 1 cancelled");
  status.set_held(2);
  status.set_queued(1);
  status.set_pending(2);
  status.set_cancelling(4);
  status.set_failed(5);
  CHECK(ArrayCountsText(status) ==
        "6 waiting (2 held), 1 queued, 2 pending, 3 running, 4 cancelling, 10 succeeded, "
        "5 failed, 1 cancelled");
}

TEST_CASE("ArrayText and ElementText describe an array and an element", "[array_view]") {
  const v1::Job array = ArrayJob();
  CHECK(IsArray(array));
  CHECK(ArrayText(array) ==
        "20 elements (indices 0-19, at most 3 at once): 7 waiting (2 held), 3 running, "
        "10 succeeded");
  CHECK(ArrayElementsHint(array) == "`trainctl list --array j-arr` lists its elements");
  CHECK(ElementText(array).empty());

  // Without a parallelism or a status (as submitted): the count comes from the indices.
  v1::Job submitted;
  submitted.set_id("j-9");
  submitted.mutable_spec()->mutable_array()->set_indices("1,5,9");
  CHECK(ArrayText(submitted) == "3 elements (indices 1,5,9)");
  CHECK(ArraySubmittedLine(submitted) == "submitted job array j-9 (3 elements)");
  submitted.mutable_spec()->mutable_array()->set_parallelism(2);
  CHECK(ArraySubmittedLine(submitted) == "submitted job array j-9 (3 elements, at most 2 at once)");
  CHECK(ArraySubmittedLine(array) == "submitted job array j-arr (20 elements, at most 3 at once)");

  v1::Job element = ElementJob();
  CHECK_FALSE(IsArray(element));
  // An element whose spec still names the array's indices is no array either.
  element.mutable_spec()->mutable_array()->set_indices("0-19");
  CHECK_FALSE(IsArray(element));
  element.mutable_spec()->clear_array();
  CHECK(ArrayText(element).empty());
  CHECK(ArrayElementsHint(element).empty());
  CHECK(ArraySubmittedLine(element).empty());
  CHECK(ElementText(element) == "7 of array j-arr (20 elements)");
}

TEST_CASE("RenderJobList shows an array's counts and no replicas", "[array_view]") {
  v1::Job array = ArrayJob();
  const v1::Job element = ElementJob();
  CHECK(RenderJobList({array, element}, kNowMs) ==
        "ID        NAME      PROJECT   STATE     AGE   REPLICAS   ELEMENTS\n"
        "j-arr     sweep     team-a    RUNNING   5m    -          7 waiting (2 held), 3 running, "
        "10 succeeded\n"
        "j-arr-7   sweep-7   team-a    RUNNING   2m    1/1        -\n");
  // Without an array among the jobs, the table is as it always was.
  CHECK(RenderJobList({element}, kNowMs) ==
        "ID        NAME      PROJECT   STATE     AGE   REPLICAS\n"
        "j-arr-7   sweep-7   team-a    RUNNING   2m    1/1\n");
}

TEST_CASE("get and describe show an array's counts, its held and cancelled indices",
          "[array_view]") {
  v1::Job array = ArrayJob();
  array.mutable_array()->set_cancelled(1);
  array.mutable_array()->set_cancelled_indices("17");
  array.mutable_array()->set_waiting(6);
  const std::string summary = RenderJobSummary(array, kNowMs);
  CHECK_THAT(summary, Catch::Contains("State:                   RUNNING\n"
                                      "Array:                   20 elements (indices 0-19, at most "
                                      "3 at once): 6 waiting (2 held), 3 running, 10 succeeded, "
                                      "1 cancelled\n"
                                      "Held elements:           18-19\n"
                                      "Cancelled before start:  17\n"
                                      "Elements:                `trainctl list --array j-arr` "
                                      "lists its elements\n"));
  CHECK_THAT(RenderJobDescription(array, kNowMs),
             Catch::Contains("Array:                   20 elements (indices 0-19"));
  CHECK_THAT(RenderJobDetails(array, kNowMs),
             Catch::Contains("Elements:                `trainctl list --array j-arr`"));

  // Nothing held or cancelled before it started: no lines for them.
  array = ArrayJob();
  array.mutable_array()->clear_held_indices();
  const std::string plain = RenderJobSummary(array, kNowMs);
  CHECK_FALSE(absl::StrContains(plain, "Held elements"));
  CHECK_FALSE(absl::StrContains(plain, "Cancelled before start"));
  CHECK_THAT(plain, Catch::Contains("Array:     20 elements"));
}

TEST_CASE("get and describe show an element's array", "[array_view]") {
  const v1::Job element = ElementJob();
  CHECK_THAT(RenderJobSummary(element, kNowMs),
             Catch::Contains("State:     RUNNING\nElement:   7 of array j-arr (20 elements)\n"));
  CHECK_THAT(RenderJobDescription(element, kNowMs),
             Catch::Contains("Element:        7 of array j-arr (20 elements)\n"));
  // A job that is neither shows neither line.
  v1::Job job = ElementJob();
  job.clear_element();
  const std::string plain = RenderJobDescription(job, kNowMs);
  CHECK_FALSE(absl::StrContains(plain, "Element"));
  CHECK_FALSE(absl::StrContains(plain, "Array"));
}

TEST_CASE("-o json and yaml print an array's and an element's fields as they are", "[array_view]") {
  absl::StatusOr<std::string> json = FormatJob(ArrayJob(), OutputFormat::kJson, kNowMs);
  REQUIRE(json.ok());
  CHECK_THAT(*json, Catch::Contains("\"heldIndices\": \"18-19\""));
  CHECK_THAT(*json, Catch::Contains("\"parallelism\": 3"));
  CHECK_FALSE(absl::StrContains(*json, "lists its elements"));
  absl::StatusOr<std::string> yaml = FormatJobList({ElementJob()}, OutputFormat::kYaml, kNowMs);
  REQUIRE(yaml.ok());
  CHECK_THAT(*yaml, Catch::Contains("array: j-arr"));
}

TEST_CASE("ExpandJobIds expands a range of elements in index order", "[element_range]") {
  CHECK(*ExpandJobIds("j-arr") == std::vector<std::string>{"j-arr"});
  CHECK(*ExpandJobIds("j-arr-7") == std::vector<std::string>{"j-arr-7"});
  CHECK(*ExpandJobIds("j-arr-[9,3-5]") ==
        std::vector<std::string>{"j-arr-3", "j-arr-4", "j-arr-5", "j-arr-9"});
  absl::StatusOr<std::vector<std::string>> bad = ExpandJobIds("j-x-[5-3]");
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(bad.status().message() ==
        "element range j-x-[5-3]: array indices: '5-3' in '5-3' is not an index, a range a-b "
        "with a <= b, or a-b:step");
}

TEST_CASE("ForEachJobId calls once per element and goes on past a failing one", "[element_range]") {
  std::vector<std::string> calls;
  auto one = [&calls](const std::string& id) -> absl::StatusOr<int> {
    calls.push_back(id);
    if (id == "j-arr-4") return absl::FailedPreconditionError("job j-arr-4 is RUNNING");
    return kExitOk;
  };
  std::ostringstream err;
  absl::StatusOr<int> result = ForEachJobId("j-arr-[3-5]", one, err);
  REQUIRE(result.ok());
  CHECK(*result == kExitError);
  CHECK(calls == std::vector<std::string>{"j-arr-3", "j-arr-4", "j-arr-5"});
  CHECK(err.str() == "error: j-arr-4: FAILED_PRECONDITION: job j-arr-4 is RUNNING\n");

  // Every element done: OK.
  calls.clear();
  std::ostringstream quiet;
  CHECK(*ForEachJobId("j-arr-[5,9]", one, quiet) == kExitOk);
  CHECK(calls == std::vector<std::string>{"j-arr-5", "j-arr-9"});
  CHECK(quiet.str().empty());

  // One id: its error comes back as it is, for main() to print.
  calls.clear();
  absl::StatusOr<int> single = ForEachJobId("j-arr-4", one, quiet);
  CHECK(single.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(calls == std::vector<std::string>{"j-arr-4"});

  // A malformed range calls nothing.
  calls.clear();
  CHECK(ForEachJobId("j-arr-[5-3]", one, quiet).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(calls.empty());
}

TEST_CASE("ForEachJobId stops a range when trainctld cannot be reached", "[element_range]") {
  int calls = 0;
  auto unreachable = [&calls](const std::string&) -> absl::StatusOr<int> {
    ++calls;
    return absl::UnavailableError("cannot reach the trainctl server at 127.0.0.1:1");
  };
  std::ostringstream err;
  CHECK(*ForEachJobId("j-arr-[0-9]", unreachable, err) == kExitError);
  CHECK(calls == 1);
  CHECK(err.str() ==
        "error: j-arr-0: UNAVAILABLE: cannot reach the trainctl server at 127.0.0.1:1\n"
        "error: 9 elements not tried (j-arr-1 to j-arr-9) as trainctld cannot be reached\n");
}

}  // namespace
}  // namespace trainctl::cli
