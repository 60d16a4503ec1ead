// ReportJournal: unacknowledged reports survive a reopen (the next agent), acknowledged ones do
// not, and a damaged tail or a foreign file never invents a report.
#include "agents/report_journal.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using testing::TempDir;

v1::AgentMessage Exit(const std::string& run_id, int code) {
  v1::AgentMessage m;
  m.mutable_replica_exited()->set_run_id(run_id);
  m.mutable_replica_exited()->set_exit_code(code);
  return m;
}

std::vector<std::string> RunIds(const std::vector<ReportJournal::Entry>& entries) {
  std::vector<std::string> out;
  for (const auto& e : entries) out.push_back(e.report.replica_exited().run_id());
  return out;
}

int64_t FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

TEST_CASE("report journal: unacknowledged reports come back in order after a reopen") {
  TempDir dir;
  const std::string path = dir.path() + "/reports.journal";
  std::vector<ReportJournal::Entry> unacked;
  uint64_t b_id = 0;
  {
    auto journal = ReportJournal::Open(path, &unacked);
    REQUIRE(journal.ok());
    REQUIRE(unacked.empty());
    REQUIRE((*journal)->Append(Exit("a", 1)).ok());
    absl::StatusOr<uint64_t> b = (*journal)->Append(Exit("b", 2));
    REQUIRE(b.ok());
    b_id = *b;
    REQUIRE((*journal)->Append(Exit("c", 3)).ok());
    REQUIRE((*journal)->AckThrough(b_id).ok());  // a and b acknowledged.
    REQUIRE((*journal)->size() == 1);
  }  // The agent process ends without any shutdown step.
  auto journal = ReportJournal::Open(path, &unacked);
  REQUIRE(journal.ok());
  REQUIRE(RunIds(unacked) == std::vector<std::string>{"c"});
  CHECK(unacked[0].report.replica_exited().exit_code() == 3);
  CHECK(unacked[0].id > b_id);
  // New ids keep increasing past the ones loaded.
  absl::StatusOr<uint64_t> d = (*journal)->Append(Exit("d", 4));
  REQUIRE(d.ok());
  CHECK(*d > unacked[0].id);
  // The reopened file holds only the live records.
  REQUIRE((*journal)->AckThrough(unacked[0].id).ok());
  std::vector<ReportJournal::Entry> again;
  journal->reset();
  REQUIRE(ReportJournal::Open(path, &again).ok());
  CHECK(RunIds(again) == std::vector<std::string>{"d"});
}

TEST_CASE("report journal: emptied by the last acknowledgement, compacted when mostly acked") {
  TempDir dir;
  const std::string path = dir.path() + "/reports.journal";
  std::vector<ReportJournal::Entry> unacked;
  auto journal = ReportJournal::Open(path, &unacked);
  REQUIRE(journal.ok());
  absl::StatusOr<uint64_t> id = (*journal)->Append(Exit("a", 0));
  REQUIRE(id.ok());
  CHECK(FileSize(path) > 0);
  REQUIRE((*journal)->AckThrough(*id).ok());
  CHECK(FileSize(path) == 0);

  // Thousands of reports with acknowledgements in between: the file stays bounded.
  REQUIRE((*journal)->Append(Exit("first", 9)).ok());
  const std::string big(2000, 'x');
  for (int i = 0; i < 2000; ++i) {
    v1::AgentMessage m = Exit("r" + std::to_string(i), 0);
    m.mutable_replica_exited()->set_output_tail(big);
    absl::StatusOr<uint64_t> r = (*journal)->Append(m);
    REQUIRE(r.ok());
    // The scheduler acknowledges all but the newest, as a busy stream does.
    REQUIRE((*journal)->AckThrough(*r - 1).ok());
    CHECK((*journal)->size() == 1);
  }
  CHECK(FileSize(path) < 2 * ReportJournal::kCompactBytes);
  journal->reset();
  REQUIRE(ReportJournal::Open(path, &unacked).ok());
  REQUIRE(RunIds(unacked) == std::vector<std::string>{"r1999"});
}

TEST_CASE("report journal: a torn last record and foreign bytes are dropped, never parsed") {
  TempDir dir;
  const std::string path = dir.path() + "/reports.journal";
  std::vector<ReportJournal::Entry> unacked;
  {
    auto journal = ReportJournal::Open(path, &unacked);
    REQUIRE(journal.ok());
    REQUIRE((*journal)->Append(Exit("a", 1)).ok());
    REQUIRE((*journal)->Append(Exit("b", 2)).ok());
  }
  // Cut the last record short, as a full disk would.
  const int64_t size = FileSize(path);
  REQUIRE(truncate(path.c_str(), size - 3) == 0);
  auto journal = ReportJournal::Open(path, &unacked);
  REQUIRE(journal.ok());
  CHECK(RunIds(unacked) == std::vector<std::string>{"a"});
  // Appending after the repair yields whole records again.
  REQUIRE((*journal)->Append(Exit("c", 3)).ok());
  journal->reset();
  REQUIRE(ReportJournal::Open(path, &unacked).ok());
  CHECK(RunIds(unacked) == std::vector<std::string>{"a", "c"});

  std::ofstream(path, std::ios::trunc) << "this is not a journal at all";
  REQUIRE(ReportJournal::Open(path, &unacked).ok());
  CHECK(unacked.empty());
  CHECK(FileSize(path) == 0);
}

TEST_CASE("report journal: an unwritable place is an error naming the file") {
  std::vector<ReportJournal::Entry> unacked;
  auto journal = ReportJournal::Open("/nonexistent-dir/reports.journal", &unacked);
  REQUIRE(!journal.ok());
  CHECK(journal.status().message().find("/nonexistent-dir/reports.journal") != std::string::npos);
}

}  // namespace
}  // namespace trainctl::agent
