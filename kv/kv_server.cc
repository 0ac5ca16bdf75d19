#include "kv/kv_server.h"

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "cluster/postoffice.h"

namespace petrel {

template <typename Val>
KVServer<Val>::KVServer(int app_id, Postoffice* postoffice,
                        CustomerOptions options)
    : customer_(app_id, /*customer_id=*/0, postoffice, options),
      replication_(&customer_),
      range_copy_(this, &customer_, &replication_) {}

template <typename Val>
KVServer<Val>::~KVServer() {
  customer_.Stop();
}

template <typename Val>
absl::Status KVServer<Val>::Start() {
  max_message_bytes_ =
      customer_.postoffice()->van()->options().limits.max_message_bytes;
  MetricsRegistry* metrics = customer_.postoffice()->metrics();
  auto latency = [metrics](const char* op) {
    return metrics->GetHistogram(
        "petrel_server_request_seconds",
        "Server push/pull requests: time from receiving one to sending its "
        "answer, in seconds.",
        LatencyBucketsSeconds(), {{"op", op}});
  };
  push_latency_ = latency("push");
  pull_latency_ = latency("pull");
  push_pull_latency_ = latency("push_pull");
  customer_.set_request_handler([this](Message&& msg, bool duplicate) {
    Process(std::move(msg), duplicate);
  });
  customer_.set_response_handler(
      [this](Message&& response) { range_copy_.OnResponse(response); });
  replication_.Start(metrics);
  Customer::FailoverHooks hooks;
  // A backup that died owes no acknowledgement: its copies count as
  // answered. Nothing else of a server's is resent elsewhere.
  hooks.reroute = [](Message* msg, int) {
    return msg->meta.forwarded() ? 0 : -1;
  };
  customer_.set_failover_hooks(std::move(hooks));
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
    // Well-formed but of another value type (a KVWorker<double> talking to
    // a KVServer<float>): the sender gets the reason rather than waiting
    // out its deadline. Nothing of it is applied.
    if (CheckKvLayout(msg.meta, msg.data, max_message_bytes_).ok()) {
      ResponseError(DecodeKvMeta(msg.meta), valid).IgnoreError();
    }
    return;
  }
  KVMeta meta = DecodeKvMeta(msg.meta);
  meta.received = absl::Now();
  if (msg.meta.range_copy() == 1) {
    range_copy_.ProcessRequest(msg, meta, data, duplicate);
    return;
  }
  if (msg.meta.range_copy() == 2 && meta.push) {
    range_copy_.ProcessCopy(msg, meta, data, duplicate);
    return;
  }
  // Before the duplicate check, so a resent slice gets the same answer.
  if (meta.value_total > 0 && !accepts_key_slices_) {
    ResponseError(meta,
                  absl::InvalidArgumentError(
                      "this server's handler does not take a key's values "
                      "in slices; turn KVWorker::set_split_large_keys off"))
        .IgnoreError();
    return;
  }
  if (meta.push && msg.meta.forwarded()) {
    ProcessForwarded(msg, meta, data, duplicate);
    return;
  }
  // A copy resent after a failover that this server has (it was a
  // backup): answered as a duplicate, but first sent on to this server's
  // own backups, which may have missed it when the dead primary fell.
  bool copy_seen = false;
  if (meta.push && msg.meta.origin_node() != 0 && !duplicate) {
    KVPairs<Val> part;
    duplicate = copy_seen = replication_.SeenAsResentCopy(msg, data, &part);
    // A push-pull answers every key asked: applied whole (a partial
    // overlap is not expected at all; SeenOrRecordPiece logs it).
    if (!part.keys.empty() && !meta.pull) data = std::move(part);
  }
  if (duplicate && meta.push && replication_.active() &&
      replication_.AnswerPending(meta.reply_address())) {
    return;  // answered once its copies are acknowledged
  }
  if (duplicate && meta.push) {
    // Already applied: acknowledge (or answer the pull) without applying.
    VLOG(1) << "duplicate push ts=" << meta.timestamp << " from node "
            << meta.sender;
    if (copy_seen) replication_.Forward(msg, meta);
    if (!meta.pull) {
      Response(meta).IgnoreError();
      return;
    }
    meta.push = false;
    data.vals = SArray<Val>();
    data.lens = SArray<int>();
  }
  if (meta.push) replication_.Forward(msg, meta);
  handler_(meta, data, this);
}

template <typename Val>
void KVServer<Val>::ProcessForwarded(const Message& msg, const KVMeta& meta,
                                     const KVPairs<Val>& data, bool duplicate) {
  const pb::Meta& m = msg.meta;
  KVPairs<Val> part;
  if (duplicate ||
      replication_.SeenOrRecordPiece(m.origin_sender(), m.origin_customer(),
                                     msg, data, m.origin_in_order(), &part)) {
    replication_.CountCopy(/*duplicate=*/true);
    Response(meta).IgnoreError();
    return;
  }
  replication_.CountCopy(/*duplicate=*/false);
  // The handler applies it as the primary did (same data, same order per
  // key) and answers the primary.
  handler_(meta, part.keys.empty() ? data : part, this);
}

template <typename Val>
absl::Status KVServer<Val>::Response(const KVMeta& meta,
                                     const KVPairs<Val>& result,
                                     int64_t min_clock) {
  ObserveLatency(meta);
  Message response;
  EncodeKvResponse(meta, min_clock, &response.meta);
  if (meta.pull) {
    // The keys do not travel back: the worker knows what it asked.
    response.AddData(result.vals);
    if (!result.lens.empty()) response.AddData(result.lens);
  }
  if (replication_.active() &&
      replication_.DeferResponse(meta.reply_address(), &response)) {
    return absl::OkStatus();
  }
  return customer_.SendResponse(meta.reply_address(), std::move(response));
}

template <typename Val>
void KVServer<Val>::ObserveLatency(const KVMeta& meta) {
  if (meta.received == absl::InfinitePast() || (!meta.push && !meta.pull)) {
    return;
  }
  Histogram* h = meta.push && meta.pull ? push_pull_latency_
                 : meta.push            ? push_latency_
                                        : pull_latency_;
  if (h != nullptr)
    h->Observe(absl::ToDoubleSeconds(absl::Now() - meta.received));
}

template <typename Val>
absl::Status KVServer<Val>::ResponseError(const KVMeta& meta,
                                          const absl::Status& error) {
  DCHECK(!error.ok());
  Message response;  // no data frames: the status travels in the header
  EncodeKvError(meta, error, &response.meta);
  if (replication_.active() &&
      replication_.DeferResponse(meta.reply_address(), &response)) {
    return absl::OkStatus();
  }
  return customer_.SendResponse(meta.reply_address(), std::move(response));
}

template <typename Val>
absl::Status KVStoreHandler<Val>::Prepare(const KVMeta& meta,
                                          const KVPairs<Val>& data) {
  if (meta.value_total > 0) {
    if (data.keys.size() != 1 || meta.value_offset < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("a key slice needs one key, not ", data.keys.size()));
    }
    return store_.PreparePushSlice(
        data.keys[0], static_cast<size_t>(meta.value_offset),
        static_cast<size_t>(meta.value_total), data.vals);
  }
  return store_.PreparePush(data.keys, data.vals, data.lens);
}

template <typename Val>
void KVStoreHandler<Val>::operator()(const KVMeta& meta,
                                     const KVPairs<Val>& data,
                                     KVServer<Val>* server) {
  if (meta.push) {
    // Nothing is applied unless all of the push is valid: PreparePush
    // either reserves all that a push no key of which can fail may need
    // (then CommitPush does all of the per-key work in one pass, after the
    // acknowledgement left), or resolves every key's row and checks widths
    // (see kv_store.h). A reservation that fails is an error answered here,
    // before any acknowledgement.
    absl::Status valid = Prepare(meta, data);
    if (!meta.pull) {
      // Acknowledge before summing: this thread applies the push before it
      // handles any later request, so nothing a client can observe
      // changes, and the sum overlaps the acknowledgement's trip and the
      // next request.
      absl::Status s = valid.ok() ? server->Response(meta)
                                  : server->ResponseError(meta, valid);
      if (!s.ok()) {
        LOG_EVERY_T(WARNING, 1.0) << "response: " << s;
      }
      if (valid.ok()) store_.CommitPush();
      return;
    }
    if (valid.ok()) {
      store_.CommitPush();
    } else {
      LOG_EVERY_T(WARNING, 1.0)
          << "push from node " << meta.sender << ": " << valid;
    }
  }
  absl::Status s = meta.pull ? server->Response(meta, store_.Pull(data.keys))
                             : server->Response(meta);
  if (!s.ok()) {
    LOG_EVERY_T(WARNING, 1.0) << "response: " << s;
  }
}

template <typename Val>
void KVStoreHandler<Val>::EnableRangeCopy(KVServer<Val>* server) {
  server->set_range_copy(
      [this](const std::function<bool(Key)>& keep) {
        return store_.Export(keep);
      },
      [this](const KVPairs<Val>& rows) {
        if (store_.mode() != Mode::kSum) {
          return store_.Push(rows.keys, rows.vals, rows.lens);
        }
        // A copy sets the rows: a server that gains a range when another
        // is drained may hold rows of it already (the whole pushes a
        // primary forwards to it for the ranges it backs), so it adds the
        // copy less what it holds.
        SArray<Val> vals(rows.vals.size());
        const size_t n = rows.keys.size();
        const size_t width = n == 0 ? 0 : rows.vals.size() / n;
        size_t at = 0;
        for (size_t i = 0; i < n; ++i) {
          const size_t w =
              rows.lens.empty() ? width : static_cast<size_t>(rows.lens[i]);
          const std::vector<Val> held = store_.Get(rows.keys[i]);
          for (size_t j = 0; j < w; ++j) {
            vals[at + j] =
                rows.vals[at + j] - (held.size() == w ? held[j] : Val{});
          }
          at += w;
        }
        return store_.Push(rows.keys, vals, rows.lens);
      });
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
