// The REST API's JSON side: HTTP statuses of canonical codes, google.rpc.Status bodies, and
// query and path parameters into request messages.
#include "server/rest/rest_json.h"

#include <catch2/catch.hpp>

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
  CHECK_THAT(std::string(type.message()), Catch::Contains("page_size"));
  CHECK(SetFields({{"states", "JOB_STATE_NOPE"}}, {}, &list).code() ==
        absl::StatusCode::kInvalidArgument);
  v1::ReadLogsRequest logs;
  CHECK(SetFields({{"follow", "true"}}, {"follow"}, &logs).ok());
}

TEST_CASE("a body with an unknown field or a wrong type is refused with the field path") {
  v1::CreateJobRequest req;
  absl::Status unknown = FromJson(R"({"spec": {"nme": "x"}})", "body", &req);
  CHECK(unknown.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(unknown.message()), Catch::Contains("nme"));
  absl::Status type =
      FromJson(R"({"spec": {"workerPools": [{"replicaCount": "x"}]}})", "body", &req);
  CHECK_THAT(std::string(type.message()), Catch::Contains("spec.worker_pools[0].replica_count"));
  CHECK(FromJson("{bad", "body", &req).code() == absl::StatusCode::kInvalidArgument);
  REQUIRE(FromJson(R"({"spec": {"displayName": "x"}, "requestId": "r"})", "body", &req).ok());
  CHECK(req.request_id() == "r");
}

}  // namespace
}  // namespace trainctl::server::rest
