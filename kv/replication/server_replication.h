// ServerReplication: a KVServer's part in primary-backup replication
// (docs/failures.md, "Replicated servers"). A primary forwards each push to
// the live backups of its ranges (and to the servers it copies ranges to)
// and answers it only once they all acknowledged; a backup, and a new
// primary that gets a push resent after a failover, applies a copy once, by
// its origin (ReplicaDedup).
//
// Thread safety: Forward, the duplicate checks and the copy targets run on
// the KVServer's handler thread; DeferResponse and AnswerPending on any
// thread.
#ifndef PETREL_KV_REPLICATION_SERVER_REPLICATION_H_
#define PETREL_KV_REPLICATION_SERVER_REPLICATION_H_

#include <atomic>
#include <cstdint>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

#include "base/metrics.h"
#include "cluster/customer.h"
#include "kv/kv_codec.h"
#include "kv/replication/forwarding.h"
#include "store/kv_pairs.h"
#include "van/message.h"

namespace petrel {

class ServerReplication {
 public:
  // `customer` is the KVServer's and must outlive this object.
  explicit ServerReplication(Customer* customer);
  ServerReplication(const ServerReplication&) = delete;
  ServerReplication& operator=(const ServerReplication&) = delete;

  // Registers the metrics (petrel_server_replication_*_total,
  // petrel_server_pushes_ahead_of_map_total); from KVServer::Start.
  void Start(MetricsRegistry* metrics);

  // Whether pushes may be forwarded (the map replicates, or a range copy
  // went out): only then may an answer wait for copies. Cheap.
  bool active() const { return replicating_.load(std::memory_order_relaxed); }

  // The duplicate check of a push named by its origin (forwarded, or
  // resent after a failover) from stream (sender, customer, origin node):
  // in order, by number; out of order, by number and key ranges
  // (ReplicaDedup). A piece some of whose key ranges were applied under its
  // number before leaves the others' pairs in `*part` (else untouched:
  // apply `data`).
  template <typename Val>
  bool SeenOrRecordPiece(int sender, int customer, const Message& msg,
                         const KVPairs<Val>& data, bool in_order,
                         KVPairs<Val>* part);
  // Whether push `msg` was applied before as a copy resent after a
  // failover (it names its origin); records it otherwise. `*part` as for
  // SeenOrRecordPiece. Counts the copy applied or a duplicate.
  template <typename Val>
  bool SeenAsResentCopy(const Message& msg, const KVPairs<Val>& data,
                        KVPairs<Val>* part);
  // Counts a forwarded copy applied here, or not applied again.
  void CountCopy(bool duplicate);

  // Primary: sends the copies of push `msg` to the backups; its answer then
  // waits for them (DeferResponse).
  void Forward(const Message& msg, const KVMeta& meta);
  // Holds `response` to `to` while its request's copies are unanswered:
  // true when held (sent once they are).
  bool DeferResponse(const ReplyAddress& to, Message* response);
  // Whether the answer to `to` is held or still to come.
  bool AnswerPending(const ReplyAddress& to);

  // A range copy's source: every push handled from now on goes to server
  // node `to` too, as to a backup.
  void AddCopyTarget(int to);
  // The duplicate-detection state: what a range copy carries along, and
  // where a copy received imports it. Handler thread only.
  ReplicaDedup& dedup() { return dedup_; }

 private:
  // The backups' node ids for the current map.
  const std::vector<int>& Backups();
  void OnForwarded(const ReplyAddress& to);

  Customer* const customer_;
  // Replacements this server forwards to besides the map's backups (node
  // ids); handler thread only.
  std::vector<int> copy_targets_;
  // The map version when the last copy target was added: a target the map
  // lists as live (a server that gains ranges in a drain) stays one until
  // the map moves on.
  uint64_t copy_targets_version_ = 0;  // handler thread only

  using AnswerKey = std::tuple<int, int, int, int>;
  struct HeldAnswer {
    bool copies_done = false;
    bool held = false;
    Message response;
  };
  ReplicaDedup dedup_;                       // handler thread only
  uint64_t backups_version_ = ~uint64_t{0};  // handler thread only
  std::vector<int> backups_;                 // handler thread only
  // The primaries of the map before the current one: ranges this server
  // led there and no longer leads are handed off (elastic servers).
  std::vector<int32_t> previous_owners_;  // handler thread only
  std::vector<int32_t> current_owners_;   // handler thread only
  uint64_t owners_version_ = 0;           // handler thread only
  std::atomic<bool> replicating_{false};
  absl::Mutex answers_mu_;
  absl::flat_hash_map<AnswerKey, HeldAnswer> answers_
      ABSL_GUARDED_BY(answers_mu_);
  // petrel_server_replication_{forwarded,applied,duplicates}_total.
  Counter* forwarded_ = nullptr;
  Counter* copies_applied_ = nullptr;
  Counter* copies_duplicate_ = nullptr;
  // petrel_server_pushes_ahead_of_map_total.
  Counter* ahead_of_map_ = nullptr;
};

}  // namespace petrel

#endif  // PETREL_KV_REPLICATION_SERVER_REPLICATION_H_
