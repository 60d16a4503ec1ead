// The REST API's JSON side: HTTP statuses of canonical codes, google.rpc.Status bodies, and
// query and path parameters into request messages, and parse errors in the JSON names.
#include "server/rest/rest_json.h"

#include <catch2/catch.hpp>
#include <vector>

#include "absl/strings/str_cat.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::server::rest {
namespace {

TEST_CASE("canonical codes map to the usual HTTP statuses") {
  CHECK(HttpStatusOf(absl::StatusCode::kOk) == 200);
  CHECK(HttpStatusOf(absl::StatusCode::kInvalidArgument) == 400);
  CHECK(HttpStatusOf(absl::StatusCode::kFailedPrecondition) == 400);
  CHECK(HttpStatusOf(absl::StatusCode::kUnauthenticated) == 401);
  CHECK(HttpStatusOf(absl::StatusCode::kPermissionDenied) == 403);
  CHECK(HttpStatusOf(absl::StatusCode::kNotFound) == 404);
  CHECK(HttpStatusOf(absl::StatusCode::kAlreadyExists) == 409);
  CHECK(HttpStatusOf(absl::StatusCode::kResourceExhausted) == 429);
  CHECK(HttpStatusOf(absl::StatusCode::kInternal) == 500);
  CHECK(HttpStatusOf(absl::StatusCode::kUnavailable) == 503);
}

TEST_CASE("an error body is google.rpc.Status JSON with its message escaped") {
  CHECK(StatusJson(absl::NotFoundError("job \"j-x\" not found\n")) ==
        R"({"code":5,"message":"job \"j-x\" not found\n","details":[]})");
}

TEST_CASE("parameters set fields by their JSON names, nested, repeated and typed") {
  v1::ListJobsRequest list;
  REQUIRE(SetFields({{"pageSize", "10"},
                     {"states", "JOB_STATE_RUNNING"},
                     {"states", "JOB_STATE_QUEUED,JOB_STATE_FAILED"},
                     {"project", "vision"}},
                    {}, &list)
              .ok());
  CHECK(list.page_size() == 10);
  CHECK(list.states_size() == 3);
  CHECK(list.states(2) == v1::JOB_STATE_FAILED);
  CHECK(list.project() == "vision");

  v1::SetQuotaRequest quota;
  REQUIRE(SetFields({{"quota.project", "vision"}}, {}, &quota).ok());
  CHECK(quota.quota().project() == "vision");

  v1::ListEventsRequest events;
  REQUIRE(SetFields({{"since", "2026-01-02T03:04:05Z"}, {"job_id", "j-1"}}, {}, &events).ok());
  CHECK(events.since().seconds() > 0);
  CHECK(events.job_id() == "j-1");
}

TEST_CASE("bad parameters are INVALID_ARGUMENT naming them") {
  v1::ListJobsRequest list;
  absl::Status unknown = SetFields({{"bogus", "1"}}, {"follow"}, &list);
  CHECK(unknown.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(unknown.message()), Catch::Contains("unknown parameter \"bogus\""));
  CHECK_THAT(std::string(unknown.message()), Catch::Contains("pageSize"));
  CHECK_THAT(std::string(unknown.message()), Catch::Contains("follow"));
  absl::Status twice = SetFields({{"project", "a"}, {"project", "b"}}, {}, &list);
  CHECK_THAT(std::string(twice.message()), Catch::Contains("\"project\" is given twice"));
  absl::Status type = SetFields({{"pageSize", "ten"}}, {}, &list);
  CHECK(type.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(type.message()),
             Catch::Equals("bad parameter: pageSize: invalid value \"ten\" for type int32"));
  CHECK(SetFields({{"states", "JOB_STATE_NOPE"}}, {}, &list).code() ==
        absl::StatusCode::kInvalidArgument);
  v1::ReadLogsRequest logs;
  CHECK(SetFields({{"follow", "true"}}, {"follow"}, &logs).ok());
}

TEST_CASE("a body with an unknown field or a wrong type is refused with the field path") {
  v1::CreateJobRequest req;
  absl::Status unknown = FromJson(R"({"spec": {"nme": "x"}})", "body", &req);
  CHECK(unknown.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(
      std::string(unknown.message()),
      Catch::Equals("body is not a valid CreateJobRequest: spec: JobSpec has no field \"nme\""));
  absl::Status type =
      FromJson(R"({"spec": {"workerPools": [{"replicaCount": "x"}]}})", "body", &req);
  CHECK_THAT(
      std::string(type.message()),
      Catch::Equals("body is not a valid CreateJobRequest: spec.workerPools[0].replicaCount: "
                    "invalid value \"x\" for type int32"));
  CHECK(FromJson("{bad", "body", &req).code() == absl::StatusCode::kInvalidArgument);
  REQUIRE(FromJson(R"({"spec": {"displayName": "x"}, "requestId": "r"})", "body", &req).ok());
  CHECK(req.request_id() == "r");
}

TEST_CASE("a body's errors name the fields as the JSON the user wrote") {
  struct Row {
    const char* body;
    const char* says;
  };
  for (const Row& row : std::vector<Row>{
           {R"({"nme": 1})", "CreateJobRequest has no field \"nme\""},
           {R"({"spec": {"workerPools": [{"elastic": {"bogus": 1}}]}})",
            "spec.workerPools[0].elastic: Elastic has no field \"bogus\""},
           {R"({"spec": {"displayName": 5}})", "spec.displayName: invalid value 5 for type string"},
           {R"({"spec": {"workerPools": [{}, {"nodeAffinity": [{"values": [1]}]}]}})",
            "spec.workerPools[1].nodeAffinity[0].values[0]: invalid value 1 for type string"},
           // A map is named, not protobuf's count of its entries ("env[0].value").
           {R"({"spec": {"workerPools": [{"env": {"A": 5}}]}})",
            "spec.workerPools[0].env: invalid value 5 for type string"},
           {R"({"spec": {"scheduling": {"restartPolicy": "NOPE"}}})",
            "spec.scheduling.restartPolicy: invalid value \"NOPE\" for type "
            "trainctl.v1.RestartPolicy; one of RESTART_POLICY_UNSPECIFIED, "},
           {R"({"spec": {"scheduling": {"stopGracePeriod": "abc"}}})",
            "spec.scheduling.stopGracePeriod: Illegal duration format; duration must end with 's' "
            "(google.protobuf.Duration)"},
       }) {
    INFO(row.body);
    v1::CreateJobRequest req;
    absl::Status s = FromJson(row.body, "body", &req);
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(s.message()),
               Catch::Contains(absl::StrCat("body is not a valid CreateJobRequest: ", row.says)));
  }
  // What it does not recognise is kept as protobuf wrote it.
  CHECK(InJsonNames(v1::JobSpec::descriptor(), "(no_such.path): x") == "(no_such.path): x");
  CHECK(InJsonNames(v1::JobSpec::descriptor(), "Unexpected token.") == "Unexpected token.");
}

}  // namespace
}  // namespace trainctl::server::rest
