#include "cli/output.h"

#include <catch2/catch.hpp>

#include "common/spec_parse.h"
#include "google/protobuf/util/message_differencer.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {
namespace {

TEST_CASE("Table aligns columns to their widest cell", "[output]") {
  Table table({"ID", "NAME", "STATE"});
  table.AddRow({"j-abcdefghij", "hello", "RUNNING"});
  table.AddRow({"j-2", "a much longer name", "QUEUED"});
  CHECK(table.row_count() == 2);
  CHECK(table.Render() ==
        "ID             NAME                 STATE\n"
        "j-abcdefghij   hello                RUNNING\n"
        "j-2            a much longer name   QUEUED\n");
}

TEST_CASE("Table counts characters, not bytes, and keeps rows on one line", "[output]") {
  Table table({"NAME", "X"});
  table.AddRow({"h\xC3\xA9llo", "1"});  // "héllo": 5 characters, 6 bytes
  table.AddRow({"two\nlines", "2"});
  table.AddRow({"short"});  // a missing cell is empty
  CHECK(table.Render() ==
        "NAME        X\n"
        "h\xC3\xA9llo       1\n"
        "two lines   2\n"
        "short\n");
}

TEST_CASE("Table with only a header renders the header", "[output]") {
  CHECK(Table({"A", "BB"}).Render() == "A   BB\n");
}

TEST_CASE("RenderFields aligns values and skips empty ones", "[output]") {
  CHECK(RenderFields({{"ID", "j-1"}, {"Error", ""}, {"Queue reason", "no capacity"}}) ==
        "ID:            j-1\n"
        "Queue reason:  no capacity\n");
}

TEST_CASE("ParseOutputFormat knows table, json and yaml", "[output]") {
  CHECK(ParseOutputFormat("table").value() == OutputFormat::kTable);
  CHECK(ParseOutputFormat("JSON").value() == OutputFormat::kJson);
  CHECK(ParseOutputFormat("yaml").value() == OutputFormat::kYaml);
  CHECK(ParseOutputFormat("xml").status().message() ==
        "unknown output format \"xml\"; use table, json or yaml");
}

TEST_CASE("MessageToJson prints every field with JSON names and enum names", "[output]") {
  v1::Replica replica;
  replica.set_name("worker-0");
  replica.set_state(v1::REPLICA_STATE_RUNNING);
  replica.set_pid(42);
  std::string json = MessageToJson(replica).value();
  CHECK_THAT(json, Catch::Contains("\"name\": \"worker-0\""));
  CHECK_THAT(json, Catch::Contains("\"state\": \"REPLICA_STATE_RUNNING\""));
  CHECK_THAT(json, Catch::Contains("\"restartCount\": 0"));  // a default, still printed
  CHECK_THAT(json, Catch::Contains("\"pid\": \"42\""));      // int64 is a string in JSON
  CHECK_FALSE(json.find("exitCode") != std::string::npos);   // unset optional field
  CHECK(json.back() == '\n');
}

TEST_CASE("JsonToYaml renders the same content in block style", "[output]") {
  std::string yaml =
      JsonToYaml(R"({"id": "j-1", "count": 3, "ok": true, "pid": "42", "empty": "",)"
                 R"( "flag": "true", "list": ["a", "b"], "none": [], "map": {"k": "v"},)"
                 R"( "nothing": {}})")
          .value();
  CHECK(yaml ==
        "id: j-1\n"
        "count: 3\n"
        "ok: true\n"
        "pid: \"42\"\n"
        "empty: \"\"\n"
        "flag: \"true\"\n"
        "list:\n"
        "  - a\n"
        "  - b\n"
        "none: []\n"
        "map:\n"
        "  k: v\n"
        "nothing: {}\n");
}

TEST_CASE("JsonToYaml output reads back as the same job spec", "[output]") {
  v1::JobSpec spec;
  spec.set_display_name("123");
  spec.set_priority(7);
  auto* pool = spec.add_worker_pools();
  pool->set_name("chief");
  pool->add_command("/bin/sh");
  pool->add_command("-c");
  pool->add_args("echo \"a: b\" # not a comment");
  (*pool->mutable_env())["EMPTY"] = "";
  (*pool->mutable_env())["YES"] = "yes";
  pool->mutable_resources()->set_cpu(0.5);
  pool->mutable_resources()->set_memory_mb(64);
  spec.mutable_scheduling()->mutable_timeout()->set_seconds(90);
  std::string yaml = JsonToYaml(MessageToJson(spec).value()).value();
  absl::StatusOr<v1::JobSpec> back = ParseJobSpec(yaml);
  INFO(yaml);
  REQUIRE(back.ok());
  // Not SerializeAsString: the order of map entries (env) on the wire is unspecified.
  CHECK(google::protobuf::util::MessageDifferencer::Equals(*back, spec));
}

TEST_CASE("DropEmptyColumns drops all-empty columns and fills the others", "[output]") {
  Table table({"TIME", "JOB", "NODE", "REASON"});
  table.AddRow({"t1", "j-1", "", "queued"});
  table.AddRow({"t2", "", "", ""});
  table.DropEmptyColumns({"JOB", "NODE", "MISSING"});
  CHECK(table.Render() ==
        "TIME   JOB   REASON\n"
        "t1     j-1   queued\n"
        "t2     -\n");

  Table empty({"A", "B"});
  empty.DropEmptyColumns({"B"});
  CHECK(empty.Render() == "A\n");
}

TEST_CASE("MessageToFormat renders JSON and YAML, not tables", "[output]") {
  v1::ListNodesResponse response;
  response.add_nodes()->set_name("node-a");
  CHECK_THAT(MessageToFormat(response, OutputFormat::kJson).value(),
             Catch::StartsWith("{\n \"nodes\": [\n  {\n   \"name\": \"node-a\",\n"));
  CHECK_THAT(MessageToFormat(response, OutputFormat::kYaml).value(),
             Catch::StartsWith("nodes:\n  - name: node-a\n"));
  CHECK(MessageToFormat(response, OutputFormat::kTable).status().code() ==
        absl::StatusCode::kInternal);
}

TEST_CASE("IndentLines indents non-empty lines", "[output]") {
  CHECK(IndentLines("a\n\nb\n", 2) == "  a\n\n  b\n");
  CHECK(IndentLines("a", 1) == " a");
  CHECK(IndentLines("", 3).empty());
}

}  // namespace
}  // namespace trainctl::cli
