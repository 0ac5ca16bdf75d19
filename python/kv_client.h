// KVClient: a worker node and its KVWorkers in one object, for programs
// that drive Petrel from a library rather than from a node binary (the
// Python module wraps it). Values are float, double, int32_t or int64_t,
// each type on its own app (kv/kv_typed_stores.h's KVAppOf): one
// KVWorker<Val> per type. Start joins the cluster as petrel-worker
// does; Push/Pull/PushPull issue asynchronous requests and return a
// KVTicket to Wait on; Finish tells the scheduler this worker is done.
//
//   absl::StatusOr<NodeSettings> settings = WorkerSettings(args, ::getenv);
//   KVClient client(*settings);
//   PETREL_RETURN_IF_ERROR(client.Start());
//   auto ticket = client.Pull<float>(keys, SArray<float>(), false, {});
//   PETREL_RETURN_IF_ERROR(client.Wait(*ticket, absl::Seconds(5)));
//   use(ticket->out);
//
// Thread safety: thread-safe. Close (and Finish, which ends with it) waits
// for the calls in progress to return, so a thread waiting without a
// deadline holds it up; calls after Close fail with FailedPrecondition.
#ifndef PETREL_PYTHON_KV_CLIENT_H_
#define PETREL_PYTHON_KV_CLIENT_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

#include "cluster/simple_app.h"
#include "kv/kv_worker.h"
#include "node/node_runtime.h"
#include "van/buffer.h"

namespace petrel {

// The value types a client speaks.
enum class ValueType { kFloat32, kFloat64, kInt32, kInt64 };

template <typename Val>
constexpr ValueType ValueTypeOf();
template <>
constexpr ValueType ValueTypeOf<float>() {
  return ValueType::kFloat32;
}
template <>
constexpr ValueType ValueTypeOf<double>() {
  return ValueType::kFloat64;
}
template <>
constexpr ValueType ValueTypeOf<int32_t>() {
  return ValueType::kInt32;
}
template <>
constexpr ValueType ValueTypeOf<int64_t>() {
  return ValueType::kInt64;
}

// One request. The KVWorker's completion callback holds a reference, so
// the output arrays stay alive until the request is over even when the
// caller drops its ticket. TypedKVTicket adds the values.
struct KVTicket {
  explicit KVTicket(ValueType type) : value_type(type) {}
  virtual ~KVTicket() = default;

  const ValueType value_type;
  SArray<int> lens;  // per-key counts, when asked for
  int64_t min_clock = -1;
  bool is_pull = false;
  bool notify = false;  // queue for NextCompleted once complete

  int timestamp() const { return timestamp_; }

 private:
  friend class KVClient;
  absl::Notification issued_;  // timestamp_ is set
  int timestamp_ = -1;
  absl::Mutex mu_;
  std::optional<absl::Status> final_ ABSL_GUARDED_BY(mu_);
};

template <typename Val>
struct TypedKVTicket : KVTicket {
  TypedKVTicket() : KVTicket(ValueTypeOf<Val>()) {}

  // Pull and PushPull output: the values, in the caller's key order. When
  // the caller gave an array of the answer's size it is filled in place;
  // otherwise it is replaced (see out_replaced()).
  SArray<Val> out;
  const Val* given_out = nullptr;  // the caller's array, when it gave one

  // True when `out` no longer holds the caller's array (the answer's size
  // differed from it).
  bool out_replaced() const { return out.data() != given_out; }
};

class KVClient {
 public:
  explicit KVClient(const NodeSettings& settings);
  ~KVClient();  // Close()
  KVClient(const KVClient&) = delete;
  KVClient& operator=(const KVClient&) = delete;

  // Joins the cluster (errors as Postoffice::Start: DeadlineExceeded when
  // the scheduler does not answer within the join timeout) and prints the
  // node's PETREL_READY line.
  absl::Status Start();

  // Asynchronous requests, with values of type Val (float, double,
  // int32_t, int64_t; app KVAppOf<Val>()); `lens` (push) or `want_lens`
  // (pull) make the values variable-length, which the KVWorker supports
  // for table 0 only (InvalidArgument otherwise, reported by Wait). `out`
  // is where a pull writes when its size fits (empty: the received buffer
  // itself is kept).
  template <typename Val>
  std::shared_ptr<TypedKVTicket<Val>> Push(const SArray<Key>& keys,
                                           const SArray<Val>& vals,
                                           const SArray<int>& lens,
                                           const KVRequestOptions& options,
                                           bool notify);
  template <typename Val>
  std::shared_ptr<TypedKVTicket<Val>> Pull(const SArray<Key>& keys,
                                           SArray<Val> out, bool want_lens,
                                           const KVRequestOptions& options,
                                           bool notify);
  template <typename Val>
  std::shared_ptr<TypedKVTicket<Val>> PushPull(const SArray<Key>& keys,
                                               const SArray<Val>& vals,
                                               SArray<Val> out,
                                               const KVRequestOptions& options,
                                               bool notify);

  // Waits for `ticket`'s request. DeadlineExceeded while it is still
  // outstanding (wait again or give up); once it is over, returns its
  // final status every time.
  absl::Status Wait(KVTicket& ticket, absl::Duration timeout);
  // True once the request is over (Wait would not block).
  bool Done(KVTicket& ticket);
  // The next completed request issued with notify, or nullptr when none
  // completed within `timeout` or the client closed.
  std::shared_ptr<KVTicket> NextCompleted(absl::Duration timeout);

  // Sends `value` from worker `root` to every worker and returns it on each
  // (the root included): small set-up data such as a rendezvous address.
  // Every worker calls it, the same number of times in the same order.
  // DeadlineExceeded when the value (or, on the root, an acknowledgement)
  // does not arrive within `timeout`.
  absl::StatusOr<std::string> Broadcast(const std::string& value, int root,
                                        absl::Duration timeout);

  // Waits until every worker reached the barrier.
  absl::Status Barrier(absl::Duration timeout);
  // Reports that this worker is done and waits for the job's end, then
  // closes. Aborted when the job failed.
  absl::Status Finish(absl::Duration timeout);
  // Leaves without finishing (the scheduler counts this worker as lost
  // when the job is still running). Idempotent.
  void Close();

  bool started() {
    absl::ReaderMutexLock lock(&lifetime_mu_);
    return started_;
  }
  // REQUIRES: not closed (the Postoffice lives as long as this client,
  // but it is stopped by Close).
  Postoffice* postoffice() { return runtime_.postoffice(); }

 private:
  using Callback = std::function<void()>;  // KVWorker<Val>::Callback

  // Sends through `send`, given the KVWorker (lifetime_mu_ held shared).
  template <typename Val>
  void Issue(const std::shared_ptr<TypedKVTicket<Val>>& ticket,
             const std::function<int(KVWorker<Val>*, Callback)>& send);
  Callback Completion(const std::shared_ptr<KVTicket>& t);
  // The KVWorker of Val; null before Start and after Close.
  template <typename Val>
  KVWorker<Val>* worker() ABSL_SHARED_LOCKS_REQUIRED(lifetime_mu_) {
    return std::get<std::unique_ptr<KVWorker<Val>>>(kv_).get();
  }
  // f(worker<Val>()) for the Val of `type`.
  template <typename F>
  auto WithWorker(ValueType type, F&& f)
      ABSL_SHARED_LOCKS_REQUIRED(lifetime_mu_) {
    switch (type) {
      case ValueType::kFloat64:
        return f(worker<double>());
      case ValueType::kInt32:
        return f(worker<int32_t>());
      case ValueType::kInt64:
        return f(worker<int64_t>());
      case ValueType::kFloat32:
        break;
    }
    return f(worker<float>());
  }
  // Ends `ticket` with `status` without sending anything.
  void Reject(const std::shared_ptr<KVTicket>& ticket, absl::Status status);

  NodeRuntime runtime_;
  // Held shared by every call that uses kv_ or the runtime, exclusively by
  // Start and Close.
  absl::Mutex lifetime_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::tuple<
      std::unique_ptr<KVWorker<float>>, std::unique_ptr<KVWorker<double>>,
      std::unique_ptr<KVWorker<int32_t>>, std::unique_ptr<KVWorker<int64_t>>>
      kv_ ABSL_GUARDED_BY(lifetime_mu_);
  // Carries Broadcast's values (app kBroadcastApp) between workers.
  std::unique_ptr<SimpleApp> broadcast_ ABSL_GUARDED_BY(lifetime_mu_);
  bool started_ ABSL_GUARDED_BY(lifetime_mu_) = false;
  bool closed_ ABSL_GUARDED_BY(lifetime_mu_) = false;

  absl::Mutex mu_;
  std::deque<std::shared_ptr<KVTicket>> completed_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> broadcasts_ ABSL_GUARDED_BY(mu_);  // received
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace petrel

#endif  // PETREL_PYTHON_KV_CLIENT_H_
