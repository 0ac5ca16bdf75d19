#include "ps/kv_app.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"

#include "ps/internal/postoffice.h"
#include "pslite/fatal.h"

namespace ps {
namespace {

template <typename T>
petrel::SArray<T> CopyToPetrel(const std::vector<T>& v) {
  return petrel::SArray<T>::CopyOf(v);
}

// Where a pull's answer arrives, for the callback to hand on: copied into
// the caller's std::vectors (Pull), or shared with its SArrays (ZPull).
template <typename Val>
struct Pulled {
  petrel::SArray<Val> vals;
  petrel::SArray<int> lens;
};

template <typename Val>
std::function<void()> CopyOut(std::shared_ptr<Pulled<Val>> pulled,
                              std::vector<Val>* vals, std::vector<int>* lens,
                              std::function<void()> cb) {
  return [pulled = std::move(pulled), vals, lens, cb = std::move(cb)] {
    vals->assign(pulled->vals.begin(), pulled->vals.end());
    if (lens != nullptr) lens->assign(pulled->lens.begin(), pulled->lens.end());
    if (cb) cb();
  };
}

template <typename Val>
std::function<void()> ShareOut(std::shared_ptr<Pulled<Val>> pulled,
                               SArray<Val>* vals, SArray<int>* lens,
                               std::function<void()> cb) {
  return [pulled = std::move(pulled), vals, lens, cb = std::move(cb)] {
    *vals = pulled->vals;
    if (lens != nullptr) *lens = pulled->lens;
    if (cb) cb();
  };
}

}  // namespace

template <typename Val>
KVWorker<Val>::KVWorker(int app_id, int customer_id)
    : worker_(app_id, customer_id, Postoffice::Get()->petrel(customer_id)) {
  petrel::pslite::DieUnlessOk(
      worker_.Start(),
      absl::StrCat("KVWorker(", app_id, ", ", customer_id, ")"));
}

template <typename Val>
KVWorker<Val>::~KVWorker() = default;

template <typename Val>
int KVWorker<Val>::Push(const std::vector<Key>& keys,
                        const std::vector<Val>& vals,
                        const std::vector<int>& lens, int cmd,
                        const Callback& cb, int /*priority*/) {
  return worker_.Push(CopyToPetrel(keys), CopyToPetrel(vals),
                      CopyToPetrel(lens), cmd, cb);
}

template <typename Val>
int KVWorker<Val>::Pull(const std::vector<Key>& keys, std::vector<Val>* vals,
                        std::vector<int>* lens, int cmd, const Callback& cb,
                        int /*priority*/) {
  auto pulled = std::make_shared<Pulled<Val>>();
  petrel::SArray<Val>* out = &pulled->vals;
  petrel::SArray<int>* out_lens = lens != nullptr ? &pulled->lens : nullptr;
  return worker_.Pull(CopyToPetrel(keys), out, out_lens, cmd,
                      CopyOut(std::move(pulled), vals, lens, cb));
}

template <typename Val>
int KVWorker<Val>::PushPull(const std::vector<Key>& keys,
                            const std::vector<Val>& vals,
                            std::vector<Val>* outs, std::vector<int>* lens,
                            int cmd, const Callback& cb, int /*priority*/) {
  auto pulled = std::make_shared<Pulled<Val>>();
  petrel::SArray<Val>* out = &pulled->vals;
  petrel::SArray<int>* out_lens = lens != nullptr ? &pulled->lens : nullptr;
  return worker_.PushPull(CopyToPetrel(keys), CopyToPetrel(vals), out, out_lens,
                          cmd, CopyOut(std::move(pulled), outs, lens, cb));
}

template <typename Val>
void KVWorker<Val>::Wait(int timestamp) {
  petrel::pslite::DieUnlessOk(worker_.Wait(timestamp),
                              absl::StrCat("KVWorker::Wait(", timestamp, ")"));
}

template <typename Val>
int KVWorker<Val>::ZPush(const SArray<Key>& keys, const SArray<Val>& vals,
                         const SArray<int>& lens, int cmd, const Callback& cb,
                         int /*priority*/) {
  return worker_.Push(keys, vals, lens, cmd, cb);
}

template <typename Val>
int KVWorker<Val>::ZPull(const SArray<Key>& keys, SArray<Val>* vals,
                         SArray<int>* lens, int cmd, const Callback& cb,
                         int /*priority*/) {
  auto pulled = std::make_shared<Pulled<Val>>();
  pulled->vals = *vals;  // written in place when it has the right size
  petrel::SArray<Val>* out = &pulled->vals;
  petrel::SArray<int>* out_lens = lens != nullptr ? &pulled->lens : nullptr;
  return worker_.Pull(keys, out, out_lens, cmd,
                      ShareOut(std::move(pulled), vals, lens, cb));
}

template <typename Val>
int KVWorker<Val>::ZPushPull(const SArray<Key>& keys, const SArray<Val>& vals,
                             SArray<Val>* outs, SArray<int>* lens, int cmd,
                             const Callback& cb, int /*priority*/) {
  auto pulled = std::make_shared<Pulled<Val>>();
  pulled->vals = *outs;
  petrel::SArray<Val>* out = &pulled->vals;
  petrel::SArray<int>* out_lens = lens != nullptr ? &pulled->lens : nullptr;
  return worker_.PushPull(keys, vals, out, out_lens, cmd,
                          ShareOut(std::move(pulled), outs, lens, cb));
}

template <typename Val>
KVServer<Val>::KVServer(int app_id)
    : server_(app_id, Postoffice::Get()->petrel()) {}

template <typename Val>
KVServer<Val>::~KVServer() = default;

template <typename Val>
void KVServer<Val>::set_request_handle(const ReqHandle& request_handle) {
  absl::MutexLock lock(&mu_);
  handle_ = std::make_shared<ReqHandle>(request_handle);
  if (started_) return;
  started_ = true;
  server_.set_request_handler(
      [this](const KVMeta& meta, const petrel::KVPairs<Val>& data,
             petrel::KVServer<Val>*) { Handle(meta, data); });
  petrel::pslite::DieUnlessOk(server_.Start(), "KVServer::set_request_handle");
}

template <typename Val>
void KVServer<Val>::Handle(const KVMeta& meta,
                           const petrel::KVPairs<Val>& data) {
  std::shared_ptr<ReqHandle> handle;
  {
    absl::MutexLock lock(&mu_);
    handle = handle_;
  }
  KVPairs<Val> pairs;
  pairs.keys = data.keys;
  pairs.vals = data.vals;
  pairs.lens = data.lens;
  (*handle)(meta, pairs, this);
}

template <typename Val>
void KVServer<Val>::Response(const KVMeta& req, const KVPairs<Val>& res) {
  petrel::KVPairs<Val> out;
  out.vals = res.vals;
  out.lens = res.lens;
  absl::Status s = server_.Response(req, out);
  LOG_IF_EVERY_N(ERROR, !s.ok(), 100)
      << "ps::KVServer::Response to node " << req.sender << ": " << s;
}

template <typename Val>
void KVServerDefaultHandle<Val>::operator()(const KVMeta& req_meta,
                                            const KVPairs<Val>& req_data,
                                            KVServer<Val>* server) {
  const size_t n = req_data.keys.size();
  if (req_meta.push && req_data.vals.size() != n) {
    server->petrel()
        ->ResponseError(req_meta,
                        absl::InvalidArgumentError(absl::StrCat(
                            "KVServerDefaultHandle keeps one value per key; "
                            "the push has ",
                            req_data.vals.size(), " values for ", n, " keys")))
        .IgnoreError();
    return;
  }
  KVPairs<Val> res;
  if (req_meta.push) {
    for (size_t i = 0; i < n; ++i) store[req_data.keys[i]] += req_data.vals[i];
  }
  if (req_meta.pull) {
    res.vals.resize(n);
    for (size_t i = 0; i < n; ++i) res.vals[i] = store[req_data.keys[i]];
  }
  server->Response(req_meta, res);
}

template class KVWorker<float>;
template class KVWorker<double>;
template class KVWorker<int32_t>;
template class KVWorker<int64_t>;
template class KVServer<float>;
template class KVServer<double>;
template class KVServer<int32_t>;
template class KVServer<int64_t>;
template struct KVServerDefaultHandle<float>;
template struct KVServerDefaultHandle<double>;
template struct KVServerDefaultHandle<int32_t>;
template struct KVServerDefaultHandle<int64_t>;

}  // namespace ps
