// RangeCopy<Val>: a KVServer's copy of key ranges to a server that is to
// hold them (docs/failures.md, "Replacement servers", "Elastic servers").
// The copying server asks each live primary of the ranges (CopyFrom); the
// primary takes the request in its request order, so the rows it snapshots
// hold exactly the pushes it applied before, sends them with its
// duplicate-detection state, and from then on forwards every push to the
// copying server as to a backup (ServerReplication::AddCopyTarget). Its
// copy and its forwards are requests of one customer to one node, numbered
// in sequence: the copying server applies the copy before any forward.
//
// Supported Val: float, double, int32_t, int64_t.
//
// Thread safety: the Process* calls run on the KVServer's handler thread;
// CopyFrom on any other (it waits for the answer).
#ifndef PETREL_KV_REPLICATION_RANGE_COPY_H_
#define PETREL_KV_REPLICATION_RANGE_COPY_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#include "cluster/customer.h"
#include "kv/kv_codec.h"
#include "kv/replication/server_replication.h"
#include "store/kv_pairs.h"
#include "van/message.h"

namespace petrel {

template <typename Val>
class KVServer;

template <typename Val>
class RangeCopy {
 public:
  // `snapshot` returns the rows of the keys its argument selects; `install`
  // stores rows received so (keys, values, lens) as they are. Both run on
  // the handler's thread, in order with the requests.
  using SnapshotFn =
      std::function<KVPairs<Val>(const std::function<bool(Key)>& keep)>;
  using InstallFn = std::function<absl::Status(const KVPairs<Val>& rows)>;

  // `server` (whose answers the copy's go through), `customer` (its) and
  // `replication` must outlive this object.
  RangeCopy(KVServer<Val>* server, Customer* customer,
            ServerReplication* replication);
  RangeCopy(const RangeCopy&) = delete;
  RangeCopy& operator=(const RangeCopy&) = delete;

  // Before the server starts; without them the server refuses copies.
  void set_functions(SnapshotFn snapshot, InstallFn install) {
    snapshot_ = std::move(snapshot);
    install_ = std::move(install);
  }

  // KVServer::CopyRangesFrom: asks server `source` (a node id) for its copy
  // of the key ranges `ranges` (indices in the key-range map). Returns once
  // the copy is applied here, or the error (DeadlineExceeded after
  // `timeout`; FailedPrecondition from a source without a range copy).
  absl::Status CopyFrom(int source, const std::vector<int>& ranges,
                        absl::Duration timeout);
  // The source's side of a copy request (range_copy 1).
  void ProcessRequest(const Message& msg, const KVMeta& meta,
                      const KVPairs<Val>& data, bool duplicate);
  // The copying server's side of a copy received (range_copy 2).
  void ProcessCopy(const Message& msg, const KVMeta& meta,
                   const KVPairs<Val>& data, bool duplicate);
  // Records the error of an answer to a copy or its request (every
  // response the server's customer gets).
  void OnResponse(const Message& response);
  // Rows received by copies (for logs and tests); any thread.
  int64_t rows_copied_in() const { return rows_copied_in_.load(); }

 private:
  // The rows of the key ranges `ranges.keys` names (indices in the map);
  // InvalidArgument for a range the map does not have.
  absl::StatusOr<KVPairs<Val>> Snapshot(const KVPairs<Val>& ranges);
  // Sends part `i` of `n` to `to`; `done` runs with its request's failure
  // (OK: answered).
  void SendPart(int to, const KVPairs<Val>& part, size_t i, size_t n,
                std::function<void(absl::Status)> done);
  // The error an answer to request `ts` of this customer carried, taken.
  absl::Status TakeError(int ts);

  KVServer<Val>* const server_;
  Customer* const customer_;
  ServerReplication* const replication_;
  SnapshotFn snapshot_;
  InstallFn install_;
  std::atomic<int64_t> rows_copied_in_{0};
  absl::Mutex mu_;
  // Errors answered to this server's copies and copy requests, by
  // timestamp.
  absl::flat_hash_map<int, absl::Status> errors_ ABSL_GUARDED_BY(mu_);
};

}  // namespace petrel

#endif  // PETREL_KV_REPLICATION_RANGE_COPY_H_
