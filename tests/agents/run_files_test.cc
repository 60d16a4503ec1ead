#include "agents/run_files.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "agents/log_read.h"
#include "tests/agents/test_util.h"

namespace trainctl::agent {
namespace {

using ::trainctl::agent::testing::TempDir;

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

TEST_CASE("run ids are parsed and checked", "[run_files]") {
  struct Row {
    const char* run_id;
    bool ok;
  };
  const Row rows[] = {
      {"j-abc/1/worker-0/0", true},  {"j-abc/12/chief-0/7", true},
      {"j-abc/1/worker-0", false},   {"j-abc/1/worker-0/0/x", false},
      {"j-abc/x/worker-0/0", false}, {"j-abc/-1/worker-0/0", false},
      {"j-abc/1/../0", false},       {"../1/worker-0/0", false},
      {"j-abc/1/a b/0", false},      {"/1/worker-0/0", false},
      {"j-abc/1/worker-0/", false},  {"", false},
  };
  for (const Row& row : rows) {
    INFO(row.run_id);
    CHECK(ParseRunId(row.run_id).ok() == row.ok);
  }
  absl::StatusOr<RunIdParts> parts = ParseRunId("j-abc/12/chief-0/7");
  REQUIRE(parts.ok());
  CHECK(parts->job_id == "j-abc");
  CHECK(parts->attempt == 12);
  CHECK(parts->replica_name == "chief-0");
  CHECK(parts->restart == 7);
  CHECK(MakeRunId(*parts) == "j-abc/12/chief-0/7");
  CHECK(RunLogPath("/w", *parts) == "/w/logs/j-abc/attempt-12/chief-0.restart-7.log");
  CHECK(RunWorkingDir("/w", *parts) == "/w/jobs/j-abc/chief-0");
}

TEST_CASE("invalid UTF-8 is replaced", "[run_files]") {
  CHECK(SanitizeUtf8("plain") == "plain");
  CHECK(SanitizeUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80") ==
        "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  CHECK(SanitizeUtf8("a\xFF"
                     "b") ==
        "a\xEF\xBF\xBD"
        "b");
  CHECK(SanitizeUtf8("\xC3") == "\xEF\xBF\xBD");                                  // cut sequence
  CHECK(SanitizeUtf8("\xED\xA0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  CHECK(SanitizeUtf8("\xC0\xAF") == "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong
}

TEST_CASE("the output tail keeps the last lines within a byte budget", "[run_files]") {
  TempDir dir;
  std::string path = dir.path() + "/log";
  CHECK(ReadOutputTail(path) == "");  // missing file

  std::string thirty;
  for (int i = 1; i <= 30; ++i) thirty += "line " + std::to_string(i) + "\n";
  WriteFile(path, thirty);
  std::string expected;
  for (int i = 11; i <= 30; ++i) expected += (i > 11 ? "\n" : "") + ("line " + std::to_string(i));
  CHECK(ReadOutputTail(path) == expected);
  CHECK(ReadOutputTail(path, 2) == "line 29\nline 30");

  WriteFile(path, std::string(5000, 'x') + "\nlast\n");
  CHECK(ReadOutputTail(path) == "last");  // the cut first line is dropped
  WriteFile(path, std::string(5000, 'y'));
  CHECK(ReadOutputTail(path) == std::string(4096, 'y'));  // unless it is the only one
  WriteFile(path, "no newline at the end");
  CHECK(ReadOutputTail(path) == "no newline at the end");
}

TEST_CASE("log chunks are read by offset", "[run_files]") {
  TempDir dir;
  std::string path = dir.path() + "/log";
  CHECK(absl::IsNotFound(ReadLogChunk(path, 0, 10).status()));
  WriteFile(path, "0123456789");
  absl::StatusOr<LogChunk> chunk = ReadLogChunk(path, 3, 4);
  REQUIRE(chunk.ok());
  CHECK(chunk->data == "3456");
  CHECK(chunk->file_size == 10);
  CHECK(chunk->next_offset == 7);
  CHECK(ReadLogChunk(path, 8, 100)->data == "89");
  CHECK(ReadLogChunk(path, 20, 100)->data.empty());
  CHECK(absl::IsInvalidArgument(ReadLogChunk(path, -1, 10).status()));
}

TEST_CASE("MakeDirs creates nested directories", "[run_files]") {
  TempDir dir;
  CHECK(MakeDirs(dir.path() + "/a/b/c").ok());
  CHECK(MakeDirs(dir.path() + "/a/b/c").ok());
  WriteFile(dir.path() + "/file", "x");
  CHECK_FALSE(MakeDirs(dir.path() + "/file").ok());
  CHECK_FALSE(MakeDirs(dir.path() + "/file/sub").ok());
}

}  // namespace
}  // namespace trainctl::agent
