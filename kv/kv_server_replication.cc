// KVServer: primary-backup replication of pushes (docs/failures.md,
// "Replicated servers"). Kept apart from kv_server.cc's request path.
#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "kv/kv_server.h"
#include "van/postoffice.h"

namespace petrel {
namespace {

std::tuple<int, int, int, int> KeyOf(const ReplyAddress& to) {
  return std::make_tuple(to.sender, to.customer_id, to.timestamp, to.part);
}

}  // namespace

template <typename Val>
void KVServer<Val>::ProcessForwarded(const Message& msg, const KVMeta& meta,
                                     const KVPairs<Val>& data, bool duplicate) {
  const pb::Meta& m = msg.meta;
  if (duplicate || dedup_.SeenOrRecord(m.origin_sender(), m.origin_customer(),
                                       m.origin_node(), m.origin_seq(),
                                       m.origin_in_order())) {
    if (copies_duplicate_ != nullptr) copies_duplicate_->Increment();
    Response(meta).IgnoreError();
    return;
  }
  if (copies_applied_ != nullptr) copies_applied_->Increment();
  // The handler applies it as the primary did (same data, same order per
  // key) and answers the primary.
  handler_(meta, data, this);
}

template <typename Val>
bool KVServer<Val>::SeenAsResentCopy(const Message& msg) {
  const bool seen = dedup_.SeenOrRecord(
      msg.meta.sender(), msg.meta.customer_id(), msg.meta.origin_node(),
      msg.meta.origin_seq(), /*in_order=*/false);
  Counter* c = seen ? copies_duplicate_ : copies_applied_;
  if (c != nullptr) c->Increment();
  return seen;
}

template <typename Val>
const std::vector<int>& KVServer<Val>::Backups() {
  Postoffice* po = customer_.postoffice();
  const uint64_t version = po->map_version();
  if (version != backups_version_) {
    backups_version_ = version;
    backups_.clear();
    if (version > 0) {
      const ReplicaMap map = po->replica_map();
      for (int rank : map.BackupsOf(po->my_rank())) {
        backups_.push_back(ServerRankToId(rank));
      }
      // A push sent by the previous map for a range this server led there
      // reaches its new primary and replicas too (docs/failures.md,
      // "Elastic servers").
      if (version != owners_version_) {
        owners_version_ = version;
        previous_owners_ = std::move(current_owners_);
        current_owners_ = map.ranges().owners();
      }
      for (int rank : map.HandoffTargetsOf(po->my_rank(), previous_owners_)) {
        const int id = ServerRankToId(rank);
        if (std::find(backups_.begin(), backups_.end(), id) == backups_.end()) {
          backups_.push_back(id);
        }
      }
      if (map.replicas() > 1) replicating_.store(true);
      // A replacement the map lists as live is a backup like the others
      // (when it holds a range this server leads); one still dead is not
      // there yet and stays a copy target (kv_server_range_copy.cc).
      // A server that was live already when it asked for a copy (a drain)
      // stays a copy target until the map after that.
      if (version > copy_targets_version_) {
        copy_targets_.erase(
            std::remove_if(copy_targets_.begin(), copy_targets_.end(),
                           [&map](int id) {
                             const int rank = (id - ServerRankToId(0)) / 2;
                             return rank < map.ranges().num_servers() &&
                                    !map.dead(rank);
                           }),
            copy_targets_.end());
      }
    }
    for (int id : copy_targets_) {
      if (std::find(backups_.begin(), backups_.end(), id) == backups_.end()) {
        backups_.push_back(id);
      }
    }
  }
  return backups_;
}

template <typename Val>
void KVServer<Val>::Forward(const Message& msg, const KVMeta& meta) {
  // This server's own streams, as its backups record them: a copy to a
  // replacement carries them, so that a request resent there after this
  // server's death is not applied twice.
  if (msg.meta.origin_node() == 0 && msg.meta.seq() > 0) {
    dedup_.SeenOrRecord(msg.meta.sender(), msg.meta.customer_id(),
                        customer_.postoffice()->my_id(), msg.meta.seq(),
                        /*in_order=*/true);
  }
  Postoffice* po = customer_.postoffice();
  // A push sliced by a newer map than this server's: the backups of the
  // older one may miss a replica of its ranges. The scheduler gives the
  // servers a map before the workers, so none should come (counted).
  if (msg.meta.origin_node() == 0 &&
      msg.meta.map_version() > po->map_version()) {
    if (ahead_of_map_ != nullptr) ahead_of_map_->Increment();
    LOG_EVERY_T(WARNING, 1.0)
        << "node " << po->my_id() << ": a push from node " << meta.sender
        << " was sliced by key-range map version " << msg.meta.map_version()
        << ", this server routes by version " << po->map_version();
  }
  // From the map's read until the copies are registered (a drain waits for
  // them to be registered or routed by the new map).
  std::optional<Postoffice::RoutingScope> routing(std::in_place, po);
  const std::vector<int>& backups = Backups();
  if (backups.empty()) return;
  const ReplyAddress to = meta.reply_address();
  {
    absl::MutexLock lock(&answers_mu_);
    answers_.try_emplace(KeyOf(to));
  }
  // A backup declared dead meanwhile fails its part at once: that counts
  // as done (OnForwarded runs either way).
  const int ts =
      customer_.NewRequest(backups, [this, to](int) { OnForwarded(to); });
  routing.reset();
  for (int id : backups) {
    Message copy = ForwardCopy(msg, po->my_id(), po->map_version());
    copy.meta.set_recipient(id);
    copy.meta.set_timestamp(ts);
    absl::Status s = customer_.SendRequest(std::move(copy));
    if (!s.ok()) {
      LOG_EVERY_T(WARNING, 1.0) << "forward to node " << id << ": " << s;
    }
  }
  if (forwarded_ != nullptr) forwarded_->Increment(backups.size());
}

template <typename Val>
bool KVServer<Val>::DeferResponse(const ReplyAddress& to, Message* response) {
  absl::MutexLock lock(&answers_mu_);
  auto it = answers_.find(KeyOf(to));
  if (it == answers_.end()) return false;
  if (it->second.copies_done) {
    answers_.erase(it);
    return false;
  }
  it->second.held = true;
  it->second.response = std::move(*response);
  return true;
}

template <typename Val>
void KVServer<Val>::OnForwarded(const ReplyAddress& to) {
  Message response;
  {
    absl::MutexLock lock(&answers_mu_);
    auto it = answers_.find(KeyOf(to));
    if (it == answers_.end()) return;
    if (!it->second.held) {
      it->second.copies_done = true;  // the handler answers later
      return;
    }
    response = std::move(it->second.response);
    answers_.erase(it);
  }
  absl::Status s = customer_.SendResponse(to, std::move(response));
  if (!s.ok()) {
    LOG_EVERY_T(WARNING, 1.0) << "response: " << s;
  }
}

template <typename Val>
bool KVServer<Val>::AnswerPending(const ReplyAddress& to) {
  absl::MutexLock lock(&answers_mu_);
  return answers_.contains(KeyOf(to));
}

template class KVServer<float>;
template class KVServer<double>;
template class KVServer<int32_t>;
template class KVServer<int64_t>;

}  // namespace petrel
