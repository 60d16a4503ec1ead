// The notice file (preemption_notice.h): its path, its JSON, its atomic write and mode, and the
// record that makes a repeated notice do nothing.
#include "agents/preemption_notice.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::ReadFile;
using ::trainctl::agent::testing::TempDir;

trainctl::v1::NoticeReplica PreemptionNotice() {
  trainctl::v1::NoticeReplica notice;
  notice.set_run_id("j-test/2/worker-1/0");
  notice.set_kind("preemption");
  notice.set_reason("job j-big (priority 10) of project team-a needs 8 gpus");
  notice.set_preempting_job("j-big");
  notice.set_deadline_ms(1'796'403'600'000);  // 2026-12-04T17:00:00Z
  notice.set_signal(SIGTERM);
  return notice;
}

TEST_CASE("a run's notice file lies beside its logs, outside its working dir", "[notice]") {
  RunIdParts run{"j-test", 2, "worker-1", 3};
  CHECK(NoticePath("/var/lib/trainctl", run) ==
        "/var/lib/trainctl/notices/j-test/attempt-2/worker-1.restart-3.json");
}

TEST_CASE("the notice's JSON holds every field of the contract", "[notice]") {
  CHECK(NoticeJson(PreemptionNotice()) ==
        "{\"kind\":\"preemption\",\"reason\":\"job j-big (priority 10) of project team-a needs 8 "
        "gpus\",\"preemptingJob\":\"j-big\",\"deadline\":\"2026-12-04T17:00:00Z\","
        "\"deadlineUnixMs\":1796403600000,\"signal\":\"SIGTERM\"}\n");

  // Quotes, backslashes and control characters are escaped; no signal is "".
  trainctl::v1::NoticeReplica drain = PreemptionNotice();
  drain.set_kind("drain");
  drain.set_reason("node \"gpu-7\" drained\\by\nops\x01");
  drain.clear_preempting_job();
  drain.set_signal(0);
  google::protobuf::Struct doc;
  REQUIRE(google::protobuf::util::JsonStringToMessage(NoticeJson(drain), &doc).ok());
  CHECK(doc.fields().at("kind").string_value() == "drain");
  CHECK(doc.fields().at("reason").string_value() == "node \"gpu-7\" drained\\by\nops\x01");
  CHECK(doc.fields().at("preemptingJob").string_value().empty());
  CHECK(doc.fields().at("signal").string_value().empty());
  CHECK(doc.fields().at("deadlineUnixMs").number_value() == 1'796'403'600'000.0);
}

TEST_CASE("a notice must name a known kind and a deadline", "[notice]") {
  CHECK(CheckNotice(PreemptionNotice()).ok());
  for (const char* kind : {"drain", "maintenance"}) {
    trainctl::v1::NoticeReplica n = PreemptionNotice();
    n.set_kind(kind);
    CHECK(CheckNotice(n).ok());
  }
  trainctl::v1::NoticeReplica bad = PreemptionNotice();
  bad.set_kind("eviction");
  CHECK(CheckNotice(bad).message() ==
        "notice kind must be preemption, drain or maintenance, got \"eviction\"");
  bad = PreemptionNotice();
  bad.set_deadline_ms(0);
  CHECK(CheckNotice(bad).message() == "notice deadline must be a positive Unix time, got 0");
}

TEST_CASE("the notice file is written whole, read-only, in directories of mode 0711", "[notice]") {
  TempDir dir;
  const std::string path = NoticePath(dir.path(), {"j-test", 2, "worker-1", 0});
  const std::string json = NoticeJson(PreemptionNotice());
  REQUIRE(WriteNoticeFile(dir.path(), path, json, std::nullopt).ok());
  CHECK(ReadFile(path) == json);
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0440);
  for (const std::string& d : {dir.path() + "/notices", dir.path() + "/notices/j-test",
                               dir.path() + "/notices/j-test/attempt-2"}) {
    INFO(d);
    REQUIRE(stat(d.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0711);
  }
  CHECK(access((path + ".tmp").c_str(), F_OK) != 0);  // renamed away

  // Replaced whole by a later notice, over the read-only file.
  const std::string later = NoticeJson([] {
    trainctl::v1::NoticeReplica n = PreemptionNotice();
    n.set_kind("maintenance");
    return n;
  }());
  REQUIRE(WriteNoticeFile(dir.path(), path, later, std::nullopt).ok());
  CHECK(ReadFile(path) == later);

  // Outside the work dir, or through a file where a directory belongs: refused.
  CHECK_FALSE(WriteNoticeFile(dir.path(), "/elsewhere/x.json", json, std::nullopt).ok());
  REQUIRE(symlink("/tmp", (dir.path() + "/notices/j-link").c_str()) == 0);
  CHECK_FALSE(
      WriteNoticeFile(dir.path(), dir.path() + "/notices/j-link/attempt-1/x.json", json, {}).ok());
}

TEST_CASE("a job's notices are removed with its logs", "[notice]") {
  TempDir dir;
  const std::string path = NoticePath(dir.path(), {"j-test", 1, "worker-0", 0});
  REQUIRE(WriteNoticeFile(dir.path(), path, "{}\n", std::nullopt).ok());
  REQUIRE(RemoveJobNotices(dir.path(), "j-test").ok());
  CHECK(access((dir.path() + "/notices/j-test").c_str(), F_OK) != 0);
  CHECK(access((dir.path() + "/notices").c_str(), F_OK) == 0);
  CHECK(RemoveJobNotices(dir.path(), "j-none").ok());
  CHECK_FALSE(RemoveJobNotices(dir.path(), "..").ok());
}

TEST_CASE("a delivered notice is recorded by its kind and deadline", "[notice]") {
  TempDir dir;
  const trainctl::v1::NoticeReplica notice = PreemptionNotice();
  CHECK(NoticeKey(notice) == "preemption 1796403600000");
  CHECK_FALSE(NoticeDelivered(dir.path(), NoticeKey(notice)));
  REQUIRE(RecordNoticeDelivered(dir.path(), NoticeKey(notice)).ok());
  CHECK(NoticeDelivered(dir.path(), NoticeKey(notice)));
  // Another reason, the same notice; another deadline, a new one.
  trainctl::v1::NoticeReplica again = notice;
  again.set_reason("said differently after a scheduler restart");
  CHECK(NoticeDelivered(dir.path(), NoticeKey(again)));
  trainctl::v1::NoticeReplica sooner = notice;
  sooner.set_deadline_ms(notice.deadline_ms() - 60'000);
  CHECK_FALSE(NoticeDelivered(dir.path(), NoticeKey(sooner)));
}

}  // namespace
}  // namespace trainctl::agent
