// Idempotent creates (AIP-155): a request id returns the job its first create made, within 24
// hours and across a restart of the core; the same id with another spec is refused.
#include "scheduler/request_index.h"

#include <catch2/catch.hpp>

#include "model/model_proto.h"
#include "tests/scheduler/core_fixture.h"
#include "tests/scheduler/test_util.h"

namespace trainctl::sched {
namespace {

using namespace testing;

constexpr int64_t kDayMs = 24 * 3600 * 1000;

absl::StatusOr<v1::Job> SubmitWith(Fixture& f, const v1::JobSpec& spec, const std::string& creator,
                                   const CreateRequestKey& key, Effects* fx) {
  return AsView(f.core.SubmitJob(spec, FromMs(f.now), fx, creator, key));
}

TEST_CASE("a create retried with its request id returns the first job and changes nothing") {
  Fixture f;
  Effects fx;
  absl::StatusOr<v1::Job> first = SubmitWith(f, Spec(1), "", {"req-1", "hash-a"}, &fx);
  REQUIRE(first.ok());
  CHECK(first->request_id() == "req-1");
  CHECK(first->request_hash() == "hash-a");
  f.now += 1000;
  Effects again;
  absl::StatusOr<v1::Job> second = SubmitWith(f, Spec(1), "", {"req-1", "hash-a"}, &again);
  REQUIRE(second.ok());
  CHECK(second->id() == first->id());
  CHECK(again.jobs.empty());
  CHECK(again.events.empty());
  CHECK(f.core.jobs().size() == 1);
}

TEST_CASE("a request id with another spec is ALREADY_EXISTS naming the first job") {
  Fixture f;
  Effects fx;
  absl::StatusOr<v1::Job> first = SubmitWith(f, Spec(1), "", {"req-1", "hash-a"}, &fx);
  REQUIRE(first.ok());
  absl::StatusOr<v1::Job> other = SubmitWith(f, Spec(2), "", {"req-1", "hash-b"}, &fx);
  REQUIRE(other.status().code() == absl::StatusCode::kAlreadyExists);
  CHECK_THAT(std::string(other.status().message()),
             Catch::Contains("requestId req-1 already created job " + first->id()));
  CHECK(f.core.jobs().size() == 1);
}

TEST_CASE("request ids are scoped to their caller and last 24 hours") {
  Fixture f;
  Effects fx;
  absl::StatusOr<v1::Job> alice = SubmitWith(f, Spec(1), "alice", {"req-1", "h"}, &fx);
  absl::StatusOr<v1::Job> bob = SubmitWith(f, Spec(1), "bob", {"req-1", "h"}, &fx);
  REQUIRE(alice.ok());
  REQUIRE(bob.ok());
  CHECK(alice->id() != bob->id());
  // Without a request id nothing is deduplicated.
  absl::StatusOr<v1::Job> plain1 = SubmitWith(f, Spec(1), "alice", {}, &fx);
  absl::StatusOr<v1::Job> plain2 = SubmitWith(f, Spec(1), "alice", {}, &fx);
  REQUIRE(plain1.ok());
  REQUIRE(plain2.ok());
  CHECK(plain1->id() != plain2->id());

  f.now += kDayMs - 1;
  CHECK(SubmitWith(f, Spec(1), "alice", {"req-1", "h"}, &fx)->id() == alice->id());
  f.now += 1;
  absl::StatusOr<v1::Job> later = SubmitWith(f, Spec(1), "alice", {"req-1", "h"}, &fx);
  REQUIRE(later.ok());
  CHECK(later->id() != alice->id());
  // Tick forgets expired ids.
  f.now += kDayMs;
  f.core.Tick(FromMs(f.now), &fx);
  absl::StatusOr<v1::Job> fresh = SubmitWith(f, Spec(2), "bob", {"req-1", "other"}, &fx);
  CHECK(fresh.ok());
}

TEST_CASE("request ids survive a restart of the core") {
  Fixture f;
  Effects fx;
  absl::StatusOr<v1::Job> first = SubmitWith(f, Spec(1), "", {"req-1", "hash-a"}, &fx);
  REQUIRE(first.ok());
  Core restored(TestOptions(43));
  restored.Restore({*JobFromProto(f.Job(first->id()))}, {*f.core.FindNode("node-a")}, {});
  Effects again;
  absl::StatusOr<v1::Job> retried =
      AsView(restored.SubmitJob(Spec(1), FromMs(f.now + 5000), &again, "", {"req-1", "hash-a"}));
  REQUIRE(retried.ok());
  CHECK(retried->id() == first->id());
  CHECK(AsView(restored.SubmitJob(Spec(1), FromMs(f.now), &again, "", {"req-1", "hash-b"}))
            .status()
            .code() == absl::StatusCode::kAlreadyExists);
}

TEST_CASE("a request id is at most 64 letters, digits, dots, underscores, colons and dashes") {
  CHECK(ValidateRequestId("").ok());
  CHECK(ValidateRequestId("3f2b6c1e-8d4a-4c2e-9b1a-7e5d2c9f0a11").ok());
  CHECK(ValidateRequestId(std::string(64, 'a')).ok());
  absl::Status long_id = ValidateRequestId(std::string(65, 'a'));
  CHECK(long_id.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(long_id.message()), Catch::Contains("at most 64 characters, got 65"));
  CHECK(ValidateRequestId("a b").code() == absl::StatusCode::kInvalidArgument);
  CHECK(ValidateRequestId("a/b").code() == absl::StatusCode::kInvalidArgument);
  Fixture f;
  Effects fx;
  CHECK(f.core.SubmitJob(Spec(1), FromMs(f.now), &fx, "", {"bad id", "h"}).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(f.core.jobs().empty());
}

}  // namespace
}  // namespace trainctl::sched
