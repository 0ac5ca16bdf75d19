#include "kv/kv_typed_stores.h"

#include <functional>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "van/message.h"

namespace petrel {

template <typename Val>
struct KVTypedStores::Store {
  Store(Postoffice* postoffice, bool sum)
      : handler(sum ? KVStoreHandler<Val>::Mode::kSum
                    : KVStoreHandler<Val>::Mode::kAssign),
        server(KVAppOf<Val>(), postoffice) {}

  absl::Status Start(bool tables) {
    if (tables) {
      server.set_request_handler(
          [](const KVMeta& meta, const KVPairs<Val>&, KVServer<Val>* s) {
            absl::Status refused = absl::FailedPreconditionError(absl::StrCat(
                "this server holds the job's tables, of float32 values; ",
                KvValueTypeName(DataTypeOf<Val>::kValue),
                " values need servers without --config"));
            absl::Status sent = s->ResponseError(meta, refused);
            if (!sent.ok()) {
              LOG_EVERY_T(WARNING, 1.0) << "response: " << sent;
            }
          });
    } else {
      server.set_request_handler(std::ref(handler),
                                 /*accepts_key_slices=*/true);
    }
    return server.Start();
  }

  KVStoreHandler<Val> handler;
  // After the handler, so destroyed (and stopped) before it: the van thread
  // calls it until then.
  KVServer<Val> server;
};

KVTypedStores::KVTypedStores(Postoffice* postoffice, bool sum, bool tables)
    : doubles_(std::make_unique<Store<double>>(postoffice, sum)),
      int32s_(std::make_unique<Store<int32_t>>(postoffice, sum)),
      int64s_(std::make_unique<Store<int64_t>>(postoffice, sum)),
      tables_(tables) {}

KVTypedStores::~KVTypedStores() = default;

absl::Status KVTypedStores::Start() {
  absl::Status s = doubles_->Start(tables_);
  if (s.ok()) s = int32s_->Start(tables_);
  if (s.ok()) s = int64s_->Start(tables_);
  return s;
}

}  // namespace petrel
