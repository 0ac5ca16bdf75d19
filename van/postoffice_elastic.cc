// Postoffice: elastic servers (docs/failures.md, "Elastic servers"). A
// server added to a running job is one more server of the table and of the
// ring: every node learns it from the scheduler's NODE_BACK, connects to
// it, and routes by the map that gives it its share once it holds it.
#include <algorithm>

#include "van/postoffice.h"

namespace petrel {

bool Postoffice::AddServerLocked(const pb::Node& node) {
  for (const pb::Node& n : nodes_) {
    if (n.id() == node.id()) return false;
  }
  nodes_.push_back(node);
  num_servers_ = std::max(num_servers_, node.rank() + 1);
  return true;
}

void Postoffice::AddServer(const pb::Node& node) {
  absl::MutexLock lock(&mu_);
  AddServerLocked(node);
}

bool Postoffice::joined_as_added() const {
  absl::MutexLock lock(&mu_);
  return joined_as_added_;
}

}  // namespace petrel
