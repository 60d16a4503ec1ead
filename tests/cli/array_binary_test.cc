// Job arrays through the trainctl binary against the fake server (fake_server.h): submit --array
// reaches the spec (and a bad one sends nothing), cancel, hold, release and delete of a range of
// elements make one call per element in index order and go on past a failing one, list --array
// sends the array's id, and get shows an array's counts and an element's array.
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/spec_parse.h"
#include "tests/cli/fake_server.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {
namespace {

// Submits examples/long.yaml as an array with `flags` and returns its id.
std::string SubmitArray(const std::string& flags) {
  Result submit = Fake().Run("submit -f examples/long.yaml " + flags);
  INFO(submit.err);
  REQUIRE(submit.exit_status == 0);
  return submit.out.substr(0, submit.out.size() - 1);
}

// The fake's calls that change jobs since `before` of them.
std::vector<std::string> CallsSince(size_t before) {
  const std::vector<std::string> calls = Fake().JobCalls();
  return std::vector<std::string>(calls.begin() + static_cast<long>(before), calls.end());
}

v1::Job GetJson(const std::string& id) {
  Result get = Fake().Run(absl::StrCat("get ", id, " -o json"));
  INFO(get.err);
  REQUIRE(get.exit_status == 0);
  v1::Job job;
  REQUIRE(ParseYamlToMessage(get.out, &job).ok());
  return job;
}

TEST_CASE("submit --array sets the spec's array and says it submitted an array",
          "[binary][array]") {
  Result submit = Fake().Run("submit -f examples/long.yaml --array 0-19%3");
  INFO(submit.err);
  REQUIRE(submit.exit_status == 0);
  // The id alone on stdout, as for any job; the rest on stderr.
  CHECK_THAT(submit.out, Catch::Matches("j-[0-9]+\n"));
  const std::string id = submit.out.substr(0, submit.out.size() - 1);
  CHECK(submit.err ==
        absl::StrCat("submitted job array ", id, " (20 elements, at most 3 at once)\n"));
  const v1::Job job = GetJson(id);
  CHECK(job.spec().array().indices() == "0-19");
  CHECK(job.spec().array().parallelism() == 3);

  // Lists and steps, without a parallelism.
  const v1::Job stepped = GetJson(SubmitArray("--array 0-9:2,15"));
  CHECK(stepped.spec().array().indices() == "0-9:2,15");
  CHECK(stepped.spec().array().parallelism() == 0);

  // --array replaces the array the spec file has.
  Result replaced = Fake().Run("submit -f - --array 1,5,9",
                               "workerPools: [{name: chief, replicaCount: 1}]\n"
                               "array: {indices: '0-99', parallelism: 8}\n");
  INFO(replaced.err);
  REQUIRE(replaced.exit_status == 0);
  const v1::Job three = GetJson(replaced.out.substr(0, replaced.out.size() - 1));
  CHECK(three.spec().array().indices() == "1,5,9");
  CHECK(three.spec().array().parallelism() == 0);
  CHECK_THAT(replaced.err, Catch::EndsWith("(3 elements)\n"));

  // The spec file's array alone makes an array too.
  Result from_file = Fake().Run("submit -f -",
                                "workerPools: [{name: chief, replicaCount: 1}]\n"
                                "array: {indices: '0-3', parallelism: 2}\n");
  REQUIRE(from_file.exit_status == 0);
  CHECK_THAT(from_file.err, Catch::EndsWith("(4 elements, at most 2 at once)\n"));

  // A job that is no array prints nothing more.
  Result plain = Fake().Run("submit -f examples/long.yaml");
  REQUIRE(plain.exit_status == 0);
  CHECK(plain.err.empty());
}

TEST_CASE("a bad submit --array fails naming the problem and sends nothing", "[binary][array]") {
  const size_t before = Fake().JobCalls().size();
  for (const auto& [flag, message] : std::vector<std::pair<std::string, std::string>>{
           {"5-3", "--array: array indices: '5-3' in '5-3' is not an index"},
           {"0-9%0", "--array: the parallelism after '%' in '0-9%0' must be 1..100000"},
           {"0-9:0", "has a step that is not a whole number of at least 1"},
           {"''", "array indices are required"}}) {
    INFO(flag);
    Result bad = Fake().Run("submit -f examples/long.yaml --array " + flag);
    CHECK(bad.exit_status == 2);
    CHECK(bad.out.empty());
    CHECK_THAT(bad.err, Catch::StartsWith("error: INVALID_ARGUMENT: "));
    CHECK_THAT(bad.err, Catch::Contains(message));
  }
  CHECK(CallsSince(before).empty());
}

TEST_CASE("submit and list --help show --array", "[binary][array]") {
  Result submit = Fake().Run("submit --help");
  CHECK(submit.exit_status == 0);
  CHECK_THAT(submit.out, Catch::Contains("--array INDICES[%N]"));
  Result list = Fake().Run("list --help");
  CHECK_THAT(list.out, Catch::Contains("--array ID"));
  for (const char* command : {"cancel", "hold", "release", "delete"}) {
    INFO(command);
    CHECK_THAT(Fake().Run(absl::StrCat(command, " --help")).out, Catch::Contains("ARRAY-[3-5,9]"));
  }
}

TEST_CASE("cancel of a range calls once per element in order and goes on past a failure",
          "[binary][array]") {
  // Elements 0-3 and 5: j-N-4 is none of them.
  const std::string id = SubmitArray("--array 0-3,5%2");
  const size_t before = Fake().JobCalls().size();
  Result cancel = Fake().Run(absl::StrCat("cancel '", id, "-[5,3-4]'"));
  CHECK(cancel.exit_status == 2);
  CHECK(cancel.out == absl::StrCat(id, "-3 CANCELLED\n", id, "-5 CANCELLED\n"));
  CHECK(cancel.err == absl::StrCat("error: ", id, "-4: NOT_FOUND: job ", id, "-4 not found\n"));
  CHECK(CallsSince(before) == std::vector<std::string>{absl::StrCat("CancelJob ", id, "-3"),
                                                       absl::StrCat("CancelJob ", id, "-4"),
                                                       absl::StrCat("CancelJob ", id, "-5")});
  CHECK(GetJson(id + "-3").state() == v1::JOB_STATE_CANCELLED);
  CHECK(GetJson(id + "-0").state() == v1::JOB_STATE_QUEUED);

  // All of them there: exit 0. One element alone goes as one id.
  Result ok = Fake().Run(absl::StrCat("cancel '", id, "-[0-1]'"));
  CHECK(ok.exit_status == 0);
  CHECK(ok.out == absl::StrCat(id, "-0 CANCELLED\n", id, "-1 CANCELLED\n"));
  CHECK(ok.err.empty());
  Result one = Fake().Run(absl::StrCat("cancel ", id, "-2"));
  CHECK(one.exit_status == 0);
  CHECK(one.out == absl::StrCat(id, "-2 CANCELLED\n"));
}

TEST_CASE("a malformed range is a usage error before any call", "[binary][array]") {
  const size_t before = Fake().JobCalls().size();
  for (const char* command : {"cancel", "hold", "release", "delete"}) {
    INFO(command);
    Result bad = Fake().Run(absl::StrCat(command, " 'j-x-[5-3]'"));
    CHECK(bad.exit_status == 2);
    CHECK(bad.out.empty());
    CHECK(bad.err ==
          "error: INVALID_ARGUMENT: element range j-x-[5-3]: array indices: '5-3' in '5-3' is "
          "not an index, a range a-b with a <= b, or a-b:step\n");
  }
  CHECK(CallsSince(before).empty());
}

TEST_CASE("hold and release of a range act on each element and report the ones refused",
          "[binary][array]") {
  const std::string id = SubmitArray("--array 5-7");
  const size_t before = Fake().JobCalls().size();
  Result hold = Fake().Run(absl::StrCat("hold '", id, "-[5,7]' --reason 'dataset not ready'"));
  INFO(hold.err);
  CHECK(hold.exit_status == 0);
  CHECK(hold.out == absl::StrCat("job ", id, "-5 held: dataset not ready\njob ", id,
                                 "-7 held: dataset not ready\n"));
  Result release = Fake().Run(absl::StrCat("release '", id, "-[5-7]'"));
  CHECK(release.exit_status == 2);
  CHECK(release.out == absl::StrCat("job ", id, "-5 released: it may be admitted again\njob ", id,
                                    "-7 released: it may be admitted again\n"));
  CHECK(release.err ==
        absl::StrCat("error: ", id, "-6: FAILED_PRECONDITION: job ", id, "-6 is not held\n"));
  CHECK(CallsSince(before) == std::vector<std::string>{
                                  absl::StrCat("HoldJob ", id, "-5"),
                                  absl::StrCat("HoldJob ", id, "-7"),
                                  absl::StrCat("ReleaseJob ", id, "-5"),
                                  absl::StrCat("ReleaseJob ", id, "-6"),
                                  absl::StrCat("ReleaseJob ", id, "-7"),
                              });

  // -o yaml prints each element's job as its own document.
  Result yaml = Fake().Run(absl::StrCat("hold '", id, "-[6-7]' -o yaml"));
  CHECK(yaml.exit_status == 0);
  CHECK_THAT(yaml.out, Catch::StartsWith("id: " + id + "-6\n"));
  CHECK_THAT(yaml.out, Catch::Contains("\n---\nid: " + id + "-7\n"));
}

TEST_CASE("delete of a range deletes the elements that ended", "[binary][array]") {
  const std::string id = SubmitArray("--array 0-2");
  REQUIRE(Fake().Run(absl::StrCat("cancel '", id, "-[0,2]'")).exit_status == 0);
  Result del = Fake().Run(absl::StrCat("delete '", id, "-[0-2]'"));
  CHECK(del.exit_status == 2);
  CHECK(del.out == absl::StrCat(id, "-0 deleted\n", id, "-2 deleted\n"));
  CHECK_THAT(del.err, Catch::StartsWith(absl::StrCat("error: ", id, "-1: FAILED_PRECONDITION: ")));
  CHECK(Fake().Run(absl::StrCat("get ", id, "-0")).exit_status == 2);
  CHECK(Fake().Run(absl::StrCat("get ", id, "-1")).exit_status == 0);
}

TEST_CASE("list --array sends the array's id and lists its elements", "[binary][array]") {
  const std::string id = SubmitArray("--array 0-2%1");
  Result list = Fake().Run(absl::StrCat("list --array ", id));
  INFO(list.err);
  CHECK(list.exit_status == 0);
  CHECK(Fake().LastListRequest().array() == id);
  CHECK_THAT(list.out, Catch::Contains(id + "-0 "));
  CHECK_THAT(list.out, Catch::Contains(id + "-2 "));

  // Without --array: the array is one row with its counts, its elements left out.
  Result all = Fake().Run("list --limit 1000");
  CHECK(Fake().LastListRequest().array().empty());
  CHECK_THAT(all.out, Catch::Contains("ELEMENTS"));
  CHECK_THAT(all.out, Catch::Contains("3 waiting"));
  CHECK_FALSE(absl::StrContains(all.out, id + "-0 "));
}

TEST_CASE("get shows an array's counts and an element's array", "[binary][array]") {
  const std::string id = SubmitArray("--array 0-3,5%2");
  Result array = Fake().Run("get " + id);
  INFO(array.err);
  CHECK(array.exit_status == 0);
  CHECK_THAT(
      array.out,
      Catch::Contains("Array:     5 elements (indices 0-3,5, at most 2 at once): 5 waiting\n"));
  CHECK_THAT(array.out, Catch::Contains(absl::StrCat("`trainctl list --array ", id, "`")));
  Result element = Fake().Run(absl::StrCat("describe ", id, "-5"));
  CHECK_THAT(element.out, Catch::Contains(absl::StrCat("5 of array ", id, " (5 elements)\n")));
  // -o json prints the job as the server sent it.
  const v1::Job json = GetJson(id);
  CHECK(json.array().count() == 5);
  CHECK(json.array().waiting() == 5);
}

}  // namespace
}  // namespace trainctl::cli
