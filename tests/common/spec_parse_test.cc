#include "common/spec_parse.h"

#include <google/protobuf/util/message_differencer.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"

namespace trainctl {
namespace {

using google::protobuf::util::MessageDifferencer;

constexpr char kFullYaml[] = R"(# A chief and two workers.
displayName: resnet
project: vision
priority: 5
checkpointDir: /ckpt/resnet
labels:
  team: perception
  tier: "1"
scheduling:
  stopGracePeriod: 30s
  timeout: 1h30m
workerPools:
  - name: chief
    replicaCount: 1
    command: [/bin/sh, -c]
    args: ["echo $RANK"]
    env:
      FOO: 1
      BAR: true
    resources:
      cpu: 0.5
      memoryMb: 512
      gpus: 1
  - name: worker
    replicaCount: 2
    command:
      - /bin/sleep
      - "2"
)";

constexpr char kFullJson[] = R"({
	"displayName": "resnet",
	"project": "vision",
	"priority": 5,
	"checkpointDir": "/ckpt/resnet",
	"labels": {"team": "perception", "tier": "1"},
	"scheduling": {"stopGracePeriod": "30s", "timeout": "5400s"},
	"workerPools": [
		{"name": "chief", "replicaCount": 1, "command": ["/bin/sh", "-c"],
		 "args": ["echo $RANK"], "env": {"FOO": "1", "BAR": "true"},
		 "resources": {"cpu": 0.5, "memoryMb": "512", "gpus": 1}},
		{"name": "worker", "replicaCount": 2, "command": ["/bin/sleep", "2"]}
	]
})";

std::string ErrorOf(absl::string_view text) {
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec(text);
  REQUIRE_FALSE(spec.ok());
  CHECK(spec.status().code() == absl::StatusCode::kInvalidArgument);
  return std::string(spec.status().message());
}

TEST_CASE("ParseJobSpec reads the preemption fields of scheduling", "[spec_parse]") {
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec(R"(
displayName: preemptible
scheduling:
  preemptible: false
  minRuntime: 10m
  preemptionSignal: SIGUSR1
  preemption_grace_period: 2m
workerPools:
  - name: chief
    replicaCount: 1
    command: [train.py]
)");
  REQUIRE(spec.ok());
  const v1::Scheduling& s = spec->scheduling();
  CHECK(s.has_preemptible());
  CHECK_FALSE(s.preemptible());
  CHECK(DurationToMs(s.min_runtime()) == 600'000);
  CHECK(s.preemption_signal() == "SIGUSR1");
  CHECK(DurationToMs(s.preemption_grace_period()) == 120'000);
  CHECK_THAT(ErrorOf("scheduling: {preemptible: maybe}"),
             Catch::StartsWith("scheduling.preemptible: expected true or false, got"));
}

TEST_CASE("ParseJobSpec reads a full YAML spec", "[spec_parse]") {
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec(kFullYaml);
  REQUIRE(spec.ok());
  CHECK(spec->display_name() == "resnet");
  CHECK(spec->project() == "vision");
  CHECK(spec->priority() == 5);
  CHECK(spec->checkpoint_dir() == "/ckpt/resnet");
  CHECK(spec->labels().at("team") == "perception");
  CHECK(spec->labels().at("tier") == "1");
  CHECK(DurationToMs(spec->scheduling().stop_grace_period()) == 30000);
  CHECK(DurationToMs(spec->scheduling().timeout()) == 5400000);
  REQUIRE(spec->worker_pools_size() == 2);
  const v1::WorkerPool& chief = spec->worker_pools(0);
  CHECK(chief.name() == "chief");
  CHECK(chief.replica_count() == 1);
  REQUIRE(chief.command_size() == 2);
  CHECK(chief.command(1) == "-c");
  CHECK(chief.args(0) == "echo $RANK");
  CHECK(chief.env().at("FOO") == "1");
  CHECK(chief.env().at("BAR") == "true");
  CHECK(chief.resources().cpu() == 0.5);
  CHECK(chief.resources().memory_mb() == 512);
  CHECK(chief.resources().gpus() == 1);
  CHECK(spec->worker_pools(1).command(1) == "2");
  CHECK_FALSE(spec->worker_pools(1).has_resources());
}

TEST_CASE("ParseJobSpec reads the same spec written as JSON", "[spec_parse]") {
  absl::StatusOr<v1::JobSpec> from_yaml = ParseJobSpec(kFullYaml);
  absl::StatusOr<v1::JobSpec> from_json = ParseJobSpec(kFullJson);
  REQUIRE(from_yaml.ok());
  REQUIRE(from_json.ok());
  CHECK(MessageDifferencer::Equals(*from_yaml, *from_json));
}

TEST_CASE("ParseJobSpec accepts proto field names", "[spec_parse]") {
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec(
      "display_name: x\nworker_pools:\n- replica_count: 3\n  resources: {memory_mb: 64}\n");
  REQUIRE(spec.ok());
  CHECK(spec->display_name() == "x");
  CHECK(spec->worker_pools(0).replica_count() == 3);
  CHECK(spec->worker_pools(0).resources().memory_mb() == 64);
}

TEST_CASE("ParseJobSpec names the field of every error", "[spec_parse]") {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"workerPools:\n- name: a\n  resouces: {}\n",
       "workerPools[0].resouces: unknown field; known fields: name, replicaCount, command, args, "
       "env, resources, secretEnv, nodeSelector, nodeAffinity, elastic, secretRefs, image, "
       "imagePullPolicy, imagePullSecret, mounts"},
      {"workerPools:\n- name: a\n- replicaCount: abc\n",
       "workerPools[1].replicaCount: expected an integer, got \"abc\""},
      {"workerPools:\n- replicaCount: 1.5\n",
       "workerPools[0].replicaCount: expected an integer, got \"1.5\""},
      {"workerPools:\n- replicaCount: 3000000000\n",
       "workerPools[0].replicaCount: 3000000000 is out of range for int32 "
       "(-2147483648..2147483647)"},
      {"workerPools:\n- resources: {cpu: lots}\n",
       "workerPools[0].resources.cpu: expected a number, got \"lots\""},
      {"workerPools:\n- command: echo hi\n",
       "workerPools[0].command: expected a sequence, got \"echo hi\""},
      {"workerPools:\n- command: [sh, [x]]\n",
       "workerPools[0].command[1]: expected a string, got a sequence"},
      {"workerPools:\n- command: [sh, null]\n",
       "workerPools[0].command[1]: expected a value, got null"},
      {"workerPools:\n- env: [A=1]\n", "workerPools[0].env: expected a mapping, got a sequence"},
      {"workerPools: {name: a}\n", "workerPools: expected a sequence, got a mapping"},
      {"displayName: {a: 1}\n", "displayName: expected a string, got a mapping"},
      {"scheduling: 5s\n", "scheduling: expected a mapping, got \"5s\""},
      {"displayName: a\ndisplay_name: b\n", "displayName: field given more than once"},
      {"labels: {a: 1, a: 2}\n", "labels[\"a\"]: duplicate key"},
      {"bogus: 1\n",
       "bogus: unknown field; known fields: displayName, project, priority, workerPools, "
       "scheduling, checkpointDir, labels, faultTolerance, workdir, dependsOn, "
       "dependencyPolicy, array"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    CHECK(ErrorOf(c.text) == c.error);
  }
}

TEST_CASE("ParseJobSpec reads a pool's image, pull policy, pull secret and mounts",
          "[spec_parse]") {
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec(R"(
workerPools:
- name: chief
  image: registry:5000/team/train:1.4
  imagePullPolicy: ALWAYS
  imagePullSecret: registry-creds
  mounts:
  - {hostPath: /datasets/imagenet, path: /data, readOnly: true}
  - hostPath: /scratch
    path: /scratch
- name: worker
  image: team/train@sha256:0000000000000000000000000000000000000000000000000000000000000000
)");
  REQUIRE(spec.ok());
  const v1::WorkerPool& chief = spec->worker_pools(0);
  CHECK(chief.image() == "registry:5000/team/train:1.4");
  CHECK(chief.image_pull_policy() == v1::IMAGE_PULL_POLICY_ALWAYS);
  CHECK(chief.image_pull_secret() == "registry-creds");
  REQUIRE(chief.mounts_size() == 2);
  CHECK(chief.mounts(0).host_path() == "/datasets/imagenet");
  CHECK(chief.mounts(0).path() == "/data");
  CHECK(chief.mounts(0).read_only());
  CHECK(chief.mounts(1).path() == "/scratch");
  CHECK_FALSE(chief.mounts(1).read_only());
  CHECK(spec->worker_pools(1).image_pull_policy() == v1::IMAGE_PULL_POLICY_UNSPECIFIED);

  // The policy by its short name, its full name, or as Kubernetes writes it.
  const std::pair<const char*, v1::ImagePullPolicy> policies[] = {
      {"IF_NOT_PRESENT", v1::IMAGE_PULL_POLICY_IF_NOT_PRESENT},
      {"IMAGE_PULL_POLICY_IF_NOT_PRESENT", v1::IMAGE_PULL_POLICY_IF_NOT_PRESENT},
      {"IfNotPresent", v1::IMAGE_PULL_POLICY_IF_NOT_PRESENT},
      {"if_not_present", v1::IMAGE_PULL_POLICY_IF_NOT_PRESENT},
      {"Always", v1::IMAGE_PULL_POLICY_ALWAYS},
      {"IMAGE_PULL_POLICY_ALWAYS", v1::IMAGE_PULL_POLICY_ALWAYS},
  };
  for (const auto& [text, policy] : policies) {
    INFO(text);
    absl::StatusOr<v1::JobSpec> parsed =
        ParseJobSpec(absl::StrCat("workerPools:\n- imagePullPolicy: ", text, "\n"));
    REQUIRE(parsed.ok());
    CHECK(parsed->worker_pools(0).image_pull_policy() == policy);
  }
  CHECK(ErrorOf("workerPools:\n- imagePullPolicy: Never\n") ==
        "workerPools[0].imagePullPolicy: expected one of IF_NOT_PRESENT, ALWAYS, got \"Never\"");
  CHECK(ErrorOf("workerPools:\n- mounts: [{hostPath: /a, target: /b}]\n") ==
        "workerPools[0].mounts[0].target: unknown field; known fields: hostPath, path, readOnly");
  CHECK(ErrorOf("workerPools:\n- mounts: {hostPath: /a}\n") ==
        "workerPools[0].mounts: expected a sequence, got a mapping");
}

// Found by tests/fuzz/spec_parse_fuzz: such a spec was accepted, then refused by the server.
TEST_CASE("ParseJobSpec refuses strings that are not UTF-8, naming the field", "[spec_parse]") {
  CHECK(ErrorOf("workerPools:\n- args: [\"ok\", \"/path\xff\xfe/x\"]\n") ==
        "workerPools[0].args[1]: must be valid UTF-8");
  CHECK(ErrorOf("workerPools:\n- env: {\"K\xc3\": v}\n") ==
        "workerPools[0].env[\"K\\xc3\"]: must be valid UTF-8");
  CHECK(ErrorOf("displayName: \"caf\xc3\xa9\"\nlabels: {k: \"\xe2\x82\"}\n") ==
        "labels[\"k\"]: must be valid UTF-8");
  REQUIRE(ParseJobSpec("displayName: \"caf\xc3\xa9 \xe2\x82\xac\"\n").ok());
}

// Found by tests/fuzz/spec_parse_fuzz: yaml-cpp's LoadAll never returned on this 688-byte text.
TEST_CASE("ParseJobSpec returns on text where yaml-cpp finds documents without end",
          "[spec_parse]") {
  const std::string text(
      "# s?long.yaml)\n#  l \xf2mist --state runn1ng\n#   trainctl logs \"$id\" -f  \x00\x00"
      "\x00\x01\x00\x00\x00\x01\xff\x00  # prints a line every 10s; Ctrl-C to stop following\n#"
      "   trainctl cancel \"$id\"           # \"j-...? # hello.yaml: the smallest disttype.goog"
      "leapis.com/trainctl.v1.JobSpec.Labelributed job.  (0 for the chief, then0 \n,# 2, 3 for "
      "the workers) and WORLD_SIZE (4) in its environment.\ndisplayName: hello\nproject: defaul"
      "t\nworkerPools:\n  # Pool 0 holds the primary replica and must have exactly one.\n  - na"
      "me: chief\n    replicaCount: 0\n    # command[0] is looked up in PATH; args are appended"
      " after command.\n    command: [\"/bin/sh\", \"-c\"]\n    args:\n      - >-\n        echo"
      " \"hCANCello from $TRAINCTLELLING_REP\"LI trlC",
      688);
  const absl::StatusOr<v1::JobSpec> spec = ParseJobSpec(text);
  CHECK(!spec.ok());
}

TEST_CASE("ParseJobSpec reports malformed YAML with its line and column", "[spec_parse]") {
  std::string error = ErrorOf("displayName: a\nworkerPools:\n  - name: [a\n  - name: b\n");
  CHECK_THAT(error, Catch::StartsWith("invalid YAML at line "));
  CHECK_THAT(error, Catch::Contains(", column "));
  CHECK_THAT(ErrorOf("a: b\n c: d\n"), Catch::StartsWith("invalid YAML at line 2, column 3:"));
  CHECK_THAT(ErrorOf("{\"displayName\": \"a\",\n \"project\" \"b\"}"),
             Catch::StartsWith("invalid YAML at line 2"));
}

TEST_CASE("ParseJobSpec rejects documents that are not one mapping", "[spec_parse]") {
  CHECK_THAT(ErrorOf(""), Catch::StartsWith("empty document"));
  CHECK_THAT(ErrorOf("# only a comment\n"), Catch::StartsWith("empty document"));
  CHECK_THAT(ErrorOf("---\n"), Catch::StartsWith("empty document"));
  CHECK(ErrorOf("- a\n- b\n") ==
        "the top level must be a mapping of field names to values, got a sequence");
  CHECK(ErrorOf("hello\n") ==
        "the top level must be a mapping of field names to values, got \"hello\"");
  CHECK_THAT(ErrorOf("a: 1\n---\nb: 2\n"), Catch::StartsWith("expected a single document"));
}

TEST_CASE("ParseJobSpec parses durations", "[spec_parse]") {
  struct Case {
    const char* text;
    int64_t ms;
  };
  const Case cases[] = {{"30s", 30000},     {"500ms", 500},     {"5m", 300000},
                        {"1h30m", 5400000}, {"\"1.5s\"", 1500}, {"90", 90000}};
  for (const Case& c : cases) {
    INFO(c.text);
    absl::StatusOr<v1::JobSpec> spec =
        ParseJobSpec(absl::StrCat("scheduling: {timeout: ", c.text, "}"));
    REQUIRE(spec.ok());
    CHECK(DurationToMs(spec->scheduling().timeout()) == c.ms);
  }
  CHECK_THAT(ErrorOf("scheduling: {timeout: 5x}"),
             Catch::StartsWith("scheduling.timeout: invalid duration \"5x\""));
  CHECK(ErrorOf("scheduling: {timeout: [1]}") ==
        "scheduling.timeout: expected a duration such as \"30s\" or \"1h30m\", got a sequence");
}

TEST_CASE("ParseJobSpec leaves null values unset", "[spec_parse]") {
  absl::StatusOr<v1::JobSpec> spec =
      ParseJobSpec("displayName: ~\nscheduling:\nlabels: null\nworkerPools:\n- env: {A: }\n");
  REQUIRE(spec.ok());
  CHECK(spec->display_name().empty());
  CHECK_FALSE(spec->has_scheduling());
  CHECK(spec->labels().empty());
  CHECK(spec->worker_pools(0).env().at("A").empty());
  // A quoted "null" is a string.
  spec = ParseJobSpec("displayName: \"null\"\n");
  REQUIRE(spec.ok());
  CHECK(spec->display_name() == "null");
}

TEST_CASE("ParseJobSpec turns any scalar into a map value string", "[spec_parse]") {
  absl::StatusOr<v1::JobSpec> spec =
      ParseJobSpec("labels: {n: 1, f: 0.50, b: yes, s: 'a b', e: ''}\n");
  REQUIRE(spec.ok());
  CHECK(spec->labels().at("n") == "1");
  CHECK(spec->labels().at("f") == "0.50");
  CHECK(spec->labels().at("b") == "yes");
  CHECK(spec->labels().at("s") == "a b");
  CHECK(spec->labels().at("e").empty());
  CHECK(ErrorOf("labels: {a: {b: c}}") == "labels[\"a\"]: expected a string, got a mapping");
}

TEST_CASE("ParseYamlToMessage reads enums with or without their prefix", "[spec_parse]") {
  v1::ListJobsRequest request;
  absl::Status status = ParseYamlToMessage(
      "states: [running, RUNNING, JOB_STATE_QUEUED, Cancelled, 5]\npageSize: 10\n", &request);
  REQUIRE(status.ok());
  REQUIRE(request.states_size() == 5);
  CHECK(request.states(0) == v1::JOB_STATE_RUNNING);
  CHECK(request.states(1) == v1::JOB_STATE_RUNNING);
  CHECK(request.states(2) == v1::JOB_STATE_QUEUED);
  CHECK(request.states(3) == v1::JOB_STATE_CANCELLED);
  CHECK(request.states(4) == v1::JOB_STATE_FAILED);
  CHECK(request.page_size() == 10);

  status = ParseYamlToMessage("states: [runing]\n", &request);
  CHECK(status.message() ==
        "states[0]: expected one of QUEUED, PENDING, RUNNING, SUCCEEDED, FAILED, CANCELLING, "
        "CANCELLED, got \"runing\"");
}

TEST_CASE("ParseYamlToMessage reads timestamps, bools and optional fields", "[spec_parse]") {
  v1::Job job;
  REQUIRE(ParseYamlToMessage("createTime: 2024-01-02T03:04:05Z\nstate: SUCCEEDED\n"
                             "replicas: [{name: chief-0, exitCode: 0, state: failed}]\n",
                             &job)
              .ok());
  CHECK(job.create_time().seconds() == 1704164645);
  CHECK(job.state() == v1::JOB_STATE_SUCCEEDED);
  CHECK(job.replicas(0).has_exit_code());
  CHECK(job.replicas(0).state() == v1::REPLICA_STATE_FAILED);

  v1::ReadLogsResponse logs;
  REQUIRE(ParseYamlToMessage("complete: true\ndata: aGk=\n", &logs).ok());
  CHECK(logs.complete());
  CHECK(logs.data() == "hi");
  CHECK(ParseYamlToMessage("complete: maybe\n", &logs).message() ==
        "complete: expected true or false, got \"maybe\"");
}

TEST_CASE("ParseJobSpecFile reads files and prefixes errors with the path", "[spec_parse]") {
  absl::StatusOr<v1::JobSpec> missing = ParseJobSpecFile("/nonexistent/spec.yaml");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK_THAT(std::string(missing.status().message()), Catch::Contains("/nonexistent/spec.yaml"));

  char path[] = "/tmp/spec_parse_test_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  std::FILE* file = fdopen(fd, "w");
  std::fputs("displayName: from-file\nworkerPools: [{replicaCount: x}]\n", file);
  std::fclose(file);
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpecFile(path);
  REQUIRE_FALSE(spec.ok());
  CHECK(spec.status().message() ==
        std::string(path) + ": workerPools[0].replicaCount: expected an integer, got \"x\"");
  std::remove(path);
}

TEST_CASE("a document whose aliases expand without bound is refused", "[spec_parse]") {
  // Nine levels of ten aliases: 10^9 strings once expanded, from a few hundred bytes.
  std::string text = "a0: &a0 [\"lol\"]\n";
  for (int level = 1; level <= 9; ++level) {
    std::string refs;
    for (int i = 0; i < 10; ++i) refs += absl::StrCat(i > 0 ? "," : "", "*a", level - 1);
    absl::StrAppend(&text, "a", level, ": &a", level, " [", refs, "]\n");
  }
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec(text);
  REQUIRE_FALSE(spec.ok());
  CHECK(spec.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(spec.status().message()),
             Catch::StartsWith("the document expands to more than 200000 values"));
  // A few aliases are fine.
  CHECK(ParseJobSpec("displayName: &n x\nproject: default\nlabels: {a: *n}\n").ok());
}

TEST_CASE("an alias inside its own anchor is refused, not followed without end", "[spec_parse]") {
  // Found by tests/fuzz/spec_parse_fuzz: yaml-cpp loads `&n {a: *n}` as a mapping that contains
  // itself, and walking it overflowed the stack.
  for (const char* text : {"displayName: &n {a: *n, b: *n}\n", "labels: &l [x, *l]\n"}) {
    absl::StatusOr<v1::JobSpec> spec = ParseJobSpec(text);
    REQUIRE_FALSE(spec.ok());
    CHECK(spec.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(spec.status().message()),
               Catch::StartsWith("the document nests more than 64 levels deep"));
  }
}

}  // namespace
}  // namespace trainctl
