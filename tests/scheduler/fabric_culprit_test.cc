// Which node a failed fabric check blames (scheduler/fabric_culprit.h): with three or more nodes
// the one that fails with every partner; with two, the one that also fails with a node outside
// the gang; no one when no single node explains the failures.
#include "scheduler/fabric_culprit.h"

#include <catch2/catch.hpp>

namespace trainctl::sched {
namespace {

PairProbe Ok(const std::string& a, const std::string& b) { return {a, b, true, ""}; }
PairProbe Bad(const std::string& a, const std::string& b) {
  return {a, b, false, "connection refused"};
}

TEST_CASE("fabric culprit: every pair passed, nobody is blamed") {
  CHECK(FindCulprit({"a", "b", "c"}, {Ok("a", "b"), Ok("a", "c"), Ok("b", "c")}, {}).kind ==
        CulpritVerdict::kPass);
  CHECK(FindCulprit({"a", "b"}, {Ok("a", "b")}, {"d"}).kind == CulpritVerdict::kPass);
}

TEST_CASE("fabric culprit: of three or more, the node that fails with every partner") {
  CulpritVerdict v = FindCulprit({"a", "b", "c"}, {Ok("a", "b"), Bad("a", "c"), Bad("b", "c")}, {});
  REQUIRE(v.kind == CulpritVerdict::kCulprit);
  CHECK(v.culprit == "c");
  CHECK(v.why ==
        "c failed the fabric check with every partner, which reach each other: a-c (connection "
        "refused), b-c (connection refused)");
  // Four nodes, one bad.
  v = FindCulprit(
      {"a", "b", "c", "d"},
      {Ok("a", "b"), Ok("a", "c"), Bad("a", "d"), Ok("b", "c"), Bad("b", "d"), Bad("c", "d")}, {});
  CHECK(v.kind == CulpritVerdict::kCulprit);
  CHECK(v.culprit == "d");
}

TEST_CASE("fabric culprit: failures no single node explains blame no one") {
  // Every pair failed.
  CulpritVerdict v =
      FindCulprit({"a", "b", "c"}, {Bad("a", "b"), Bad("a", "c"), Bad("b", "c")}, {});
  CHECK(v.kind == CulpritVerdict::kNoCulprit);
  CHECK(v.why ==
        "the fabric check failed and no single node explains it: a-b (connection "
        "refused), a-c (connection refused), b-c (connection refused)");
  // One link between two nodes that both reach the third.
  v = FindCulprit({"a", "b", "c"}, {Bad("a", "b"), Ok("a", "c"), Ok("b", "c")}, {});
  CHECK(v.kind == CulpritVerdict::kNoCulprit);
  // Two nodes that fail with every partner: which one is it?
  v = FindCulprit(
      {"a", "b", "c", "d"},
      {Ok("a", "b"), Bad("a", "c"), Bad("a", "d"), Bad("b", "c"), Bad("b", "d"), Bad("c", "d")},
      {});
  CHECK(v.kind == CulpritVerdict::kNoCulprit);
}

TEST_CASE("fabric culprit: of two nodes, the one that also fails with a node outside the gang") {
  // First: ask for probes against the first outsider that is not in the gang.
  CulpritVerdict v = FindCulprit({"a", "b"}, {Bad("a", "b")}, {"a", "d", "e"});
  REQUIRE(v.kind == CulpritVerdict::kProbeOutside);
  CHECK(v.probes == std::vector<std::pair<std::string, std::string>>{{"a", "d"}, {"b", "d"}});
  // b fails with d too, a reaches d: b is at fault.
  v = FindCulprit({"a", "b"}, {Bad("a", "b"), Ok("a", "d"), Bad("d", "b")}, {"d"});
  REQUIRE(v.kind == CulpritVerdict::kCulprit);
  CHECK(v.culprit == "b");
  CHECK(v.why ==
        "b failed the fabric check with its partner and with d outside the gang, which "
        "its partner reached: a-b (connection refused), d-b (connection refused)");
  // Both reach d: the link between them, no node.
  v = FindCulprit({"a", "b"}, {Bad("a", "b"), Ok("a", "d"), Ok("b", "d")}, {"d"});
  CHECK(v.kind == CulpritVerdict::kNoCulprit);
  CHECK(v.why ==
        "the fabric check failed between a and b, both of which reached d: a-b "
        "(connection refused)");
  // Both fail with d: d may be the odd one; no one is blamed.
  v = FindCulprit({"a", "b"}, {Bad("a", "b"), Bad("a", "d"), Bad("b", "d")}, {"d"});
  CHECK(v.kind == CulpritVerdict::kNoCulprit);
  // No outsider to ask.
  v = FindCulprit({"a", "b"}, {Bad("a", "b")}, {"a", "b"});
  CHECK(v.kind == CulpritVerdict::kNoCulprit);
  CHECK(v.why ==
        "the check between the gang's two nodes failed (a-b (connection refused)) and "
        "no node outside the gang was there to tell which is at fault");
  // Only one of the two probed so far: the other still to do.
  v = FindCulprit({"a", "b"}, {Bad("a", "b"), Ok("a", "d")}, {"d"});
  REQUIRE(v.kind == CulpritVerdict::kProbeOutside);
  CHECK(v.probes == std::vector<std::pair<std::string, std::string>>{{"b", "d"}});
}

}  // namespace
}  // namespace trainctl::sched
