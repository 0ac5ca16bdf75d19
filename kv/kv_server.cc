#include "kv/kv_server.h"

#include <atomic>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "van/postoffice.h"

namespace petrel {
namespace {

// out[i] = a[i] + b[i]; `out` may be `a`. Written with 32-byte vectors
// because -O2 does not vectorize the plain loop (it would need an
// epilogue), and summing a pushed array was most of the server's CPU time
// at 1 MiB per push.
template <typename Val>
inline __attribute__((always_inline)) void AddVectors(const Val* a,
                                                      const Val* b, Val* out,
                                                      size_t n) {
  typedef Val Vec __attribute__((vector_size(32)));
  constexpr size_t kLanes = sizeof(Vec) / sizeof(Val);
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    Vec x, y;
    std::memcpy(&x, a + i, sizeof(Vec));  // unaligned loads and stores
    std::memcpy(&y, b + i, sizeof(Vec));
    x += y;
    std::memcpy(out + i, &x, sizeof(Vec));
  }
  for (; i < n; ++i) out[i] = a[i] + b[i];
}

// An AVX2 and a default (SSE2) version of AddTo for each type, chosen when
// the program loads: AVX2 sums 1 MiB in about half the time, which a 1 MiB
// push with one request in flight shows on 2 cores. A macro because clang
// takes target_clones on no template (and a target("avx2") template picked
// by a run-time check came out no faster than SSE2 with GCC 12).
#define PETREL_DEFINE_ADD_TO(Val)                               \
  __attribute__((target_clones("avx2", "default"))) void AddTo( \
      const Val* a, const Val* b, Val* out, size_t n) {         \
    AddVectors(a, b, out, n);                                   \
  }
PETREL_DEFINE_ADD_TO(float)
PETREL_DEFINE_ADD_TO(double)
PETREL_DEFINE_ADD_TO(int32_t)
PETREL_DEFINE_ADD_TO(int64_t)
#undef PETREL_DEFINE_ADD_TO

}  // namespace

template <typename Val>
KVServer<Val>::KVServer(int app_id, Postoffice* postoffice,
                        CustomerOptions options)
    : customer_(app_id, /*customer_id=*/0, postoffice, options) {}

template <typename Val>
KVServer<Val>::~KVServer() {
  customer_.Stop();
}

template <typename Val>
absl::Status KVServer<Val>::Start() {
  max_message_bytes_ =
      customer_.postoffice()->van()->options().limits.max_message_bytes;
  customer_.set_request_handler([this](Message&& msg, bool duplicate) {
    Process(std::move(msg), duplicate);
  });
  return customer_.Start();
}

template <typename Val>
void KVServer<Val>::Process(Message&& msg, bool duplicate) {
  KVPairs<Val> data;
  absl::Status valid = DecodeKvPairs(msg, max_message_bytes_, &data);
  if (!valid.ok()) {
    customer_.postoffice()->van()->CountDrop(
        kKvRejectReason, absl::StrCat("request from node ", msg.meta.sender(),
                                      ": ", valid.message()));
    return;
  }
  KVMeta meta = DecodeKvMeta(msg.meta);
  // Before the duplicate check, so a resent slice gets the same answer.
  if (meta.value_total > 0 && !accepts_key_slices_) {
    ResponseError(meta,
                  absl::InvalidArgumentError(
                      "this server's handler does not take a key's values "
                      "in slices; turn KVWorker::set_split_large_keys off"))
        .IgnoreError();
    return;
  }
  if (duplicate && meta.push) {
    // Already applied: acknowledge (or answer the pull) without applying.
    VLOG(1) << "duplicate push ts=" << meta.timestamp << " from node "
            << meta.sender;
    if (!meta.pull) {
      Response(meta).IgnoreError();
      return;
    }
    meta.push = false;
    data.vals = SArray<Val>();
    data.lens = SArray<int>();
  }
  handler_(meta, data, this);
}

template <typename Val>
absl::Status KVServer<Val>::Response(const KVMeta& meta,
                                     const KVPairs<Val>& result,
                                     int64_t min_clock) {
  Message response;
  EncodeKvResponse(meta, min_clock, &response.meta);
  if (meta.pull) {
    response.AddData(result.keys);
    response.AddData(result.vals);
    if (!result.lens.empty()) response.AddData(result.lens);
  }
  return customer_.SendResponse(meta.reply_address(), std::move(response));
}

template <typename Val>
absl::Status KVServer<Val>::ResponseError(const KVMeta& meta,
                                          const absl::Status& error) {
  DCHECK(!error.ok());
  Message response;  // no data frames: the status travels in the header
  EncodeKvError(meta, error, &response.meta);
  return customer_.SendResponse(meta.reply_address(), std::move(response));
}

template <typename Val>
absl::Status KVStoreHandler<Val>::ApplySlice(const KVMeta& meta,
                                             const KVPairs<Val>& data) {
  const size_t total = static_cast<size_t>(meta.value_total);
  const size_t offset = static_cast<size_t>(meta.value_offset);
  const size_t len = data.vals.size();
  SArray<Val>& row = store_[data.keys[0]];
  if (row.size() != total) {
    if (!row.empty() && mode_ == Mode::kSum) {
      return absl::InvalidArgumentError(
          absl::StrCat("key ", data.keys[0], " has ", row.size(),
                       " values, push has ", total));
    }
    row = SArray<Val>(total, Val{0});
  } else if (row.buffer().owner().use_count() > 1) {
    // Shared with a pull answer on its way out (see Lookup): copy first.
    row = SArray<Val>::CopyOf(row.data(), total);
  } else {
    std::atomic_thread_fence(std::memory_order_acquire);  // as in Apply
  }
  Val* dst = row.data() + offset;
  if (mode_ == Mode::kAssign) {
    std::memcpy(dst, data.vals.data(), len * sizeof(Val));
  } else {
    AddTo(dst, data.vals.data(), dst, len);
  }
  return absl::OkStatus();
}

template <typename Val>
absl::Status KVStoreHandler<Val>::Apply(const KVMeta& meta,
                                        const KVPairs<Val>& data) {
  if (meta.value_total > 0) return ApplySlice(meta, data);
  size_t n = data.keys.size();
  size_t width = n == 0 ? 0 : data.vals.size() / n;
  const Val* src = data.vals.data();
  for (size_t i = 0; i < n; ++i) {
    size_t len = data.lens.empty() ? width : static_cast<size_t>(data.lens[i]);
    SArray<Val>& row = store_[data.keys[i]];
    if (mode_ == Mode::kAssign || row.empty()) {
      row = SArray<Val>::CopyOf(src, len);
    } else if (row.size() != len) {
      return absl::InvalidArgumentError(
          absl::StrCat("key ", data.keys[i], " has ", row.size(),
                       " values, push has ", len));
    } else if (row.buffer().owner().use_count() > 1) {
      // A pull answer still being sent shares this row (see Lookup): write
      // the sum into a new row instead of changing bytes on their way out.
      SArray<Val> sum(len);
      AddTo(row.data(), src, sum.data(), len);
      row = std::move(sum);
    } else {
      // Only this handler adds references, so a count of 1 stays 1; the
      // fence orders the sender's last reads of the bytes before our writes.
      std::atomic_thread_fence(std::memory_order_acquire);
      AddTo(row.data(), src, row.data(), len);
    }
    src += len;
  }
  return absl::OkStatus();
}

template <typename Val>
KVPairs<Val> KVStoreHandler<Val>::Lookup(const SArray<Key>& keys) const {
  KVPairs<Val> out;
  out.keys = keys;
  if (keys.size() == 1) {
    // One key: answer with the stored row itself, without copying; a later
    // push writes a new row while this one is shared.
    auto it = store_.find(keys[0]);
    if (it != store_.end()) out.vals = it->second;
    return out;
  }
  size_t total = 0;
  bool uniform = true;
  size_t first = 0;
  std::vector<const SArray<Val>*> rows(keys.size(), nullptr);
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = store_.find(keys[i]);
    size_t len = it == store_.end() ? 0 : it->second.size();
    if (it != store_.end()) rows[i] = &it->second;
    if (i == 0) first = len;
    uniform = uniform && len == first;
    total += len;
  }
  out.vals = SArray<Val>(total);
  if (!uniform) out.lens = SArray<int>(keys.size());
  Val* dst = out.vals.data();
  for (size_t i = 0; i < keys.size(); ++i) {
    size_t len = rows[i] == nullptr ? 0 : rows[i]->size();
    if (len > 0) std::memcpy(dst, rows[i]->data(), len * sizeof(Val));
    dst += len;
    if (!uniform) out.lens[i] = static_cast<int>(len);
  }
  return out;
}

template <typename Val>
absl::Status KVStoreHandler<Val>::CheckWidths(const KVMeta& meta,
                                              const KVPairs<Val>& data) const {
  if (mode_ == Mode::kAssign) return absl::OkStatus();
  size_t n = data.keys.size();
  size_t width = n == 0 ? 0 : data.vals.size() / n;
  for (size_t i = 0; i < n; ++i) {
    size_t len = data.lens.empty() ? width : static_cast<size_t>(data.lens[i]);
    if (meta.value_total > 0) len = static_cast<size_t>(meta.value_total);
    auto it = store_.find(data.keys[i]);
    if (it != store_.end() && it->second.size() != len) {
      return absl::InvalidArgumentError(
          absl::StrCat("key ", data.keys[i], " has ", it->second.size(),
                       " values, push has ", len));
    }
  }
  return absl::OkStatus();
}

template <typename Val>
void KVStoreHandler<Val>::operator()(const KVMeta& meta,
                                     const KVPairs<Val>& data,
                                     KVServer<Val>* server) {
  if (meta.push && !meta.pull) {
    // Acknowledge before summing: this thread applies the push before it
    // handles any later request, so nothing a client can observe changes,
    // and the sum overlaps the acknowledgement's trip and the next request.
    absl::Status valid = CheckWidths(meta, data);
    absl::Status s = valid.ok() ? server->Response(meta)
                                : server->ResponseError(meta, valid);
    if (!s.ok()) {
      LOG_EVERY_T(WARNING, 1.0) << "response: " << s;
    }
    if (valid.ok()) Apply(meta, data).IgnoreError();
    return;
  }
  if (meta.push) {
    absl::Status s = Apply(meta, data);
    if (!s.ok()) {
      LOG_EVERY_T(WARNING, 1.0)
          << "push from node " << meta.sender << ": " << s;
    }
  }
  absl::Status s = meta.pull ? server->Response(meta, Lookup(data.keys))
                             : server->Response(meta);
  if (!s.ok()) {
    LOG_EVERY_T(WARNING, 1.0) << "response: " << s;
  }
}

template class KVServer<float>;
template class KVServer<double>;
template class KVServer<int32_t>;
template class KVServer<int64_t>;
template class KVStoreHandler<float>;
template class KVStoreHandler<double>;
template class KVStoreHandler<int32_t>;
template class KVStoreHandler<int64_t>;

}  // namespace petrel
