// Runs `trainctl queue`, `quota get`, `quota set`, `projects` and `get` of a queued job against
// the fake server (fake_server.h, fake_quota_service.h) and checks what they print and send.
#include <catch2/catch.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/spec_parse.h"
#include "common/time_util.h"
#include "tests/cli/fake_server.h"
#include "trainctl/v1/job.pb.h"

namespace trainctl::cli {
namespace {

TEST_CASE("queue lists queued jobs in admission order with why each waits", "[binary][quota]") {
  Result queue = Fake().Run("queue");
  INFO(queue.err);
  REQUIRE(queue.exit_status == 0);
  CHECK(queue.out ==
        "POSITION   ID     NAME         PROJECT   PRIORITY   WAITING   REASON\n"
        "1          j-q1   bert-large   team-a    10         5m        QUOTA: project team-a needs "
        "8 gpus, 4 of 8 in use by 1 job\n"
        "2          j-q2   sweep-3      team-a    0          2m        QUOTA: project team-a needs "
        "2 gpus, 4 of 8 in use by 1 job (+1 more)\n"
        "1          j-q3   resnet       vision    -5         30s       -\n");

  Result vision = Fake().Run("queue --project vision --limit 5");
  CHECK(vision.out ==
        "POSITION   ID     NAME     PROJECT   PRIORITY   WAITING   REASON\n"
        "1          j-q3   resnet   vision    -5         30s       -\n");

  for (const char* format : {"json", "yaml"}) {
    Result listed = Fake().Run(absl::StrCat("queue --limit 2 -o ", format));
    REQUIRE(listed.exit_status == 0);
    v1::ListQueueResponse response;  // {"jobs": [...]}
    REQUIRE(ParseYamlToMessage(listed.out, &response).ok());
    REQUIRE(response.jobs_size() == 2);
    CHECK(response.jobs(1).queue_status().blockers_size() == 2);
    CHECK(response.jobs(1).queue_status().jobs_ahead(0) == "j-q1");
  }

  Result none = Fake().Run("queue --project nobody");
  CHECK(none.exit_status == 0);
  CHECK(none.out.empty());
  CHECK(none.err == "No queued jobs.\n");

  for (const char* limit : {"0", "10001", "all"}) {
    Result bad = Fake().Run(absl::StrCat("queue --limit ", limit));
    CHECK(bad.exit_status == 2);
    CHECK_THAT(bad.err, Catch::StartsWith("error: INVALID_ARGUMENT: --limit must be"));
  }
}

TEST_CASE("quota get shows each limit as used of limit", "[binary][quota]") {
  Result own = Fake().Run("quota get team-a");
  INFO(own.err);
  REQUIRE(own.exit_status == 0);
  CHECK(own.out ==
        "Project:       team-a\n"
        "Cohort:        research\n"
        "Strategy:      strict FIFO\n"
        "GPUs:          4 / 8 gpus\n"
        "CPU:           8 / 32 cpu\n"
        "Memory:        16384 / unlimited\n"
        "Running jobs:  1 / 4\n"
        "Queued jobs:   2\n"
        "Borrowed:      nothing\n"
        "May borrow:    2 gpus\n"
        "Weight:        1\n"
        "Usage:         none (decayed)\n"
        "Share:         0\n"
        "Reclaim:       never\n"
        "Preemption:    never within the project\n"
        "Run as:        project uid\n"
        "Project uid:   65536 (trainctl-team-a)\n");

  Result fallback = Fake().Run("quota get vision");
  CHECK(fallback.out ==
        "Project:       vision (default quota)\n"
        "Cohort:        -\n"
        "Strategy:      strict FIFO\n"
        "GPUs:          2 / unlimited\n"
        "CPU:           0 / unlimited\n"
        "Memory:        0 / unlimited\n"
        "Running jobs:  1 / unlimited\n"
        "Queued jobs:   1\n"
        "Borrowed:      1 gpu\n"
        "Weight:        1\n"
        "Usage:         none (decayed)\n"
        "Share:         0\n"
        "Reclaim:       never\n"
        "Preemption:    never within the project\n"
        "Run as:        project uid\n"
        "Project uid:   none yet (given at its first job)\n");

  Result json = Fake().Run("quota get team-a -o json");
  REQUIRE(json.exit_status == 0);
  v1::Project project;
  REQUIRE(ParseYamlToMessage(json.out, &project).ok());
  CHECK(project.quota().gpus() == 8);
  CHECK(project.in_use().memory_mb() == 16384);

  Result bad = Fake().Run("quota get Team_A");
  CHECK(bad.exit_status == 2);
  CHECK_THAT(bad.err, Catch::StartsWith("error: INVALID_ARGUMENT: project must be"));
}

TEST_CASE("quota set overlays its flags onto the quota in force", "[binary][quota]") {
  Result set = Fake().Run(
      "quota set team-s --gpus 12 --memory-mb unlimited --borrow-cpu 4 --max-running-jobs 3");
  INFO(set.err);
  REQUIRE(set.exit_status == 0);
  const v1::Quota sent = Fake().LastSetQuotaRequest().quota();
  CHECK(sent.project() == "team-s");
  CHECK(sent.gpus() == 12);
  CHECK(sent.cpu() == 16);  // kept
  CHECK(!sent.has_memory_mb());
  CHECK(sent.max_running_jobs() == 3);
  CHECK(sent.cohort() == "research");
  CHECK(sent.borrowing_limit().gpus() == 2);
  CHECK(sent.borrowing_limit().cpu() == 4);
  CHECK(sent.queueing_strategy() == v1::QUEUEING_STRATEGY_BEST_EFFORT_FIFO);
  CHECK(DurationToMs(sent.starvation_limit()) == 600000);
  CHECK(set.out ==
        "Project:       team-s\n"
        "Cohort:        research\n"
        "Strategy:      best-effort FIFO (starvation limit 10m0s)\n"
        "GPUs:          0 / 12 gpus\n"
        "CPU:           0 / 16 cpu\n"
        "Memory:        0 / unlimited\n"
        "Running jobs:  0 / 3\n"
        "Queued jobs:   0\n"
        "Borrowed:      nothing\n"
        "May borrow:    2 gpus, 4 cpu\n"
        "Weight:        1\n"
        "Usage:         none (decayed)\n"
        "Share:         0\n"
        "Reclaim:       never\n"
        "Preemption:    never within the project\n"
        "Run as:        project uid\n"
        "Project uid:   none yet (given at its first job)\n");

  Result strict = Fake().Run("quota set team-s --strategy strict --cohort= -o yaml");
  REQUIRE(strict.exit_status == 0);
  CHECK(Fake().LastSetQuotaRequest().quota().queueing_strategy() ==
        v1::QUEUEING_STRATEGY_STRICT_FIFO);
  CHECK(Fake().LastSetQuotaRequest().quota().cohort().empty());
  CHECK(Fake().LastSetQuotaRequest().quota().gpus() == 8);  // the fake forgets the last set
  v1::Project project;
  REQUIRE(ParseYamlToMessage(strict.out, &project).ok());
  CHECK(!project.default_quota());

  // A project on the default quota gets a quota of its own.
  Result fresh = Fake().Run("quota set new-team --gpus 2 --starvation-limit 90s");
  REQUIRE(fresh.exit_status == 0);
  CHECK(Fake().LastSetQuotaRequest().quota().project() == "new-team");
  CHECK(Fake().LastSetQuotaRequest().quota().gpus() == 2);
  CHECK(DurationToMs(Fake().LastSetQuotaRequest().quota().starvation_limit()) == 90000);
  CHECK_THAT(fresh.out, Catch::StartsWith("Project:       new-team\n"));
}

TEST_CASE("quota rejects bad actions and values", "[binary][quota]") {
  struct Case {
    const char* args;
    const char* err;
  };
  for (const Case& c : {
           Case{"quota set team-s", "error: INVALID_ARGUMENT: quota set needs at least one flag"},
           Case{"quota set team-s --gpus lots",
                "error: INVALID_ARGUMENT: --gpus must be a whole number or \"unlimited\", got "
                "\"lots\""},
           Case{"quota set team-s --cpu much", "error: INVALID_ARGUMENT: --cpu must be a number"},
           Case{"quota set team-s --borrow-gpus unlimited",
                "error: INVALID_ARGUMENT: --borrow-gpus must be a whole number"},
           Case{"quota set team-s --strategy fair",
                "error: INVALID_ARGUMENT: --strategy must be strict or best-effort"},
           Case{"quota set team-s --starvation-limit soon",
                "error: INVALID_ARGUMENT: --starvation-limit must be a duration"},
           Case{"quota set team-s --gpus -3",
                "error: INVALID_ARGUMENT: quota.gpus must be >= 0, got -3"},  // the server's
           Case{"quota get team-a --gpus 3", "error: INVALID_ARGUMENT: quota get takes no quota"},
           Case{"quota show team-a", "error: INVALID_ARGUMENT: unknown quota action \"show\""},
           Case{"quota get", "error: INVALID_ARGUMENT: \"quota\" needs get|set PROJECT"},
       }) {
    Result r = Fake().Run(c.args);
    INFO(c.args);
    CHECK(r.exit_status == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::StartsWith(c.err));
  }
}

TEST_CASE("projects shows used/limit per project", "[binary][quota]") {
  Result projects = Fake().Run("projects");
  INFO(projects.err);
  REQUIRE(projects.exit_status == 0);
  CHECK(projects.out ==
        "NAME     COHORT     GPUS   CPU    MEMORY    RUNNING   QUEUED   WEIGHT   SHARE\n"
        "team-a   research   4/8    8/32   16384/-   1/4       2        1        0\n"
        "team-s   research   0/8    0/16   0/65536   0/-       0        1        0\n"
        "vision   -          2/-    0/-    0/-       1/-       1        1        0\n");
  for (const char* format : {"json", "yaml"}) {
    Result listed = Fake().Run(absl::StrCat("projects -o ", format));
    REQUIRE(listed.exit_status == 0);
    v1::ListProjectsResponse response;  // {"projects": [...]}
    REQUIRE(ParseYamlToMessage(listed.out, &response).ok());
    REQUIRE(response.projects_size() == 3);
    CHECK(response.projects(2).default_quota());
  }
}

TEST_CASE("get and describe say where a queued job stands and what it waits for",
          "[binary][quota]") {
  for (const char* command : {"get", "describe"}) {
    Result r = Fake().Run(absl::StrCat(command, " j-waiting"));
    INFO(command << "\n" << r.err);
    REQUIRE(r.exit_status == 0);
    // describe's "Retry budgets" label is one character longer than get's longest.
    const std::string wider(std::string(command) == "describe" ? 1 : 0, ' ');
    CHECK_THAT(r.out, Catch::Contains("State:         " + wider + "QUEUED\n"));
    CHECK_THAT(r.out, Catch::Contains("Position:      " + wider +
                                      "13 in team-a (12 jobs ahead: j-a1, j-a2, j-a3, j-a4, j-a5, "
                                      "j-a6, j-a7, j-a8, j-a9, j-a10 and 2 more)\n"));
    CHECK_THAT(r.out, Catch::Contains("\n\nWaiting for:\n"
                                      "  QUOTA: project team-a needs 8 gpus, 4 of 8 in use by 1 "
                                      "job\n"
                                      "  PRIORITY: 12 jobs ahead in team-a\n"
                                      "\nReplicas:\n"));
  }
  // Jobs that are not queued have neither.
  Result running = Fake().Run("get j-ok");
  CHECK_THAT(running.out, !Catch::Contains("Position") && !Catch::Contains("Waiting for"));
}

TEST_CASE("help lists queue, quota and projects", "[binary][quota]") {
  Result help = Fixture::RunBinary("--help");
  CHECK(help.exit_status == 0);
  for (const char* command : {"queue", "quota", "projects"}) {
    CHECK_THAT(help.out, Catch::Contains(absl::StrCat("\n  ", command, " ")));
    Result own = Fixture::RunBinary(absl::StrCat(command, " --help"));
    CHECK(own.exit_status == 0);
    CHECK_THAT(own.out, Catch::StartsWith(absl::StrCat("Usage:\n  trainctl ", command)));
  }
  Result quota = Fixture::RunBinary("quota set --help");
  CHECK_THAT(quota.out, Catch::Contains("--max-running-jobs N") &&
                            Catch::Contains("--starvation-limit D") &&
                            Catch::Contains("--borrow-memory-mb N"));
}

TEST_CASE("quota set sends the preemption policies", "[binary][quota]") {
  Result set = Fake().Run(
      "quota set team-s --reclaim lower-priority --preempt-within-project lower-priority");
  INFO(set.err);
  REQUIRE(set.exit_status == 0);
  const v1::Quota sent = Fake().LastSetQuotaRequest().quota();
  CHECK(sent.reclaim() == v1::RECLAIM_POLICY_LOWER_PRIORITY);
  CHECK(sent.preempt_within_project() == v1::WITHIN_PROJECT_PREEMPTION_LOWER_PRIORITY);
  CHECK(sent.gpus() == 8);  // kept
  CHECK_THAT(set.out, Catch::Contains("Reclaim:       lower-priority\n"
                                      "Preemption:    lower-priority within the project\n"));

  Result bad = Fake().Run("quota set team-s --reclaim sometimes");
  CHECK(bad.exit_status == 2);
  CHECK(bad.err ==
        "error: INVALID_ARGUMENT: --reclaim must be never, lower-priority or any, got "
        "\"sometimes\"\n");

  Result help = Fake().Run("quota set --help");
  CHECK(help.exit_status == 0);
  CHECK_THAT(help.out, Catch::Contains("--reclaim") && Catch::Contains("--preempt-within-project"));
}

}  // namespace
}  // namespace trainctl::cli
