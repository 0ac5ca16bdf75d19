// KVServer<Val>: the server side of push/pull. Each request is checked and
// decoded by kv_codec and reaches a handler as a KVMeta and KVPairs (sharing
// the received buffers); the handler answers with Response or ResponseError.
// A request that fails the KV layout checks is dropped, counted in
// petrel_van_messages_rejected_total{reason="kv_layout"} and logged (rate
// limited). One whose layout is sound but whose values are of another type
// than Val is counted the same way and answered with InvalidArgument
// naming both types (kv_codec's CheckKvValueType), never reinterpreted. A
// resent push that was already applied is acknowledged without calling the
// handler again (exactly once); a resent push-pull is handled as a pull.
// Also KVStoreHandler, a default handler (an in-memory store).
//
// Supported Val: float, double, int32_t, int64_t.
//
// Thread safety: the handler runs one request at a time; Response may be
// called from any thread. See docs/threading.md.
#ifndef PETREL_KV_KV_SERVER_H_
#define PETREL_KV_KV_SERVER_H_

#include <functional>
#include <vector>

#include "absl/status/status.h"

#include "base/shard_pool.h"
#include "cluster/customer.h"
#include "kv/kv_codec.h"
#include "kv/replication/range_copy.h"
#include "kv/replication/server_replication.h"
#include "store/kv_store.h"
#include "van/buffer.h"

namespace petrel {

template <typename Val>
class KVServer {
 public:
  using Handler = std::function<void(
      const KVMeta& meta, const KVPairs<Val>& data, KVServer* server)>;

  // `postoffice` must outlive the KVServer.
  KVServer(int app_id, Postoffice* postoffice, CustomerOptions options = {});
  ~KVServer();
  KVServer(const KVServer&) = delete;
  KVServer& operator=(const KVServer&) = delete;

  // Set before Start. With `accepts_key_slices` the handler also gets push
  // parts holding a slice of one key's values (KVMeta::value_total > 0);
  // without, such a part is answered with InvalidArgument.
  void set_request_handler(Handler h, bool accepts_key_slices = false) {
    handler_ = std::move(h);
    accepts_key_slices_ = accepts_key_slices;
  }
  absl::Status Start();

  // Range copy to a replacement server (kv/replication/range_copy.h;
  // docs/failures.md, "Replacement servers"). `snapshot` returns the rows
  // of the keys its argument selects; `install` stores rows received so
  // (keys, values, lens) as they are. Both run on the handler's thread, in
  // order with the requests. Set before Start; KVStoreHandler's
  // EnableRangeCopy sets them for its store.
  using SnapshotFn = typename RangeCopy<Val>::SnapshotFn;
  using InstallFn = typename RangeCopy<Val>::InstallFn;
  void set_range_copy(SnapshotFn snapshot, InstallFn install) {
    range_copy_.set_functions(std::move(snapshot), std::move(install));
  }
  // On the replacement: asks server `source` (a node id) for its copy of
  // the key ranges `ranges` (indices in the key-range map). The source
  // takes it in its request order, sends it, and from then on forwards
  // every push it applies to this server as to a backup (its answers wait
  // for this server's too). Returns once the copy is applied here, or the
  // error (DeadlineExceeded after `timeout`; FailedPrecondition from a
  // source without a range copy).
  absl::Status CopyRangesFrom(int source, const std::vector<int>& ranges,
                              absl::Duration timeout) {
    return range_copy_.CopyFrom(source, ranges, timeout);
  }
  // Rows received by copies (for logs and tests); any thread.
  int64_t rows_copied_in() const { return range_copy_.rows_copied_in(); }

  // Answers the request `meta`: a push with no data, a pull with the values
  // of the keys asked, in the request's order, and, for variable lengths,
  // lens (one per key asked). `result.keys` is not sent (wire.md: a pull
  // answer is values[, lens]); the worker checks the counts against the
  // keys it asked.
  // `min_clock` goes into the response's meta (bounded delay: the smallest
  // clock of the workers still in the job).
  absl::Status Response(const KVMeta& meta, const KVPairs<Val>& result = {},
                        int64_t min_clock = 0);
  // Answers the request `meta` with an error instead of data; the worker's
  // Wait for the request returns `error` (its code and message, prefixed
  // with this server's node id). REQUIRES: !error.ok().
  absl::Status ResponseError(const KVMeta& meta, const absl::Status& error);

 private:
  void Process(Message&& msg, bool duplicate);
  // Observes the time since meta.received in the latency histogram of
  // meta's operation.
  void ObserveLatency(const KVMeta& meta);

  // petrel_server_request_seconds{op=push|pull|push_pull}: from receiving a
  // request to sending its answer (held pulls included). Set by Start.
  Histogram* push_latency_ = nullptr;
  Histogram* pull_latency_ = nullptr;
  Histogram* push_pull_latency_ = nullptr;
  Customer customer_;
  int64_t max_message_bytes_ = 0;  // the van's limit, set by Start
  Handler handler_;
  bool accepts_key_slices_ = false;

  // A push forwarded by a primary (msg.meta.forwarded()): applied once,
  // by its origin (ServerReplication), and answered to the primary.
  void ProcessForwarded(const Message& msg, const KVMeta& meta,
                        const KVPairs<Val>& data, bool duplicate);

  // Replication (kv/replication/; docs/failures.md, "Replicated servers").
  ServerReplication replication_;
  RangeCopy<Val> range_copy_;
};

// A default handler: keeps a KVStore (store/kv_store.h: rows in slabs, one
// index lookup per key) and sums pushed values into it (kSum) or
// overwrites (kAssign). A pull returns the stored values; a key never
// pushed has no values (length 0). Takes key slices (a key first pushed in
// slices starts as zeros). A push is checked whole before anything of it is
// applied: a width that disagrees with a stored row (kSum) is answered with
// InvalidArgument and nothing of that push is stored. A push alone is
// acknowledged before it is summed (see operator()); a push of one width
// into a store of that width is acknowledged before any of its keys is
// even looked up (KVStore's one-pass push). With `threads` > 1, a large
// pull is walked by that many threads (KVStore::set_pull_pool). Not
// thread-safe: use from the KVServer's handler only.
template <typename Val>
class KVStoreHandler {
 public:
  using Mode = typename KVStore<Val>::Mode;
  explicit KVStoreHandler(Mode mode = Mode::kSum, int threads = 1)
      : pool_(threads), store_(mode) {
    if (threads > 1 && pool_.Start().ok()) store_.set_pull_pool(&pool_);
  }

  void operator()(const KVMeta& meta, const KVPairs<Val>& data,
                  KVServer<Val>* server);
  size_t num_keys() const { return store_.num_keys(); }
  // The store (a test and debug aid; handler thread or a quiet server).
  const KVStore<Val>& store() const { return store_; }
  // Lets `server` copy this store's ranges to a replacement and install a
  // copy received (KVServer::set_range_copy). Call before server->Start().
  void EnableRangeCopy(KVServer<Val>* server);

 private:
  // KVStore::PreparePush or PreparePushSlice for the request.
  absl::Status Prepare(const KVMeta& meta, const KVPairs<Val>& data);

  ShardPool pool_;  // before store_, which uses it
  KVStore<Val> store_;
};

}  // namespace petrel

#endif  // PETREL_KV_KV_SERVER_H_
