// The trainctl binary's queue operations against the fake server (fake_server.h): hold, release,
// update and requeue send their requests and print one line (or the job with -o), update refuses
// a command line without a change, and submit's --depends-on and --dependency-policy reach the
// spec.
#include <catch2/catch.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/spec_parse.h"
#include "tests/cli/fake_server.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {
namespace {

std::string SubmitLong(const std::string& flags = "") {
  Result submit = Fake().Run("submit -f examples/long.yaml" + flags);
  INFO(submit.err);
  REQUIRE(submit.exit_status == 0);
  return submit.out.substr(0, submit.out.size() - 1);
}

TEST_CASE("hold, release and requeue send the job's id and print what happened", "[binary]") {
  const std::string id = SubmitLong();
  Result hold = Fake().Run(absl::StrCat("hold ", id, " --reason 'dataset not ready'"));
  INFO(hold.err);
  CHECK(hold.exit_status == 0);
  CHECK(hold.out == absl::StrCat("job ", id, " held: dataset not ready\n"));
  v1::HoldJobRequest held;
  REQUIRE(Fake().LastQueueRequest(&held));
  CHECK(held.id() == id);
  CHECK(held.reason() == "dataset not ready");

  Result get = Fake().Run("get " + id);
  CHECK_THAT(get.out, Catch::Contains("Held:"));
  CHECK_THAT(get.out, Catch::Contains("by alice: dataset not ready"));

  Result release = Fake().Run("release " + id);
  CHECK(release.exit_status == 0);
  CHECK(release.out == absl::StrCat("job ", id, " released: it may be admitted again\n"));
  // The server's refusal comes through as it is.
  Result again = Fake().Run("release " + id);
  CHECK(again.exit_status == 2);
  CHECK(again.err == absl::StrCat("error: FAILED_PRECONDITION: job ", id, " is not held\n"));

  Result requeue = Fake().Run(absl::StrCat("requeue ", id, " --reason maintenance"));
  CHECK(requeue.exit_status == 0);
  CHECK(requeue.out == absl::StrCat("job ", id,
                                    " requeued: maintenance; its replicas checkpoint and stop, "
                                    "and it waits in the queue again\n"));
  v1::RequeueJobRequest requeued;
  REQUIRE(Fake().LastQueueRequest(&requeued));
  CHECK(requeued.reason() == "maintenance");

  Result json = Fake().Run(absl::StrCat("hold ", id, " -o json"));
  REQUIRE(json.exit_status == 0);
  v1::Job job;
  REQUIRE(ParseYamlToMessage(json.out, &job).ok());
  CHECK(job.id() == id);
  CHECK(job.held());

  CHECK(Fake().Run("hold j-unknown").exit_status == 2);
  Result no_id = Fake().Run("hold");
  CHECK(no_id.exit_status == 2);
}

TEST_CASE("update sends only the changes given, and needs one", "[binary]") {
  const std::string id = SubmitLong();
  Result update = Fake().Run(absl::StrCat("update ", id,
                                          " --priority 5 --queue-timeout 2h --label team=vision "
                                          "--label stage=eval --remove-label old"));
  INFO(update.err);
  CHECK(update.exit_status == 0);
  CHECK(update.out == absl::StrCat("job ", id,
                                   " updated: priority 5, queueTimeout 2h, labels "
                                   "stage=eval,team=vision, removed labels old\n"));
  v1::UpdateJobRequest sent;
  REQUIRE(Fake().LastQueueRequest(&sent));
  CHECK(sent.id() == id);
  CHECK(sent.priority() == 5);
  CHECK(sent.queue_timeout().seconds() == 7200);
  CHECK(sent.labels().at("team") == "vision");
  REQUIRE(sent.remove_labels_size() == 1);
  CHECK(sent.remove_labels(0) == "old");

  Result nothing = Fake().Run("update " + id);
  CHECK(nothing.exit_status == 2);
  CHECK_THAT(nothing.err, Catch::Contains("update needs at least one change"));
  Result bad = Fake().Run(absl::StrCat("update ", id, " --priority 5000"));
  CHECK(bad.exit_status == 2);
  CHECK_THAT(bad.err, Catch::Contains("--priority must be a whole number from -1000 to 1000"));
}

TEST_CASE("submit --depends-on and --dependency-policy reach the spec", "[binary]") {
  const std::string id = SubmitLong(
      " --depends-on afterok:j-1,afterany:j-2 --depends-on afternotok:j-3 "
      "--dependency-policy keep-waiting");
  Result get = Fake().Run(absl::StrCat("get ", id, " -o json"));
  REQUIRE(get.exit_status == 0);
  v1::Job job;
  REQUIRE(ParseYamlToMessage(get.out, &job).ok());
  REQUIRE(job.spec().depends_on_size() == 3);
  CHECK(job.spec().depends_on(0).job() == "j-1");
  CHECK(job.spec().depends_on(0).condition() == v1::DEPENDENCY_CONDITION_SUCCEEDED);
  CHECK(job.spec().depends_on(1).condition() == v1::DEPENDENCY_CONDITION_ENDED);
  CHECK(job.spec().depends_on(2).condition() == v1::DEPENDENCY_CONDITION_FAILED);
  CHECK(job.spec().dependency_policy() == v1::DEPENDENCY_POLICY_KEEP_WAITING);

  Result bad = Fake().Run("submit -f examples/long.yaml --depends-on after:j-1");
  CHECK(bad.exit_status == 2);
  CHECK_THAT(bad.err, Catch::Contains("afterok"));
  CHECK_THAT(bad.err, Catch::Contains("afternotok"));
  CHECK_THAT(bad.err, Catch::Contains("afterany"));

  for (const char* command : {"hold", "release", "update", "requeue"}) {
    INFO(command);
    Result help = Fake().Run(absl::StrCat(command, " --help"));
    CHECK(help.exit_status == 0);
    CHECK_THAT(help.out, Catch::Contains(absl::StrCat("trainctl ", command)));
  }
}

}  // namespace
}  // namespace trainctl::cli
