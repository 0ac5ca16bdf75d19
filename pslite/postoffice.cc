#include "ps/internal/postoffice.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <utility>

#include "absl/synchronization/mutex.h"

#include "cluster/postoffice.h"
#include "ps/base.h"
#include "pslite/fatal.h"
#include "pslite/node.h"
#include "pslite/node_environment.h"

namespace ps {

using petrel::pslite::PsLiteNode;

// The process's nodes: node 0, and for a worker one more per customer that
// called Start. Exit callbacks run when the last started node stops.
class Postoffice::Nodes {
 public:
  explicit Nodes(petrel::pslite::PsLiteSettings settings)
      : settings_(std::move(settings)) {
    first_ = Make(settings_);
  }

  const petrel::pslite::PsLiteSettings& settings() const { return settings_; }
  PsLiteNode* first() { return first_; }

  // The node customer `customer_id` starts: its own for a worker's, else
  // node 0.
  PsLiteNode* ForStart(int customer_id) {
    absl::MutexLock lock(&mu_);
    PsLiteNode* node = first_;
    if (customer_id != 0 &&
        settings_.node.postoffice.role == petrel::pb::ROLE_WORKER) {
      auto it = by_customer_.find(customer_id);
      if (it == by_customer_.end()) {
        petrel::pslite::PsLiteSettings own = settings_;
        own.node.van.port = 0;  // DMLC_PORT is node 0's
        it = by_customer_.emplace(customer_id, Make(own)).first;
      }
      node = it->second;
    }
    if (started_.insert(node).second) ++running_;
    return node;
  }

  // The node customer `customer_id` talks through.
  PsLiteNode* For(int customer_id) {
    absl::MutexLock lock(&mu_);
    auto it = by_customer_.find(customer_id);
    return it == by_customer_.end() ? first_ : it->second;
  }

  void RegisterExitCallback(const std::function<void()>& cb) {
    absl::MutexLock lock(&mu_);
    exit_callbacks_.push_back(cb);
  }

  const std::vector<int>& GetNodeIDs(int node_group) {
    std::vector<int> ids = first_->postoffice()->GetNodeIds(node_group);
    absl::MutexLock lock(&mu_);
    std::vector<int>& kept = group_ids_[node_group];
    if (kept != ids) kept = std::move(ids);
    return kept;
  }

  const std::vector<Range>& GetServerKeyRanges() {
    const int n = first_->postoffice()->num_servers();
    absl::MutexLock lock(&mu_);
    if (server_ranges_.size() != static_cast<size_t>(n)) {
      server_ranges_.clear();
      for (int i = 0; i < n; ++i) {
        server_ranges_.emplace_back(kMaxKey / n * i, kMaxKey / n * (i + 1));
      }
    }
    return server_ranges_;
  }

 private:
  PsLiteNode* Make(const petrel::pslite::PsLiteSettings& settings) {
    nodes_.push_back(
        std::make_unique<PsLiteNode>(settings, [this] { NodeStopping(); }));
    return nodes_.back().get();
  }

  // A node's job ended; the last one runs the exit callbacks.
  void NodeStopping() {
    std::vector<std::function<void()>> callbacks;
    {
      absl::MutexLock lock(&mu_);
      if (--running_ > 0) return;
      callbacks.swap(exit_callbacks_);
    }
    for (const auto& cb : callbacks) cb();
  }

  const petrel::pslite::PsLiteSettings settings_;
  absl::Mutex mu_;
  // Never shrinks: nodes live as long as the process's Postoffice.
  std::vector<std::unique_ptr<PsLiteNode>> nodes_;
  PsLiteNode* first_ = nullptr;
  std::map<int, PsLiteNode*> by_customer_ ABSL_GUARDED_BY(mu_);
  std::set<PsLiteNode*> started_ ABSL_GUARDED_BY(mu_);
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::function<void()>> exit_callbacks_ ABSL_GUARDED_BY(mu_);
  // Kept so that the references handed out stay valid.
  std::map<int, std::vector<int>> group_ids_ ABSL_GUARDED_BY(mu_);
  std::vector<Range> server_ranges_ ABSL_GUARDED_BY(mu_);
};

Postoffice* Postoffice::Get() {
  // Never destroyed: a PS-Lite program may exit without Finalize, with the
  // node's threads still running.
  static Postoffice* const postoffice = new Postoffice();
  return postoffice;
}

Postoffice::Postoffice() {
  absl::StatusOr<petrel::pslite::PsLiteSettings> settings =
      petrel::pslite::SettingsFromEnvironment(&std::getenv);
  if (!settings.ok()) {
    petrel::pslite::Die(settings.status(), "the PS-Lite environment");
  }
  nodes_ = std::make_unique<Nodes>(*std::move(settings));
}

Postoffice::~Postoffice() = default;

void Postoffice::Start(int customer_id, const char* argv0, bool do_barrier) {
  nodes_->ForStart(customer_id)->Start(customer_id, argv0, do_barrier);
}

void Postoffice::Finalize(int customer_id, bool do_barrier) {
  nodes_->For(customer_id)->Finalize(customer_id, do_barrier);
}

void Postoffice::RegisterExitCallback(const std::function<void()>& cb) {
  nodes_->RegisterExitCallback(cb);
}

void Postoffice::Barrier(int customer_id, int node_group) {
  nodes_->For(customer_id)->Barrier(node_group);
}

bool Postoffice::is_scheduler() const {
  return nodes_->settings().node.postoffice.role == petrel::pb::ROLE_SCHEDULER;
}
bool Postoffice::is_server() const {
  return nodes_->settings().node.postoffice.role == petrel::pb::ROLE_SERVER;
}
bool Postoffice::is_worker() const {
  return nodes_->settings().node.postoffice.role == petrel::pb::ROLE_WORKER;
}
int Postoffice::my_rank() const {
  return std::max(nodes_->first()->postoffice()->my_rank(), 0);
}
int Postoffice::num_servers() const {
  return nodes_->first()->postoffice()->num_servers();
}
int Postoffice::num_workers() const {
  return nodes_->first()->postoffice()->num_workers();
}
const std::vector<Range>& Postoffice::GetServerKeyRanges() {
  return nodes_->GetServerKeyRanges();
}
const std::vector<int>& Postoffice::GetNodeIDs(int node_group) const {
  return nodes_->GetNodeIDs(node_group);
}
int Postoffice::verbose() const { return nodes_->settings().verbose; }
petrel::Postoffice* Postoffice::petrel(int customer_id) {
  return nodes_->For(customer_id)->postoffice();
}

}  // namespace ps
