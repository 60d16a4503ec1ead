// Which node to blame when a gang's fabric check fails (the check before a multi-node gang
// starts: every pair of its nodes connects and measures). Pure: the probes' results in, a
// verdict out.
//
// - Every pair passed: kPass.
// - A node that failed with every partner while some pair without it passed is the culprit
//   (kCulprit): the others reach each other, so the fault is its own.
// - Two nodes whose one pair failed cannot say which side is at fault: kProbeOutside asks for
//   each of them to be probed against a node outside the gang (`outsiders`, the first that is
//   not in the gang); with those results, the one that fails with the outsider while the other
//   passes is the culprit. Without an outsider, or when both or neither fail, no one is blamed.
// - Anything else (every pair failed; failures that no single node explains, such as one link
//   between two nodes that both reach a third): kNoCulprit, with what failed.
//
//   CulpritVerdict v = FindCulprit({"a", "b", "c"}, results, {"d"});
//   if (v.kind == CulpritVerdict::kCulprit) Isolate(v.culprit, v.why);
//
// Thread-safe: no state.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace trainctl::sched {

// One probe between two nodes: a connection, a latency and a bandwidth sample.
struct PairProbe {
  std::string a;
  std::string b;
  bool ok = false;
  // What failed, in words ("connection refused", "0.1 Gbit/s, below 1"); "" when ok.
  std::string detail;
};

struct CulpritVerdict {
  enum Kind { kPass, kCulprit, kProbeOutside, kNoCulprit };
  Kind kind = kPass;
  // kCulprit: the node to blame.
  std::string culprit;
  // kProbeOutside: the pairs (gang node, outsider) to probe next.
  std::vector<std::pair<std::string, std::string>> probes;
  // kCulprit and kNoCulprit: why, naming the failed pairs ("node-b failed with every partner:
  // node-a (connection refused), node-c (connection refused)").
  std::string why;
};

// `nodes`: the gang's nodes; `probes`: every result so far (pairs among `nodes`, and for two
// nodes those against an outsider); `outsiders`: nodes outside the gang that may be probed, in
// order of preference.
CulpritVerdict FindCulprit(const std::vector<std::string>& nodes,
                           const std::vector<PairProbe>& probes,
                           const std::vector<std::string>& outsiders);

}  // namespace trainctl::sched
