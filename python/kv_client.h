// KVClient: a worker node and its KVWorker<float> in one object, for
// programs that drive Petrel from a library rather than from a node binary
// (the Python module wraps it). Start joins the cluster as petrel-worker
// does; Push/Pull/PushPull issue asynchronous requests and return a
// KVTicket to Wait on; Finish tells the scheduler this worker is done.
//
//   absl::StatusOr<NodeSettings> settings = WorkerSettings(args, ::getenv);
//   KVClient client(*settings);
//   PETREL_RETURN_IF_ERROR(client.Start());
//   auto ticket = client.Pull(keys, SArray<float>(), false, {});
//   PETREL_RETURN_IF_ERROR(client.Wait(*ticket, absl::Seconds(5)));
//   use(ticket->out);
//
// Thread safety: thread-safe. Close (and Finish, which ends with it) waits
// for the calls in progress to return, so a thread waiting without a
// deadline holds it up; calls after Close fail with FailedPrecondition.
#ifndef PETREL_PYTHON_KV_CLIENT_H_
#define PETREL_PYTHON_KV_CLIENT_H_

#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

#include "kv/kv_worker.h"
#include "van/buffer.h"
#include "van/node_runtime.h"
#include "van/simple_app.h"

namespace petrel {

// One request. The KVWorker's completion callback holds a reference, so
// the output arrays stay alive until the request is over even when the
// caller drops its ticket.
struct KVTicket {
  // Pull and PushPull output: the values, in the caller's key order. When
  // the caller gave an array of the answer's size it is filled in place;
  // otherwise it is replaced (see out_replaced()).
  SArray<float> out;
  SArray<int> lens;  // per-key counts, when asked for
  int64_t min_clock = -1;
  bool is_pull = false;
  bool notify = false;  // queue for NextCompleted once complete

  int timestamp() const { return timestamp_; }
  // True when `out` no longer holds the caller's array (the answer's size
  // differed from it).
  bool out_replaced() const { return out.data() != given_out_; }

 private:
  friend class KVClient;
  absl::Notification issued_;  // timestamp_ is set
  int timestamp_ = -1;
  const float* given_out_ = nullptr;
  absl::Mutex mu_;
  std::optional<absl::Status> final_ ABSL_GUARDED_BY(mu_);
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

  // Asynchronous requests; `lens` (push) or `want_lens` (pull) make the
  // values variable-length, which the KVWorker supports for table 0 only
  // (InvalidArgument otherwise, reported by Wait). `out` is where a pull
  // writes when its size fits (empty: the received buffer itself is kept).
  std::shared_ptr<KVTicket> Push(const SArray<Key>& keys,
                                 const SArray<float>& vals,
                                 const SArray<int>& lens,
                                 const KVRequestOptions& options, bool notify);
  std::shared_ptr<KVTicket> Pull(const SArray<Key>& keys, SArray<float> out,
                                 bool want_lens,
                                 const KVRequestOptions& options, bool notify);
  std::shared_ptr<KVTicket> PushPull(const SArray<Key>& keys,
                                     const SArray<float>& vals,
                                     SArray<float> out,
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
  // Sends through `send`, given the KVWorker (lifetime_mu_ held shared).
  void Issue(const std::shared_ptr<KVTicket>& ticket,
             const std::function<int(KVWorker<float>*,
                                     KVWorker<float>::Callback)>& send);
  KVWorker<float>::Callback Completion(const std::shared_ptr<KVTicket>& t);
  // Ends `ticket` with `status` without sending anything.
  void Reject(const std::shared_ptr<KVTicket>& ticket, absl::Status status);

  NodeRuntime runtime_;
  // Held shared by every call that uses kv_ or the runtime, exclusively by
  // Start and Close.
  absl::Mutex lifetime_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::unique_ptr<KVWorker<float>> kv_ ABSL_GUARDED_BY(lifetime_mu_);
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
