#include "kv/kv_worker.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "cluster/postoffice.h"

namespace petrel {

template <typename Val>
KVWorker<Val>::KVWorker(int app_id, int customer_id, Postoffice* postoffice,
                        CustomerOptions options)
    : customer_(app_id, customer_id, postoffice, options) {}

template <typename Val>
KVWorker<Val>::~KVWorker() {
  customer_.Stop();
}

namespace {

KVWorkerOpMetrics OpMetricsFor(MetricsRegistry* metrics, const char* op) {
  KVWorkerOpMetrics m;
  m.latency = metrics->GetHistogram(
      "petrel_worker_request_seconds",
      "Worker push/pull requests: time from sending to the last answer, in "
      "seconds.",
      LatencyBucketsSeconds(), {{"op", op}});
  m.keys = metrics->GetCounter(
      "petrel_worker_keys_total",
      "Keys in the worker's push/pull requests (rate(): keys per second).",
      {{"op", op}});
  m.bytes = metrics->GetCounter(
      "petrel_worker_bytes_total",
      "Value bytes the worker pushed, by operation (0 for pulls).",
      {{"op", op}});
  return m;
}

}  // namespace

template <typename Val>
absl::Status KVWorker<Val>::Start() {
  max_message_bytes_ =
      customer_.postoffice()->van()->options().limits.max_message_bytes;
  MetricsRegistry* metrics = customer_.postoffice()->metrics();
  push_metrics_ = OpMetricsFor(metrics, "push");
  pull_metrics_ = OpMetricsFor(metrics, "pull");
  push_pull_metrics_ = OpMetricsFor(metrics, "push_pull");
  customer_.set_response_handler(
      [this](Message&& msg) { OnResponse(std::move(msg)); });
  Customer::FailoverHooks hooks;
  hooks.reroute = &KVWorker::Reroute;
  hooks.rerouted = [this](int ts, uint64_t from, uint64_t to) {
    OnRerouted(ts, from, to);
  };
  hooks.split = &KVWorker::SplitMoved;
  hooks.split_rerouted = [this](int ts, uint64_t from,
                                const std::vector<uint64_t>& to,
                                const std::vector<Message>& pieces) {
    OnSplit(ts, from, to, pieces);
  };
  customer_.set_failover_hooks(std::move(hooks));
  return customer_.Start();
}

namespace {

KVRequestOptions WithCmd(int cmd) {
  KVRequestOptions options;
  options.cmd = cmd;
  return options;
}

}  // namespace

template <typename Val>
int KVWorker<Val>::Push(const SArray<Key>& keys, const SArray<Val>& vals,
                        const SArray<int>& lens, int cmd, Callback cb) {
  return Send(true, false, keys, vals, lens, WithCmd(cmd), nullptr, nullptr,
              std::move(cb));
}

template <typename Val>
int KVWorker<Val>::Push(const SArray<Key>& keys, const SArray<Val>& vals,
                        const KVRequestOptions& options, Callback cb) {
  return Send(true, false, keys, vals, {}, options, nullptr, nullptr,
              std::move(cb));
}

template <typename Val>
int KVWorker<Val>::Pull(const SArray<Key>& keys, SArray<Val>* vals,
                        const KVRequestOptions& options, Callback cb) {
  return Send(false, true, keys, {}, {}, options, vals, nullptr, std::move(cb));
}

template <typename Val>
int KVWorker<Val>::PushPull(const SArray<Key>& keys, const SArray<Val>& vals,
                            SArray<Val>* outs, const KVRequestOptions& options,
                            Callback cb) {
  return Send(true, true, keys, vals, {}, options, outs, nullptr,
              std::move(cb));
}

template <typename Val>
int KVWorker<Val>::Clock(int64_t clock, Callback cb) {
  Postoffice* po = customer_.postoffice();
  // A drained server's DRAIN_QUERY waits until the request is registered
  // (docs/failures.md, "Elastic servers").
  std::optional<Postoffice::RoutingScope> routing(std::in_place, po);
  const int num_servers = po->num_servers();
  std::vector<int> recipients;
  for (int r = 0; r < num_servers; ++r) {
    // A server that died while replicas took over needs no clock, nor one
    // drained out of the job. A server still draining gets them: it may
    // hold a pull sent by the old map until every worker's clock came.
    if (po->CheckAlive({ServerRankToId(r)}).ok() &&
        !po->Retired(ServerRankToId(r))) {
      recipients.push_back(ServerRankToId(r));
    }
  }
  int ts = customer_.NewRequest(recipients, [cb](int) {
    if (cb) cb();
  });
  routing.reset();
  for (int id : recipients) {
    KVMeta kv;
    kv.clock = clock;
    kv.clock_advance = true;
    Message msg;
    msg.meta.set_recipient(id);
    msg.meta.set_timestamp(ts);
    EncodeKvRequest(kv, &msg.meta);
    msg.AddData(SArray<Key>());
    absl::Status st = customer_.SendRequest(std::move(msg));
    if (!st.ok()) {
      LOG_EVERY_T(WARNING, 1.0) << "send clock: " << st;
    }
  }
  return ts;
}

template <typename Val>
int KVWorker<Val>::Push(const std::vector<Key>& keys,
                        const std::vector<Val>& vals, Callback cb) {
  return Push(SArray<Key>::CopyOf(keys), SArray<Val>::CopyOf(vals), {}, 0,
              std::move(cb));
}

template <typename Val>
int KVWorker<Val>::Pull(const SArray<Key>& keys, SArray<Val>* vals,
                        SArray<int>* lens, int cmd, Callback cb) {
  return Send(false, true, keys, {}, {}, WithCmd(cmd), vals, lens,
              std::move(cb));
}

template <typename Val>
int KVWorker<Val>::PushPull(const SArray<Key>& keys, const SArray<Val>& vals,
                            SArray<Val>* outs, SArray<int>* lens, int cmd,
                            Callback cb) {
  SArray<int> in_lens = lens != nullptr ? *lens : SArray<int>();
  return Send(true, true, keys, vals, in_lens, WithCmd(cmd), outs, lens,
              std::move(cb));
}

template <typename Val>
int KVWorker<Val>::Fail(absl::Status status, const Callback& cb) {
  int ts = customer_.NewRequest({}, [this, status, cb](int ts) {
    {
      absl::MutexLock lock(&mu_);
      errors_[ts] = status;
    }
    if (cb) cb();
  });
  return ts;
}

template <typename Val>
absl::StatusOr<typename KVWorker<Val>::Routed> KVWorker<Val>::RouteByMap(
    bool push, bool pull, const SArray<Key>& keys, const SArray<Val>& vals,
    const SArray<int>& lens) {
  Postoffice* po = customer_.postoffice();
  Routed out;
  for (int attempt = 0;; ++attempt) {
    out.map_version = po->map_version();
    absl::StatusOr<std::vector<KVSlice>> slices =
        SliceRequest(po->key_ranges(), keys, vals.buffer(), sizeof(Val), lens);
    if (!slices.ok()) return slices.status();
    if (push && !pull) {
      *slices = SplitPushSlices(*std::move(slices), sizeof(Val),
                                max_push_part_bytes_.load(),
                                split_large_keys_.load());
    } else if (pull && !push) {
      const size_t width = last_pull_width_.load(std::memory_order_relaxed);
      const size_t max_bytes = max_pull_part_bytes_.load();
      if (width > 0 && max_bytes > 0) {
        *slices = SplitPullSlices(
            *std::move(slices),
            std::max<size_t>(1, max_bytes / (width * sizeof(Val))));
      }
    }
    out.slices = *std::move(slices);
    out.recipients.clear();
    for (const KVSlice& s : out.slices) {
      out.recipients.push_back(ServerRankToId(s.server_rank));
    }
    // A server declared dead: fail now, naming it, instead of at the
    // deadline; unless its ranges failed over since the slicing (a new
    // map): slice again.
    absl::Status alive = po->CheckAlive(out.recipients);
    if (alive.ok()) return out;
    if (po->map_version() == out.map_version || attempt >= 3) return alive;
  }
}

template <typename Val>
std::vector<Message> KVWorker<Val>::EncodeSlices(
    bool push, bool pull, const KVRequestOptions& options, const Routed& routed,
    int ts) {
  std::vector<Message> msgs(routed.slices.size());
  for (size_t i = 0; i < routed.slices.size(); ++i) {
    const KVSlice& s = routed.slices[i];
    KVMeta kv;
    kv.cmd = options.cmd;
    kv.push = push;
    kv.pull = pull;
    kv.table_id = options.table_id;
    kv.clock = pull ? options.clock : 0;
    kv.value_offset = s.value_offset;
    kv.value_total = s.value_total;
    Message& msg = msgs[i];
    msg.meta.set_recipient(routed.recipients[i]);
    msg.meta.set_timestamp(ts);
    EncodeKvRequest(kv, &msg.meta);
    msg.meta.set_map_version(routed.map_version);
    msg.AddData(s.keys);
    if (push) {
      msg.AddData(SArray<Val>(s.vals));
      if (!s.lens.empty()) msg.AddData(s.lens);
    }
  }
  return msgs;
}

template <typename Val>
int KVWorker<Val>::Send(bool push, bool pull, const SArray<Key>& keys,
                        const SArray<Val>& vals, const SArray<int>& lens,
                        const KVRequestOptions& options, SArray<Val>* outs,
                        SArray<int>* out_lens, Callback cb) {
  if (pull && outs == nullptr) {
    return Fail(absl::InvalidArgumentError("Pull needs an output array"), cb);
  }
  // From the map's read until the request is registered (a drain waits
  // for it to be registered or routed by the new map).
  std::optional<Postoffice::RoutingScope> routing(std::in_place,
                                                  customer_.postoffice());
  absl::StatusOr<Routed> routed = RouteByMap(push, pull, keys, vals, lens);
  if (!routed.ok()) return Fail(routed.status(), cb);
  const OpMetrics& op = push && pull ? push_pull_metrics_
                        : push       ? push_metrics_
                                     : pull_metrics_;
  if (op.keys != nullptr) {  // null before Start
    op.keys->Increment(static_cast<int64_t>(keys.size()));
    op.bytes->Increment(static_cast<int64_t>(vals.size() * sizeof(Val)));
  }
  const absl::Time sent = absl::Now();
  Histogram* latency = op.latency;
  const std::vector<int>& recipients = routed->recipients;
  int ts = customer_.NewRequest(recipients, [this, cb, sent, latency](int ts) {
    if (latency != nullptr) {
      latency->Observe(absl::ToDoubleSeconds(absl::Now() - sent));
    }
    Complete(ts);
    if (cb) cb();
  });
  routing.reset();
  // Nothing is sent yet, so no answer can arrive before the state exists.
  std::vector<Message> msgs = EncodeSlices(push, pull, options, *routed, ts);
  if (pull) {
    auto state = std::make_unique<PullState>();
    state->num_keys = keys.size();
    state->vals = outs;
    state->lens = out_lens;
    state->min_clock = options.min_clock;
    state->parts.resize(routed->slices.size());
    absl::flat_hash_map<int, uint32_t> parts;  // as Customer numbers them
    for (size_t i = 0; i < recipients.size(); ++i) {
      state->slice_of_part[Customer::PartKey(recipients[i],
                                             parts[recipients[i]]++)] = i;
    }
    state->slices = std::move(routed->slices);
    absl::MutexLock lock(&mu_);
    pulls_[ts] = std::move(state);
  }
  for (Message& msg : msgs) {
    absl::Status st = customer_.SendRequest(std::move(msg));
    if (!st.ok()) {
      LOG_EVERY_T(WARNING, 1.0) << "send: " << st;
    }
  }
  return ts;
}

template <typename Val>
void KVWorker<Val>::RecordError(int timestamp, absl::Status error) {
  absl::Status& first = errors_[timestamp];
  if (first.ok()) first = std::move(error);
}

template <typename Val>
void KVWorker<Val>::OnResponse(Message&& msg) {
  const int ts = msg.meta.timestamp();
  absl::Status status = DecodeKvStatus(msg.meta);
  if (!status.ok()) {
    absl::MutexLock lock(&mu_);
    RecordError(ts, absl::Status(status.code(),
                                 absl::StrCat("server ", msg.meta.sender(),
                                              ": ", status.message())));
    return;
  }
  if (!msg.meta.pull()) return;
  PulledPart answer;
  absl::Status valid =
      CheckKvFrames(msg, DataTypeOf<Val>::kValue, max_message_bytes_);
  if (valid.ok()) {
    answer.vals = msg.data[0];
    if (msg.data.size() >= 2) answer.lens = SArray<int>(msg.data[1]);
  } else {
    CountBadAnswer(msg.meta.sender(), valid);
  }
  absl::Status mismatch;  // the answer's counts against the keys asked
  {
    absl::MutexLock lock(&mu_);
    auto it = pulls_.find(ts);
    if (it == pulls_.end()) return;
    PullState& state = *it->second;
    auto slice = state.slice_of_part.find(
        Customer::PartKey(msg.meta.sender(), msg.meta.part()));
    if (slice == state.slice_of_part.end()) return;
    if (valid.ok()) {
      // The answer carries no keys: it answers the keys this server was
      // asked, in their order.
      const KVSlice& asked = state.slices[slice->second];
      mismatch = CheckPulledPart(asked, answer, sizeof(Val));
      valid = mismatch;
      if (valid.ok() && answer.lens.empty() && !asked.keys.empty()) {
        last_pull_width_.store(
            answer.vals.size() / sizeof(Val) / asked.keys.size(),
            std::memory_order_relaxed);
      }
    }
    if (!valid.ok()) {
      RecordError(ts, absl::InvalidArgumentError(absl::StrCat(
                          "malformed answer from server ", msg.meta.sender(),
                          ": ", valid.message())));
    } else {
      if (state.min_clock_seen == -1 ||
          msg.meta.min_clock() < state.min_clock_seen) {
        state.min_clock_seen = msg.meta.min_clock();
      }
      state.parts[slice->second] = std::move(answer);
      if (state.slices.size() > 1) PlaceAnswer(state, slice->second);
    }
  }
  if (!mismatch.ok()) CountBadAnswer(msg.meta.sender(), mismatch);
}

template <typename Val>
void KVWorker<Val>::PlaceAnswer(PullState& state, size_t i) {
  const KVSlice& slice = state.slices[i];
  const PulledPart& part = state.parts[i];
  const size_t n = slice.keys.size();
  if (!state.eager || n == 0 || !part.lens.empty()) {
    state.eager = false;
    return;
  }
  if (state.placed_part.size() < state.slices.size()) {
    state.placed_part.resize(state.slices.size());
  }
  if (state.placed_part[i]) return;  // a resent part's second answer
  const size_t width = part.vals.size() / sizeof(Val) / n;
  if (state.placed == 0) {
    state.width = width;
    const size_t total = state.num_keys * width * sizeof(Val);
    state.merged = state.vals->buffer().size() == total
                       ? state.vals->buffer()
                       : Buffer::Allocate(total);
  } else if (width != state.width) {
    state.eager = false;
    return;
  }
  PlacePulledPart(slice, part.vals.data(), width * sizeof(Val),
                  state.merged.mutable_data());
  state.placed_part[i] = true;
  ++state.placed;
}

template <typename Val>
void KVWorker<Val>::CountBadAnswer(int sender, const absl::Status& error) {
  customer_.postoffice()->van()->CountDrop(
      kKvRejectReason,
      absl::StrCat("answer from node ", sender, ": ", error.message()));
}

template <typename Val>
void KVWorker<Val>::Complete(int timestamp) {
  std::unique_ptr<PullState> state;
  {
    absl::MutexLock lock(&mu_);
    auto it = pulls_.find(timestamp);
    if (it == pulls_.end()) return;  // a push
    state = std::move(it->second);
    pulls_.erase(it);
    if (errors_.contains(timestamp)) return;
  }
  // Failed (a server died, the job ended): the parts are incomplete and
  // the caller's arrays are not replaced (one of the right size may hold
  // the parts placed so far); Wait returns the failure.
  if (!customer_.RequestFailure(timestamp).ok()) return;
  if (state->min_clock != nullptr) *state->min_clock = state->min_clock_seen;
  if (state->eager && state->slices.size() > 1 &&
      state->placed == state->slices.size()) {
    // Every part is in place already (PlaceAnswer checked each).
    if (state->lens != nullptr) {
      *state->lens =
          SArray<int>(state->num_keys, static_cast<int>(state->width));
    }
    if (state->merged.data() != state->vals->buffer().data()) {
      *state->vals = SArray<Val>(state->merged);
    }
    return;
  }
  Buffer out = state->vals->buffer();
  absl::Status s = MergePulled(state->slices, state->parts, state->num_keys,
                               sizeof(Val), &out, state->lens);
  if (s.ok()) {
    if (out.data() != state->vals->buffer().data() ||
        out.size() != state->vals->buffer().size()) {
      *state->vals = SArray<Val>(out);
    }
    return;
  }
  absl::MutexLock lock(&mu_);
  errors_[timestamp] = s;
}

template <typename Val>
absl::Status KVWorker<Val>::Wait(int timestamp, absl::Duration timeout) {
  absl::Status s = customer_.Wait(timestamp, timeout);
  if (!s.ok()) {
    if (!absl::IsDeadlineExceeded(s)) {  // failed: its state is done with
      absl::MutexLock lock(&mu_);
      pulls_.erase(timestamp);
      errors_.erase(timestamp);
    }
    return s;
  }
  absl::MutexLock lock(&mu_);
  auto it = errors_.find(timestamp);
  if (it == errors_.end()) return absl::OkStatus();
  absl::Status error = std::move(it->second);
  errors_.erase(it);
  return error;
}

template class KVWorker<float>;
template class KVWorker<double>;
template class KVWorker<int32_t>;
template class KVWorker<int64_t>;

}  // namespace petrel
