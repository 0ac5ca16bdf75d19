// The plain key-value store's values of other types than float. A
// KVServer<Val> holds values of one type (kv_codec checks every message's
// values against it), and a pull request carries no values, so the type of
// a request is said by its app: float values on app 0, as always, and
// double, int32_t and int64_t values on apps of their own (KVAppOf). A key
// therefore holds one row per type, each summed (or assigned) exactly in
// its type, and bytes are never read as another type.
//
// KVTypedStores is what petrel-server runs next to its app-0 server: a
// KVServer<Val> with a KVStoreHandler<Val> for each of double, int32_t and
// int64_t. A server that holds the job's tables (float only) starts them
// too, answering every request with FailedPrecondition, so that a worker
// of another type learns why at once instead of at its deadline.
//
//   KVTypedStores typed(postoffice, /*sum=*/true, /*tables=*/false);
//   PETREL_RETURN_IF_ERROR(typed.Start());  // before the node joins
//   KVWorker<int64_t> counts(KVAppOf<int64_t>(), 0, worker_postoffice);
//
// Thread safety: Start once; the servers then handle requests on the van's
// thread (see KVServer).
#ifndef PETREL_KV_KV_TYPED_STORES_H_
#define PETREL_KV_KV_TYPED_STORES_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"

#include "kv/kv_server.h"

namespace petrel {

class Postoffice;

// The app id of the key-value requests with values of type Val: 0 for
// float, 10, 11 and 12 for double, int32_t and int64_t.
template <typename Val>
constexpr int KVAppOf();
template <>
constexpr int KVAppOf<float>() {
  return 0;
}
template <>
constexpr int KVAppOf<double>() {
  return 10;
}
template <>
constexpr int KVAppOf<int32_t>() {
  return 11;
}
template <>
constexpr int KVAppOf<int64_t>() {
  return 12;
}

class KVTypedStores {
 public:
  // `postoffice` must outlive this. `sum`: pushes add (else assign), as
  // the app-0 store's mode. `tables`: the server holds float tables; the
  // typed apps refuse every request (see above).
  KVTypedStores(Postoffice* postoffice, bool sum, bool tables);
  ~KVTypedStores();
  KVTypedStores(const KVTypedStores&) = delete;
  KVTypedStores& operator=(const KVTypedStores&) = delete;

  // Starts the three servers; call before the node joins, like any
  // KVServer.
  absl::Status Start();

 private:
  template <typename Val>
  struct Store;

  std::unique_ptr<Store<double>> doubles_;
  std::unique_ptr<Store<int32_t>> int32s_;
  std::unique_ptr<Store<int64_t>> int64s_;
  const bool tables_;
};

}  // namespace petrel

#endif  // PETREL_KV_KV_TYPED_STORES_H_
