// PS-Lite compatibility (docs/pslite.md): KVWorker, KVServer, KVMeta,
// KVPairs and KVServerDefaultHandle with PS-Lite's names and signatures,
// over Petrel's KVWorker and KVServer (kv/). Keys go to the server their
// hash picks, in any order (PS-Lite needs them sorted and cuts them by key
// range). The vector forms copy their arguments, as PS-Lite's do; the Z
// forms share the caller's arrays, which must stay unchanged until Wait
// returns. `priority` is accepted and ignored.
//
// Supported Val: float, double, int32_t, int64_t (Petrel's value types).
//
// Thread safety: as Petrel's KVWorker and KVServer: a worker may be used
// from several threads; a server's handle runs one request at a time and
// Response may be called from any thread.
#ifndef PETREL_PSLITE_INCLUDE_PS_KV_APP_H_
#define PETREL_PSLITE_INCLUDE_PS_KV_APP_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "absl/synchronization/mutex.h"

#include "kv/kv_server.h"
#include "kv/kv_worker.h"
#include "ps/base.h"
#include "ps/sarray.h"

namespace ps {

template <typename Val>
inline constexpr bool kIsPetrelValue =
    std::is_same_v<Val, float> || std::is_same_v<Val, double> ||
    std::is_same_v<Val, int32_t> || std::is_same_v<Val, int64_t>;

// A request as a server's handle sees it: cmd, push, pull, sender,
// timestamp, customer_id (and Petrel's own fields).
using KVMeta = petrel::KVMeta;

template <typename Val>
struct KVPairs {
  SArray<Key> keys;
  SArray<Val> vals;
  SArray<int> lens;  // empty: every key has vals.size() / keys.size() values
  int priority = 0;  // ignored
};

template <typename Val>
class KVWorker {
  static_assert(kIsPetrelValue<Val>,
                "ps::KVWorker<Val>: Val must be float, double, int32_t or "
                "int64_t (docs/pslite.md)");

 public:
  using Callback = std::function<void()>;

  // Registers with the process's node; construct after Start.
  explicit KVWorker(int app_id, int customer_id = 0);
  ~KVWorker();
  KVWorker(const KVWorker&) = delete;
  KVWorker& operator=(const KVWorker&) = delete;

  // Sends `vals` (vals.size() / keys.size() per key, or lens[i] for key
  // i) to the servers; returns the timestamp to Wait on. `cb` runs once
  // every server answered.
  int Push(const std::vector<Key>& keys, const std::vector<Val>& vals,
           const std::vector<int>& lens = {}, int cmd = 0,
           const Callback& cb = nullptr, int priority = 0);
  // Fetches the values of `keys` into `*vals` (and per-key counts into
  // `*lens`), written before Wait returns and before `cb` runs.
  int Pull(const std::vector<Key>& keys, std::vector<Val>* vals,
           std::vector<int>* lens = nullptr, int cmd = 0,
           const Callback& cb = nullptr, int priority = 0);
  int PushPull(const std::vector<Key>& keys, const std::vector<Val>& vals,
               std::vector<Val>* outs, std::vector<int>* lens = nullptr,
               int cmd = 0, const Callback& cb = nullptr, int priority = 0);
  // Waits for request `timestamp`. A request that failed (a server died,
  // the job ended, a server's handle answered with an error) ends the
  // program with the reason (exit code 1): PS-Lite's Wait returns nothing
  // to report it with.
  void Wait(int timestamp);

  int ZPush(const SArray<Key>& keys, const SArray<Val>& vals,
            const SArray<int>& lens = {}, int cmd = 0,
            const Callback& cb = nullptr, int priority = 0);
  // `*vals` is written in place when it already has the right size.
  int ZPull(const SArray<Key>& keys, SArray<Val>* vals,
            SArray<int>* lens = nullptr, int cmd = 0,
            const Callback& cb = nullptr, int priority = 0);
  int ZPushPull(const SArray<Key>& keys, const SArray<Val>& vals,
                SArray<Val>* outs, SArray<int>* lens = nullptr, int cmd = 0,
                const Callback& cb = nullptr, int priority = 0);

  // Petrel's KVWorker under this one (timeouts, tables, Status results).
  petrel::KVWorker<Val>* petrel() { return &worker_; }

 private:
  petrel::KVWorker<Val> worker_;
};

template <typename Val>
class KVServer {
  static_assert(kIsPetrelValue<Val>,
                "ps::KVServer<Val>: Val must be float, double, int32_t or "
                "int64_t (docs/pslite.md)");

 public:
  using ReqHandle = std::function<void(
      const KVMeta& req_meta, const KVPairs<Val>& req_data, KVServer* server)>;

  // Registers with the process's node; may come before Start. Requests
  // reach it once set_request_handle was called (until then a worker's
  // request waits and is sent again).
  explicit KVServer(int app_id);
  ~KVServer();
  KVServer(const KVServer&) = delete;
  KVServer& operator=(const KVServer&) = delete;

  void set_request_handle(const ReqHandle& request_handle);
  // Answers `req`: a push with nothing, a pull with res.vals (and res.lens)
  // for the keys asked, in their order. res.keys is not sent.
  void Response(const KVMeta& req, const KVPairs<Val>& res = KVPairs<Val>());

  // Petrel's KVServer under this one (ResponseError, range copies).
  petrel::KVServer<Val>* petrel() { return &server_; }

 private:
  void Handle(const KVMeta& meta, const petrel::KVPairs<Val>& data);

  absl::Mutex mu_;
  // Shared, not copied per request: a handle keeps its state (a store).
  std::shared_ptr<ReqHandle> handle_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  petrel::KVServer<Val> server_;
};

// PS-Lite's default handle: one value per key, summed by pushes and
// returned by pulls (0 for a key never pushed). A push of another number of
// values than keys is answered with InvalidArgument.
template <typename Val>
struct KVServerDefaultHandle {
  void operator()(const KVMeta& req_meta, const KVPairs<Val>& req_data,
                  KVServer<Val>* server);
  std::unordered_map<Key, Val> store;
};

}  // namespace ps

#endif  // PETREL_PSLITE_INCLUDE_PS_KV_APP_H_
