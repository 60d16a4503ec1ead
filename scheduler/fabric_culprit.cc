// Blaming one node for a failed fabric check (fabric_culprit.h).
#include "scheduler/fabric_culprit.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace trainctl::sched {
namespace {

bool In(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// "node-a-node-b (connection refused)" for each failed probe.
std::string Failures(const std::vector<const PairProbe*>& failed) {
  std::vector<std::string> parts;
  for (const PairProbe* p : failed) {
    parts.push_back(absl::StrCat(p->a, "-", p->b, p->detail.empty() ? "" : " (" + p->detail + ")"));
  }
  return absl::StrJoin(parts, ", ");
}

}  // namespace

CulpritVerdict FindCulprit(const std::vector<std::string>& nodes,
                           const std::vector<PairProbe>& probes,
                           const std::vector<std::string>& outsiders) {
  CulpritVerdict v;
  std::vector<const PairProbe*> inside_failed;
  // Per gang node: its probes with other gang nodes, and how many failed.
  std::map<std::string, std::pair<int, int>> tally;  // node -> (probes, failed)
  for (const PairProbe& p : probes) {
    if (!In(nodes, p.a) || !In(nodes, p.b)) continue;
    for (const std::string* n : {&p.a, &p.b}) {
      ++tally[*n].first;
      if (!p.ok) ++tally[*n].second;
    }
    if (!p.ok) inside_failed.push_back(&p);
  }
  if (inside_failed.empty()) return v;  // kPass

  if (nodes.size() == 2) {
    // One pair: ask a node outside the gang which side is at fault.
    const std::string* outsider = nullptr;
    for (const std::string& o : outsiders) {
      if (!In(nodes, o)) {
        outsider = &o;
        break;
      }
    }
    if (outsider == nullptr) {
      v.kind = CulpritVerdict::kNoCulprit;
      v.why =
          absl::StrCat("the check between the gang's two nodes failed (", Failures(inside_failed),
                       ") and no node outside the gang was there to tell which is at fault");
      return v;
    }
    std::map<std::string, const PairProbe*> against;  // gang node -> its probe with the outsider
    for (const PairProbe& p : probes) {
      if (p.a == *outsider && In(nodes, p.b)) against[p.b] = &p;
      if (p.b == *outsider && In(nodes, p.a)) against[p.a] = &p;
    }
    if (against.size() < 2) {
      v.kind = CulpritVerdict::kProbeOutside;
      for (const std::string& n : nodes) {
        if (against.count(n) == 0) v.probes.push_back({n, *outsider});
      }
      return v;
    }
    std::vector<std::string> bad;
    std::vector<const PairProbe*> failed = inside_failed;
    for (const auto& [n, p] : against) {
      if (!p->ok) {
        bad.push_back(n);
        failed.push_back(p);
      }
    }
    if (bad.size() == 1) {
      v.kind = CulpritVerdict::kCulprit;
      v.culprit = bad[0];
      v.why = absl::StrCat(bad[0], " failed the fabric check with its partner and with ", *outsider,
                           " outside the gang, which its partner reached: ", Failures(failed));
      return v;
    }
    v.kind = CulpritVerdict::kNoCulprit;
    v.why = absl::StrCat("the fabric check failed between ", nodes[0], " and ", nodes[1],
                         bad.empty() ? absl::StrCat(", both of which reached ", *outsider)
                                     : absl::StrCat(", and both failed with ", *outsider),
                         ": ", Failures(failed));
    return v;
  }

  // Three or more: a node that failed with every partner, while some other pair passed.
  std::vector<std::string> always;
  for (const std::string& n : nodes) {
    auto it = tally.find(n);
    if (it != tally.end() && it->second.first > 0 && it->second.second == it->second.first) {
      always.push_back(n);
    }
  }
  const size_t pairs_without = [&] {
    size_t passed = 0;
    for (const PairProbe& p : probes) {
      if (p.ok && In(nodes, p.a) && In(nodes, p.b) && !In(always, p.a) && !In(always, p.b)) {
        ++passed;
      }
    }
    return passed;
  }();
  if (always.size() == 1 && pairs_without > 0) {
    v.kind = CulpritVerdict::kCulprit;
    v.culprit = always[0];
    v.why = absl::StrCat(always[0],
                         " failed the fabric check with every partner, which reach "
                         "each other: ",
                         Failures(inside_failed));
    return v;
  }
  v.kind = CulpritVerdict::kNoCulprit;
  v.why = absl::StrCat("the fabric check failed and no single node explains it: ",
                       Failures(inside_failed));
  return v;
}

}  // namespace trainctl::sched
