// `trainctl node prepull IMAGE`: its flags checked before any request, the request they make, the
// NODE DIGEST SIZE ERROR table it prints and whether it exits 1 (a node failed).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "cli/node_flags.h"
#include "cli/node_view.h"
#include "common/time_util.h"

namespace trainctl::cli {
namespace prepull_cli_test {

// Parses `trainctl node ARGV...` with the real flag specs.
ParsedArgs Parse(const std::vector<std::string>& argv) {
  std::vector<std::string> full = {"node"};
  full.insert(full.end(), argv.begin(), argv.end());
  const std::vector<CommandSpec> commands = {{"node", "", "", "", NodeFlags(), 0, 2}};
  ParsedArgs parsed;
  REQUIRE(ParseArgs(full, {}, commands, &parsed).ok());
  return parsed;
}

TEST_CASE("node prepull: the request its flags make", "[node_flags][prepull]") {
  ParsedArgs args = Parse({"prepull", "127.0.0.1:5000/x:1"});
  REQUIRE(CheckNodeArgs(args).ok());
  CHECK(*CheckNodeArgs(args) == NodeAction::kPrepull);
  v1::PrepullImageRequest req = PrepullRequestFromArgs(args);
  CHECK(req.image() == "127.0.0.1:5000/x:1");
  CHECK(req.nodes().empty());
  CHECK(req.project().empty());
  CHECK(req.image_pull_secret().empty());
  CHECK_FALSE(req.has_timeout());  // the server's default

  args = Parse({"prepull", "reg:5000/x:1", "--node", "gpu-1", "--node=gpu-2", "--project", "team-a",
                "--pull-secret", "regcred", "--timeout", "20m", "-o", "json"});
  REQUIRE(CheckNodeArgs(args).ok());
  req = PrepullRequestFromArgs(args);
  CHECK(std::vector<std::string>(req.nodes().begin(), req.nodes().end()) ==
        std::vector<std::string>{"gpu-1", "gpu-2"});
  CHECK(req.project() == "team-a");
  CHECK(req.image_pull_secret() == "regcred");
  CHECK(DurationToMs(req.timeout()) == 20 * 60'000);
}

TEST_CASE("node prepull: a wrong command line is refused before any request",
          "[node_flags][prepull]") {
  struct Row {
    std::vector<std::string> argv;
    const char* error;
  };
  for (const Row& row : std::vector<Row>{
           {{"prepull"}, "node prepull needs the image: trainctl node prepull IMAGE"},
           {{"prepull", "x:1", "--project", "team-a"}, "--project and --pull-secret go together"},
           {{"prepull", "x:1", "--pull-secret", "regcred"},
            "--project and --pull-secret go together"},
           {{"prepull", "x:1", "--timeout", "2h"}, "--timeout must be how long to wait"},
           {{"prepull", "x:1", "--timeout", "500ms"}, "--timeout must be how long to wait"},
           {{"prepull", "x:1", "--node", ""}, "--node is empty"},
           {{"prepull", "x:1", "--reason", "why"}, "node prepull takes no --reason"},
           {{"prepull", "x:1", "--deadline", "5m"}, "node prepull takes no --deadline"},
           {{"cordon", "node-1", "--node", "node-2"}, "node cordon takes no --node"},
           {{"drain", "node-1", "--reason", "r", "--timeout", "5m"},
            "node drain takes no --timeout; it is for node prepull"},
       }) {
    INFO(row.argv[0]);
    absl::StatusOr<NodeAction> got = CheckNodeArgs(Parse(row.argv));
    REQUIRE_FALSE(got.ok());
    CHECK(got.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(got.status().message()), Catch::Contains(row.error));
  }
}

TEST_CASE("node prepull: one row per node, and exit 1 when one failed", "[node_view][prepull]") {
  v1::PrepullImageResponse resp;
  auto* a = resp.add_results();
  a->set_node("gpu-1");
  a->set_digest("sha256:abcd");
  a->set_bytes(1'234'567'890);
  auto* b = resp.add_results();
  b->set_node("gpu-2");
  b->set_digest("sha256:abcd");
  b->set_bytes(999);
  CHECK_FALSE(AnyPrepullFailed(resp));
  auto* c = resp.add_results();
  c->set_node("gpu-3");
  c->set_error("no answer before the deadline");
  CHECK(AnyPrepullFailed(resp));
  CHECK(RenderPrepullResults(resp) ==
        "NODE    DIGEST        SIZE     ERROR\n"
        "gpu-1   sha256:abcd   1.2 GB   -\n"
        "gpu-2   sha256:abcd   999 B    -\n"
        "gpu-3   -             -        no answer before the deadline\n");
  CHECK(RenderPrepullResults(v1::PrepullImageResponse()) == "NODE   DIGEST   SIZE   ERROR\n");
}

}  // namespace prepull_cli_test
}  // namespace trainctl::cli
