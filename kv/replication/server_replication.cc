#include "kv/replication/server_replication.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "cluster/postoffice.h"

namespace petrel {
namespace {

std::tuple<int, int, int, int> KeyOf(const ReplyAddress& to) {
  return std::make_tuple(to.sender, to.customer_id, to.timestamp, to.part);
}

// The pairs of `data` whose keys fall in the ranges `keep` (ascending).
template <typename Val>
KVPairs<Val> KeepRangesOf(const KVPairs<Val>& data, const KeyRangeMap& map,
                          const ReplicaDedup::Ranges& keep) {
  KVPairs<Val> out;
  const size_t n = data.keys.size();
  if (n == 0) return out;
  const size_t width = data.lens.empty() ? data.vals.size() / n : 0;
  std::vector<Key> keys;
  std::vector<Val> vals;
  std::vector<int> lens;
  size_t offset = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t count =
        data.lens.empty() ? width : static_cast<size_t>(data.lens[i]);
    const uint32_t range = static_cast<uint32_t>(map.RangeOf(data.keys[i]));
    if (std::binary_search(keep.begin(), keep.end(), range)) {
      keys.push_back(data.keys[i]);
      vals.insert(vals.end(), data.vals.data() + offset,
                  data.vals.data() + offset + count);
      if (!data.lens.empty()) lens.push_back(data.lens[i]);
    }
    offset += count;
  }
  out.keys = SArray<Key>::CopyOf(keys);
  out.vals = SArray<Val>::CopyOf(vals);
  if (!data.lens.empty()) out.lens = SArray<int>::CopyOf(lens);
  return out;
}

}  // namespace

ServerReplication::ServerReplication(Customer* customer)
    : customer_(customer) {}

void ServerReplication::Start(MetricsRegistry* metrics) {
  forwarded_ = metrics->GetCounter(
      "petrel_server_replication_forwarded_total",
      "Pushes this primary forwarded to a backup (one per backup).");
  copies_applied_ = metrics->GetCounter(
      "petrel_server_replication_applied_total",
      "Copies of pushes applied here: forwarded by a primary, or resent to "
      "this server after a failover.");
  ahead_of_map_ = metrics->GetCounter(
      "petrel_server_pushes_ahead_of_map_total",
      "Pushes sliced by a newer key-range map than this server routed by "
      "when it forwarded them to its backups (none in a drain, whose map "
      "reaches the servers before the workers).");
  copies_duplicate_ = metrics->GetCounter(
      "petrel_server_replication_duplicates_total",
      "Copies of pushes not applied again: this server had them already.");
}

template <typename Val>
bool ServerReplication::SeenOrRecordPiece(int sender, int customer,
                                          const Message& msg,
                                          const KVPairs<Val>& data,
                                          bool in_order, KVPairs<Val>* part) {
  const pb::Meta& m = msg.meta;
  if (in_order) {
    return dedup_.SeenOrRecord(sender, customer, m.origin_node(),
                               m.origin_seq(), /*in_order=*/true);
  }
  // Resent after a failover: a piece of the push, cut by a map; applied
  // once per key range (forwarding.h).
  const KeyRangeMap map = customer_->postoffice()->key_ranges();
  const ReplicaDedup::Ranges ranges = RangesOfKeys(map, data.keys);
  ReplicaDedup::Ranges fresh;
  if (dedup_.SeenOrRecord(sender, customer, m.origin_node(), m.origin_seq(),
                          /*in_order=*/false, &ranges, &fresh)) {
    return true;
  }
  if (fresh.size() < ranges.size()) {
    // Some of its ranges were applied under this number before: only the
    // others' keys now.
    LOG_EVERY_T(WARNING, 1.0)
        << "push " << m.origin_seq() << " of node " << sender
        << " (first sent to node " << m.origin_node() << "): " << fresh.size()
        << " of its " << ranges.size()
        << " key ranges are new here; applying only those";
    *part = KeepRangesOf(data, map, fresh);
  }
  return false;
}

template <typename Val>
bool ServerReplication::SeenAsResentCopy(const Message& msg,
                                         const KVPairs<Val>& data,
                                         KVPairs<Val>* part) {
  const bool seen =
      SeenOrRecordPiece(msg.meta.sender(), msg.meta.customer_id(), msg, data,
                        /*in_order=*/false, part);
  CountCopy(seen);
  return seen;
}

void ServerReplication::CountCopy(bool duplicate) {
  Counter* c = duplicate ? copies_duplicate_ : copies_applied_;
  if (c != nullptr) c->Increment();
}

void ServerReplication::AddCopyTarget(int to) {
  if (std::find(copy_targets_.begin(), copy_targets_.end(), to) ==
      copy_targets_.end()) {
    copy_targets_.push_back(to);
  }
  copy_targets_version_ = customer_->postoffice()->map_version();
  backups_version_ = ~uint64_t{0};
  replicating_.store(true);
}

const std::vector<int>& ServerReplication::Backups() {
  Postoffice* po = customer_->postoffice();
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
      // there yet and stays a copy target (range_copy.cc).
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

void ServerReplication::Forward(const Message& msg, const KVMeta& meta) {
  // This server's own streams, as its backups record them: a copy to a
  // replacement carries them, so that a request resent there after this
  // server's death is not applied twice.
  if (msg.meta.origin_node() == 0 && msg.meta.seq() > 0) {
    dedup_.SeenOrRecord(msg.meta.sender(), msg.meta.customer_id(),
                        customer_->postoffice()->my_id(), msg.meta.seq(),
                        /*in_order=*/true);
  }
  Postoffice* po = customer_->postoffice();
  // A push sliced by a newer map than this server's: the backups of the
  // older one may miss a replica of its ranges. The Postoffice holds such a
  // request until this server has the map (HoldIfAheadOfMap), so none
  // should come past the hold's deadline (counted).
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
      customer_->NewRequest(backups, [this, to](int) { OnForwarded(to); });
  routing.reset();
  for (int id : backups) {
    Message copy = ForwardCopy(msg, po->my_id(), po->map_version());
    copy.meta.set_recipient(id);
    copy.meta.set_timestamp(ts);
    absl::Status s = customer_->SendRequest(std::move(copy));
    if (!s.ok()) {
      LOG_EVERY_T(WARNING, 1.0) << "forward to node " << id << ": " << s;
    }
  }
  if (forwarded_ != nullptr) forwarded_->Increment(backups.size());
}

bool ServerReplication::DeferResponse(const ReplyAddress& to,
                                      Message* response) {
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

void ServerReplication::OnForwarded(const ReplyAddress& to) {
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
  absl::Status s = customer_->SendResponse(to, std::move(response));
  if (!s.ok()) {
    LOG_EVERY_T(WARNING, 1.0) << "response: " << s;
  }
}

bool ServerReplication::AnswerPending(const ReplyAddress& to) {
  absl::MutexLock lock(&answers_mu_);
  return answers_.contains(KeyOf(to));
}

#define PETREL_INSTANTIATE(Val)                                            \
  template bool ServerReplication::SeenOrRecordPiece<Val>(                 \
      int, int, const Message&, const KVPairs<Val>&, bool, KVPairs<Val>*); \
  template bool ServerReplication::SeenAsResentCopy<Val>(                  \
      const Message&, const KVPairs<Val>&, KVPairs<Val>*);
PETREL_INSTANTIATE(float)
PETREL_INSTANTIATE(double)
PETREL_INSTANTIATE(int32_t)
PETREL_INSTANTIATE(int64_t)
#undef PETREL_INSTANTIATE

}  // namespace petrel
