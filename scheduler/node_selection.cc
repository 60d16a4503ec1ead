#include "scheduler/node_selection.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace trainctl::sched {
namespace {

constexpr int kMaxSelectorEntries = 16;
constexpr size_t kMaxLabelLength = 253;

absl::Status InvalidSelection(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

bool ValidLabelText(const std::string& s) {
  return !s.empty() && s.size() <= kMaxLabelLength && std::none_of(s.begin(), s.end(), [](char c) {
    return c == '\0' || c == ',' || c == '=' || static_cast<unsigned char>(c) <= ' ';
  });
}

// The node's value of `key`, or nullptr.
const std::string* ValueOf(const NodeLabels* labels, const std::string& key) {
  if (labels == nullptr) return nullptr;
  auto it = labels->find(key);
  return it == labels->end() ? nullptr : &it->second;
}

}  // namespace

absl::Status ValidateNodeSelection(const std::string& path, const v1::WorkerPool& pool) {
  if (pool.node_selector_size() > kMaxSelectorEntries) {
    return InvalidSelection(path + ".nodeSelector",
                            absl::StrCat("holds at most ", kMaxSelectorEntries, " labels, got ",
                                         pool.node_selector_size()));
  }
  for (const auto& [key, value] : pool.node_selector()) {
    if (!ValidLabelText(key) || !ValidLabelText(value)) {
      return InvalidSelection(absl::StrCat(path, ".nodeSelector[\"", key, "\"]"),
                              absl::StrCat("label keys and values must be 1..", kMaxLabelLength,
                                           " characters without spaces, ',' or '='; got \"", key,
                                           "\": \"", value, "\""));
    }
  }
  if (pool.node_affinity_size() > kMaxSelectorEntries) {
    return InvalidSelection(path + ".nodeAffinity",
                            absl::StrCat("holds at most ", kMaxSelectorEntries, " rules, got ",
                                         pool.node_affinity_size()));
  }
  for (int i = 0; i < pool.node_affinity_size(); ++i) {
    const v1::NodeSelectorRequirement& r = pool.node_affinity(i);
    const std::string at = absl::StrCat(path, ".nodeAffinity[", i, "]");
    if (!ValidLabelText(r.key())) {
      return InvalidSelection(
          at + ".key",
          absl::StrCat("must be a node label key of 1..", kMaxLabelLength,
                       " characters without spaces, ',' or '='; got \"", r.key(), "\""));
    }
    const std::string& op = r.operator_();
    if (op != "In" && op != "NotIn" && op != "Exists") {
      return InvalidSelection(at + ".operator",
                              absl::StrCat("must be In, NotIn or Exists; got \"", op, "\""));
    }
    if (op == "Exists" && r.values_size() > 0) {
      return InvalidSelection(at + ".values", "must be empty for operator Exists");
    }
    if (op != "Exists" && r.values_size() == 0) {
      return InvalidSelection(at + ".values",
                              absl::StrCat("must list at least one value for operator ", op));
    }
    for (int v = 0; v < r.values_size(); ++v) {
      if (!ValidLabelText(r.values(v))) {
        return InvalidSelection(
            absl::StrCat(at, ".values[", v, "]"),
            absl::StrCat("must be 1..", kMaxLabelLength,
                         " characters without spaces, ',' or '='; got \"", r.values(v), "\""));
      }
    }
  }
  return absl::OkStatus();
}

bool CanRunImages(const NodeLabels* labels) {
  const std::string* have = ValueOf(labels, kImagesLabel);
  return have != nullptr && *have == "true";
}

bool HasNodeSelection(const v1::WorkerPool& pool) {
  return pool.node_selector_size() > 0 || pool.node_affinity_size() > 0 || !pool.image().empty();
}

bool MatchesNodeSelection(const v1::WorkerPool& pool, const NodeLabels* labels) {
  if (!pool.image().empty() && !CanRunImages(labels)) return false;
  for (const auto& [key, value] : pool.node_selector()) {
    const std::string* have = ValueOf(labels, key);
    if (have == nullptr || *have != value) return false;
  }
  for (const v1::NodeSelectorRequirement& r : pool.node_affinity()) {
    const std::string* have = ValueOf(labels, r.key());
    const bool listed = have != nullptr &&
                        std::find(r.values().begin(), r.values().end(), *have) != r.values().end();
    if (r.operator_() == "Exists" && have == nullptr) return false;
    if (r.operator_() == "In" && !listed) return false;
    if (r.operator_() == "NotIn" && listed) return false;
  }
  return true;
}

std::string DescribeNodeSelection(const v1::WorkerPool& pool) {
  std::vector<std::string> parts;
  // The protobuf map has no order: sort for a stable message (and cache key).
  std::map<std::string, std::string> selector(pool.node_selector().begin(),
                                              pool.node_selector().end());
  for (const auto& [key, value] : selector) parts.push_back(absl::StrCat(key, "=", value));
  for (const v1::NodeSelectorRequirement& r : pool.node_affinity()) {
    parts.push_back(r.operator_() == "Exists" ? absl::StrCat(r.key(), " Exists")
                                              : absl::StrCat(r.key(), " ", r.operator_(), " (",
                                                             absl::StrJoin(r.values(), ","), ")"));
  }
  return absl::StrJoin(parts, ", ");
}

std::string NoNodeMatches(int index, const v1::WorkerPool& pool,
                          const std::vector<NodeFree>& nodes) {
  const std::string which = absl::StrCat("workerPools[", index, "] (", pool.name(), ")");
  const std::string images = absl::StrCat("can run images (label ", kImagesLabel, "=true)");
  const bool own_rules = pool.node_selector_size() > 0 || pool.node_affinity_size() > 0;
  if (pool.image().empty() ||
      (own_rules && std::any_of(nodes.begin(), nodes.end(),
                                [](const NodeFree& n) { return CanRunImages(n.labels.get()); }))) {
    // No image, or nodes that can run images exist: the pool's own rules leave none of them.
    std::string out = absl::StrCat("no schedulable node matches ", which, " node selection ",
                                   DescribeNodeSelection(pool));
    if (!pool.image().empty()) absl::StrAppend(&out, " and ", images);
    return out;
  }
  return absl::StrCat("no schedulable node ", images, " for ", which);
}

const std::vector<char>* NodeMasks::For(const v1::WorkerPool& pool) {
  if (!HasNodeSelection(pool)) return nullptr;
  // The image's rule is not in DescribeNodeSelection: it marks the key with a '=' first, which
  // no label key (nor so a description) starts with.
  auto [it, inserted] = masks_.try_emplace(
      absl::StrCat(pool.image().empty() ? "" : "=images ", DescribeNodeSelection(pool)));
  if (inserted) {
    it->second.resize(nodes_->size());
    for (size_t i = 0; i < nodes_->size(); ++i) {
      it->second[i] = MatchesNodeSelection(pool, (*nodes_)[i].labels.get()) ? 1 : 0;
    }
  }
  return &it->second;
}

bool NodeMasks::None(const std::vector<char>& mask) {
  return std::none_of(mask.begin(), mask.end(), [](char c) { return c != 0; });
}

}  // namespace trainctl::sched
