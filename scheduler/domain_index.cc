#include "scheduler/domain_index.h"

#include <map>

#include "scheduler/node_free.h"

namespace trainctl::sched {

DomainIndex::DomainIndex(std::string key, const std::vector<NodeFree>& nodes)
    : key_(std::move(key)), domain_of_(nodes.size(), -1) {
  std::map<std::string, std::vector<int>> by_value;
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    if (nodes[i].labels == nullptr) continue;
    auto it = nodes[i].labels->find(key_);
    if (it != nodes[i].labels->end()) by_value[it->second].push_back(i);
  }
  values_.reserve(by_value.size());
  nodes_.reserve(by_value.size());
  free_.resize(by_value.size());
  for (auto& [value, members] : by_value) {
    const int d = static_cast<int>(values_.size());
    for (int i : members) {
      domain_of_[i] = d;
      free_[d] += nodes[i].free;
    }
    values_.push_back(value);
    nodes_.push_back(std::move(members));
  }
}

void DomainIndex::Update(int index, const Res& before, const Res& after) {
  const int d = domain_of_[index];
  if (d < 0) return;
  free_[d] -= before;
  free_[d] += after;
}

}  // namespace trainctl::sched
