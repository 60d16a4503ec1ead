// Tests of the JSON and journal log sinks and of the fields a LogScope attaches to log lines
// (common/log_sinks.h, common/log_context.h), through real spdlog loggers whose sinks capture
// what they would write or send.
#include "common/log_sinks.h"

#include <catch2/catch.hpp>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "common/log_context.h"
#include "common/logging.h"
#include "spdlog/spdlog.h"

namespace trainctl {
namespace {

// A logger named `name` whose JSON lines land in `out`.
std::shared_ptr<spdlog::logger> JsonLogger(const std::string& name, std::string* out) {
  auto sink = std::make_shared<JsonLogSink>(
      [out](absl::string_view line) { out->append(line.data(), line.size()); });
  auto logger = std::make_shared<spdlog::logger>(name, sink);
  logger->set_level(spdlog::level::trace);
  return logger;
}

// A logger whose journal entries land in `out`, one field list per line.
std::shared_ptr<spdlog::logger> JournalLogger(const std::string& name,
                                              std::vector<std::vector<std::string>>* out) {
  auto sink = std::make_shared<JournalLogSink>(
      [out](const std::vector<std::string>& fields) { out->push_back(fields); });
  auto logger = std::make_shared<spdlog::logger>(name, sink);
  logger->set_level(spdlog::level::trace);
  return logger;
}

TEST_CASE("json log lines carry time, level, logger and message", "[logging]") {
  std::string out;
  JsonLogger("trainctld", &out)->warn("node {} is \"LOST\"\n\ttab \x01 caf\xC3\xA9 \xFF", "gpu-1");
  const std::regex want(
      R"re(\{"time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z","level":"warning","logger":"trainctld",)re"
      R"re("msg":"node gpu-1 is \\"LOST\\"\\n\\ttab \\u0001 café \xEF\xBF\xBD"\}\n)re");
  CHECK(std::regex_match(out, want));
}

TEST_CASE("a log scope attaches job, node and replica to json lines", "[logging]") {
  std::string out;
  auto logger = JsonLogger("trainctld", &out);
  {
    LogScope job("j-1");
    {
      LogScope replica("", "gpu-2", "worker-0");
      logger->info("exited");
    }
    logger->info("job only");
  }
  logger->info("none");
  std::vector<std::string> lines;
  for (size_t start = 0, end; (end = out.find('\n', start)) != std::string::npos; start = end + 1) {
    lines.push_back(out.substr(start, end - start));
  }
  REQUIRE(lines.size() == 3);
  CHECK_THAT(
      lines[0],
      Catch::EndsWith(R"("msg":"exited","job_id":"j-1","node":"gpu-2","replica":"worker-0"})"));
  CHECK_THAT(lines[1], Catch::EndsWith(R"("msg":"job only","job_id":"j-1"})"));
  CHECK_THAT(lines[2], Catch::EndsWith(R"("msg":"none"})"));
}

TEST_CASE("a run id's scope names its job and replica, fields stay on their thread", "[logging]") {
  std::string out;
  auto logger = JsonLogger("trainctl-agent", &out);
  {
    LogScope scope = LogScope::ForRun("j-7/2/worker-3/1", "gpu-9");
    logger->info("started");
    std::thread other([&] { logger->info("elsewhere"); });
    other.join();
  }
  {
    LogScope scope = LogScope::ForRun("not a run id");
    logger->info("odd");
  }
  CHECK(out.find(R"("msg":"started","job_id":"j-7","node":"gpu-9","replica":"worker-3"})") !=
        std::string::npos);
  CHECK(out.find(R"("msg":"elsewhere"})") != std::string::npos);
  CHECK(out.find(R"("msg":"odd"})") != std::string::npos);
}

TEST_CASE("journal entries carry MESSAGE, PRIORITY, SYSLOG_IDENTIFIER and the scope's fields",
          "[logging]") {
  std::vector<std::vector<std::string>> sent;
  auto logger = JournalLogger("trainctl-agent", &sent);
  {
    LogScope scope("j-3", "gpu-1", "worker-1");
    logger->error("run failed");
  }
  logger->debug("quiet");
  logger->critical("down");
  REQUIRE(sent.size() == 3);
  CHECK(sent[0] == std::vector<std::string>{"MESSAGE=run failed", "PRIORITY=3",
                                            "SYSLOG_IDENTIFIER=trainctl-agent", "JOB_ID=j-3",
                                            "NODE=gpu-1", "REPLICA=worker-1"});
  CHECK(sent[1] == std::vector<std::string>{"MESSAGE=quiet", "PRIORITY=7",
                                            "SYSLOG_IDENTIFIER=trainctl-agent"});
  CHECK(sent[2][1] == "PRIORITY=2");
}

TEST_CASE("the process node fills in where no scope names one", "[logging]") {
  std::vector<std::vector<std::string>> sent;
  auto logger = JournalLogger("trainctl-agent", &sent);
  SetProcessLogNode("gpu-5");
  logger->info("registered");
  {
    LogScope scope("j-1", "gpu-6");
    logger->info("other node");
  }
  SetProcessLogNode("");
  logger->info("no node");
  REQUIRE(sent.size() == 3);
  CHECK(sent[0].back() == "NODE=gpu-5");
  CHECK(sent[1].back() == "NODE=gpu-6");
  CHECK(sent[2].size() == 3);
}

TEST_CASE("stderr is the journal only when JOURNAL_STREAM names its device and inode",
          "[logging]") {
  CHECK(IsJournalStream("8:12345", 8, 12345));
  CHECK_FALSE(IsJournalStream(nullptr, 8, 12345));
  CHECK_FALSE(IsJournalStream("8:12346", 8, 12345));
  CHECK_FALSE(IsJournalStream("9:12345", 8, 12345));
  CHECK_FALSE(IsJournalStream("8:12345x", 8, 12345));
  CHECK_FALSE(IsJournalStream("", 8, 12345));
}

TEST_CASE("SetupLogging names the flag of a bad level or format", "[logging]") {
  absl::Status format = SetupLogging("log-sinks-test-1", "info", "xml");
  CHECK(absl::IsInvalidArgument(format));
  CHECK_THAT(std::string(format.message()), Catch::Contains("--log-format"));
  CHECK_THAT(std::string(SetupLogging("log-sinks-test-2", "loud", "json").message()),
             Catch::Contains("--log-level"));
}

}  // namespace
}  // namespace trainctl
