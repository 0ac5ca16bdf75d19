// KVWorker<Val>: the push/pull client API. Keys are uint64 in any order,
// duplicates allowed; values are fixed-width (vals.size() a multiple of
// keys.size()) or variable-length (lens gives each key's count). A request
// is split by owning server, sent, and answered in the caller's key order.
// Containers are SArray, shared without copying: the caller's arrays are
// sent as they are when one server owns every key, and a pull answered by
// one server hands back the received buffer itself.
//
//   KVWorker<float> kv(/*app_id=*/0, /*customer_id=*/0, &postoffice);
//   PETREL_RETURN_IF_ERROR(kv.Start());
//   kv.Wait(kv.Push(keys, grads));
//   SArray<float> weights;
//   PETREL_RETURN_IF_ERROR(kv.Wait(kv.Pull(keys, &weights), absl::Seconds(5)));
//
// Requests are encoded and answers checked by kv_codec. A pull answer
// carries no keys, only the values (and lens) of the keys that server was
// asked, in their order; an answer that fails the KV layout checks or whose
// counts do not fit those keys (kv_slicer's CheckPulledPart) is dropped,
// counted in petrel_van_messages_rejected_total{reason="kv_layout"}, and
// makes the request fail with InvalidArgument; a server's error (a typed status
// in the answer's header) becomes the request's status.
//
// Supported Val: float, double, int32_t, int64_t.
//
// Thread safety: thread-safe; callbacks must not wait for requests nor take
// a lock held across Wait. See docs/threading.md.
// Output arrays of Pull must stay alive and untouched until the request
// completes. A pull in several parts writes each part's values as it
// arrives, so one that fails may leave an output array that already had
// the right size partly written.
#ifndef PETREL_KV_KV_WORKER_H_
#define PETREL_KV_KV_WORKER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#include "base/metrics.h"
#include "cluster/customer.h"
#include "kv/kv_codec.h"
#include "kv/kv_slicer.h"
#include "van/buffer.h"

namespace petrel {

// Per-request settings of training jobs (tables, bounded delay).
struct KVRequestOptions {
  // Explicit, so a bare `{}` or `{1, 2}` argument still means lens in the
  // older overloads. Use `KVRequestOptions options; options.table_id = 1;`.
  explicit KVRequestOptions() = default;

  int cmd = 0;       // application command, the handler's KVMeta::cmd
  int table_id = 0;  // the table addressed (KVMeta::table_id)
  // Pull: the batch (clock) the values are for; a bounded-delay server
  // answers once every worker still in the job reached clock - tau.
  // -1 = no bound. Ignored by a push.
  int64_t clock = -1;
  // Pull, output: when set, receives the smallest min_clock the servers put
  // in their responses (-1 when no server answered). Must stay alive until
  // the request completes.
  int64_t* min_clock = nullptr;
};

// The metrics of one operation of a KVWorker (see KVWorker's members).
struct KVWorkerOpMetrics {
  Histogram* latency = nullptr;
  Counter* keys = nullptr;
  Counter* bytes = nullptr;
};

template <typename Val>
class KVWorker {
 public:
  using Callback = std::function<void()>;

  // `postoffice` must outlive the KVWorker and have joined its cluster.
  KVWorker(int app_id, int customer_id, Postoffice* postoffice,
           CustomerOptions options = {});
  ~KVWorker();
  KVWorker(const KVWorker&) = delete;
  KVWorker& operator=(const KVWorker&) = delete;

  absl::Status Start();

  // Sends values of `keys` to the servers (summed or assigned there, by
  // the server's handler and `cmd`). Returns the request's timestamp.
  int Push(const SArray<Key>& keys, const SArray<Val>& vals,
           const SArray<int>& lens = {}, int cmd = 0, Callback cb = nullptr);
  // Fetches the values of `keys` into `*vals` (and per-key counts into
  // `*lens` when given). `*vals` is written in place when it already has
  // the right size, else replaced, on the receive thread: `vals` and `lens`
  // must stay where they are until Wait returns other than
  // DeadlineExceeded (which may be waited on again) or this is destroyed.
  int Pull(const SArray<Key>& keys, SArray<Val>* vals,
           SArray<int>* lens = nullptr, int cmd = 0, Callback cb = nullptr);
  // Push `vals`, then fetch the updated values into `*outs`, in one round
  // trip.
  int PushPull(const SArray<Key>& keys, const SArray<Val>& vals,
               SArray<Val>* outs, SArray<int>* lens = nullptr, int cmd = 0,
               Callback cb = nullptr);
  // Waits for request `timestamp`. DeadlineExceeded names the servers that
  // did not answer; InvalidArgument reports bad arguments or a malformed
  // answer; Unavailable names a server the scheduler declared dead (at
  // once, not at the deadline), Aborted the reason the job failed.
  absl::Status Wait(int timestamp,
                    absl::Duration timeout = absl::InfiniteDuration());

  // As above, with table, clock and command in `options`.
  int Push(const SArray<Key>& keys, const SArray<Val>& vals,
           const KVRequestOptions& options, Callback cb = nullptr);
  int Pull(const SArray<Key>& keys, SArray<Val>* vals,
           const KVRequestOptions& options, Callback cb = nullptr);
  int PushPull(const SArray<Key>& keys, const SArray<Val>& vals,
               SArray<Val>* outs, const KVRequestOptions& options,
               Callback cb = nullptr);
  // Tells every server this worker's new clock (the number of batches it
  // has completed and pushed), or -1 when it leaves the job (it then never
  // holds back other workers). Requests from one worker are handled in the
  // order sent, so a push sent before Clock is applied before it. Returns
  // the timestamp to Wait on; complete once every server acknowledged.
  int Clock(int64_t clock, Callback cb = nullptr);

  // Conveniences that copy std::vectors into SArrays.
  int Push(const std::vector<Key>& keys, const std::vector<Val>& vals,
           Callback cb = nullptr);

  // A push whose values for one server exceed this many bytes goes to it
  // as several messages split at key boundaries (a key's values are never
  // split), so the server receives and sums each part while the next is
  // on its way, with the data still in cache. 0 never splits. Default
  // kDefaultMaxPushPartBytes.
  static constexpr size_t kDefaultMaxPushPartBytes = size_t{1} << 20;
  void set_max_push_part_bytes(size_t bytes) { max_push_part_bytes_ = bytes; }
  // A pull whose answer from one server should exceed this many bytes
  // goes to it as several messages of consecutive keys, so that the server
  // looks up one part while the next part's keys and the last part's
  // answer are on their way, and this worker copies each part's answer to
  // its place while the later ones still travel. The answer's size is expected
  // from the values per key of this worker's last pull answer (a first pull
  // goes whole): parts pay off for large rows and cost a little for small ones.
  // 0 never splits. Default kDefaultMaxPullPartBytes.
  static constexpr size_t kDefaultMaxPullPartBytes = size_t{1} << 20;
  void set_max_pull_part_bytes(size_t bytes) { max_pull_part_bytes_ = bytes; }
  // Also splits one key's values over several parts when they alone exceed
  // max_push_part_bytes (each part says which slice it holds), instead of
  // sending the key whole. Only for servers whose handler takes key slices
  // (KVStoreHandler does; others answer InvalidArgument). Default false.
  void set_split_large_keys(bool split) { split_large_keys_ = split; }

  Customer* customer() { return &customer_; }

 private:
  struct PullState {
    std::vector<KVSlice> slices;
    std::vector<PulledPart> parts;
    // Customer::PartKey(server id, part) -> index in slices: a server's
    // k-th part is the k-th of its slices (Customer numbers the parts in
    // sending order); a failover moves a slice to the server that took over
    // (OnRerouted).
    absl::flat_hash_map<uint64_t, size_t> slice_of_part;
    size_t num_keys = 0;
    SArray<Val>* vals = nullptr;
    SArray<int>* lens = nullptr;
    int64_t* min_clock = nullptr;
    int64_t min_clock_seen = -1;  // -1: no response yet
    // A pull in several parts copies each answer to its place as it
    // arrives (PlaceAnswer), while later parts are still on their way:
    // into the caller's array when it has the right size, else into
    // `merged`; `width` values per key, `placed` parts so far (placed_part
    // marks them). `eager` turns false when a part has lens or another
    // width, or a failover cut a slice: Complete then merges them all.
    Buffer merged;
    size_t width = 0;
    size_t placed = 0;
    std::vector<bool> placed_part;
    bool eager = true;
  };

  int Send(bool push, bool pull, const SArray<Key>& keys,
           const SArray<Val>& vals, const SArray<int>& lens,
           const KVRequestOptions& options, SArray<Val>* outs,
           SArray<int>* out_lens, Callback cb);
  // A request cut by the key-range map: its slices, the server each goes
  // to, and the map's version.
  struct Routed {
    uint64_t map_version = 0;
    std::vector<KVSlice> slices;
    std::vector<int> recipients;
  };
  // Slices a request by the current map (cut in parts as the limits say).
  // A recipient declared dead: Unavailable naming it, unless its ranges
  // failed over since the slicing (a new map), which slices again.
  // REQUIRES: a Postoffice::RoutingScope held.
  absl::StatusOr<Routed> RouteByMap(bool push, bool pull,
                                    const SArray<Key>& keys,
                                    const SArray<Val>& vals,
                                    const SArray<int>& lens);
  // The messages of request `ts`, one per slice.
  std::vector<Message> EncodeSlices(bool push, bool pull,
                                    const KVRequestOptions& options,
                                    const Routed& routed, int ts);
  // Records the first error of request `timestamp`. REQUIRES: mu_ held.
  void RecordError(int timestamp, absl::Status error)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnResponse(Message&& msg);
  // Copies the answer to slice `i` of `state` to its place (see PullState).
  // REQUIRES: mu_ held.
  void PlaceAnswer(PullState& state, size_t i)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts a pull answer from node `sender` that failed the KV checks
  // (petrel_van_messages_rejected_total{reason=kKvRejectReason}).
  void CountBadAnswer(int sender, const absl::Status& error);
  void Complete(int timestamp);
  // Failover (kv_worker_failover.cc): a message to a dead server is resent
  // to the one that took over its ranges, naming the original.
  static int Reroute(Message* msg, int successor);
  void OnRerouted(int timestamp, uint64_t from, uint64_t to);
  // A push's or pull's message to a dead server, cut by the current map:
  // one piece per server that now leads some of its keys
  // (Customer::FailoverHooks).
  static std::vector<Message> SplitMoved(const Message& msg,
                                         const KeyRangeMap& ranges);
  // The slice of `from` becomes one slice per piece.
  void OnSplit(int timestamp, uint64_t from, const std::vector<uint64_t>& to,
               const std::vector<Message>& pieces);
  int Fail(absl::Status status, const Callback& cb);

  // This worker's request metrics, per operation (push, pull, push_pull):
  // petrel_worker_request_seconds (NewRequest to completion),
  // petrel_worker_keys_total and petrel_worker_bytes_total (values sent
  // for pushes, keys asked for pulls). Set by Start; the registry owns them.
  using OpMetrics = KVWorkerOpMetrics;
  OpMetrics push_metrics_, pull_metrics_, push_pull_metrics_;

  Customer customer_;
  int64_t max_message_bytes_ = 0;  // the van's limit, set by Start
  std::atomic<size_t> max_push_part_bytes_{kDefaultMaxPushPartBytes};
  std::atomic<bool> split_large_keys_{false};
  std::atomic<size_t> max_pull_part_bytes_{kDefaultMaxPullPartBytes};
  // Values per key of the last pull answer without lens (0: none yet).
  std::atomic<size_t> last_pull_width_{0};
  absl::Mutex mu_;
  absl::flat_hash_map<int, std::unique_ptr<PullState>> pulls_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int, absl::Status> errors_ ABSL_GUARDED_BY(mu_);
};

}  // namespace petrel

#endif  // PETREL_KV_KV_WORKER_H_
