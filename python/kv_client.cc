#include "python/kv_client.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "base/status_macros.h"
#include "kv/kv_typed_stores.h"
#include "van/message.h"

namespace petrel {
namespace {

// The app id of Broadcast's messages (the KVWorkers use KVAppOf<Val>: 0,
// 10, 11, 12).
constexpr int kBroadcastApp = 1;

bool HasTableOptions(const KVRequestOptions& options) {
  return options.table_id != 0 || options.clock != -1;
}

template <typename Val>
absl::Status StartWorker(Postoffice* po, std::unique_ptr<KVWorker<Val>>* kv) {
  *kv = std::make_unique<KVWorker<Val>>(KVAppOf<Val>(), /*customer_id=*/0, po);
  return (*kv)->Start();
}

constexpr char kLensNeedTableZero[] =
    "lens (variable-length values) work with table 0 and no clock only";

}  // namespace

KVClient::KVClient(const NodeSettings& settings) : runtime_(settings) {}

KVClient::~KVClient() { Close(); }

absl::Status KVClient::Start() {
  absl::WriterMutexLock lock(&lifetime_mu_);
  if (started_ || closed_) {
    return absl::FailedPreconditionError("the client was started already");
  }
  Postoffice* po = runtime_.postoffice();
  PETREL_RETURN_IF_ERROR(StartWorker(po, &std::get<0>(kv_)));
  PETREL_RETURN_IF_ERROR(StartWorker(po, &std::get<1>(kv_)));
  PETREL_RETURN_IF_ERROR(StartWorker(po, &std::get<2>(kv_)));
  PETREL_RETURN_IF_ERROR(StartWorker(po, &std::get<3>(kv_)));
  // Started before joining, so that every worker can receive once the
  // cluster is complete.
  broadcast_ = std::make_unique<SimpleApp>(kBroadcastApp, /*customer_id=*/0,
                                           runtime_.postoffice());
  broadcast_->set_request_handler(
      [this](const SimpleData& data, SimpleApp* app) {
        if (!data.duplicate) {  // a resend of a value already queued
          absl::MutexLock lock(&mu_);
          broadcasts_.push_back(data.body);
        }
        absl::Status s = app->Response(data);
        if (!s.ok()) LOG(WARNING) << "answering a broadcast: " << s;
      });
  PETREL_RETURN_IF_ERROR(broadcast_->Start());
  PETREL_RETURN_IF_ERROR(runtime_.Start());
  started_ = true;
  return absl::OkStatus();
}

KVClient::Callback KVClient::Completion(const std::shared_ptr<KVTicket>& t) {
  // Runs on the van thread (or in the issuing call): must not block.
  return [this, t]() {
    if (!t->notify) return;
    absl::MutexLock lock(&mu_);
    completed_.push_back(t);
  };
}

template <typename Val>
void KVClient::Issue(const std::shared_ptr<TypedKVTicket<Val>>& ticket,
                     const std::function<int(KVWorker<Val>*, Callback)>& send) {
  ticket->given_out = ticket->out.data();
  absl::ReaderMutexLock lock(&lifetime_mu_);
  if (!started_ || closed_) {
    Reject(ticket,
           absl::FailedPreconditionError(
               closed_ ? "the client is closed" : "the client has not joined"));
    return;
  }
  ticket->timestamp_ = send(worker<Val>(), Completion(ticket));
  ticket->issued_.Notify();
}

void KVClient::Reject(const std::shared_ptr<KVTicket>& ticket,
                      absl::Status status) {
  {
    absl::MutexLock lock(&ticket->mu_);
    ticket->final_ = std::move(status);
  }
  ticket->issued_.Notify();
  if (ticket->notify) {
    absl::MutexLock lock(&mu_);
    completed_.push_back(ticket);
  }
}

template <typename Val>
std::shared_ptr<TypedKVTicket<Val>> KVClient::Push(
    const SArray<Key>& keys, const SArray<Val>& vals, const SArray<int>& lens,
    const KVRequestOptions& options, bool notify) {
  auto t = std::make_shared<TypedKVTicket<Val>>();
  t->notify = notify;
  if (!lens.empty() && HasTableOptions(options)) {
    Reject(t, absl::InvalidArgumentError(kLensNeedTableZero));
    return t;
  }
  Issue<Val>(t, [&](KVWorker<Val>* kv, Callback cb) {
    if (!lens.empty())
      return kv->Push(keys, vals, lens, options.cmd, std::move(cb));
    return kv->Push(keys, vals, options, std::move(cb));
  });
  return t;
}

template <typename Val>
std::shared_ptr<TypedKVTicket<Val>> KVClient::Pull(
    const SArray<Key>& keys, SArray<Val> out, bool want_lens,
    const KVRequestOptions& options, bool notify) {
  auto t = std::make_shared<TypedKVTicket<Val>>();
  t->notify = notify;
  t->is_pull = true;
  t->out = std::move(out);
  if (want_lens && HasTableOptions(options)) {
    Reject(t, absl::InvalidArgumentError(kLensNeedTableZero));
    return t;
  }
  KVRequestOptions with_clock = options;
  with_clock.min_clock = &t->min_clock;
  Issue<Val>(t, [&](KVWorker<Val>* kv, Callback cb) {
    if (want_lens)
      return kv->Pull(keys, &t->out, &t->lens, options.cmd, std::move(cb));
    return kv->Pull(keys, &t->out, with_clock, std::move(cb));
  });
  return t;
}

template <typename Val>
std::shared_ptr<TypedKVTicket<Val>> KVClient::PushPull(
    const SArray<Key>& keys, const SArray<Val>& vals, SArray<Val> out,
    const KVRequestOptions& options, bool notify) {
  auto t = std::make_shared<TypedKVTicket<Val>>();
  t->notify = notify;
  t->is_pull = true;
  t->out = std::move(out);
  KVRequestOptions with_clock = options;
  with_clock.min_clock = &t->min_clock;
  Issue<Val>(t, [&](KVWorker<Val>* kv, Callback cb) {
    return kv->PushPull(keys, vals, &t->out, with_clock, std::move(cb));
  });
  return t;
}

absl::Status KVClient::Wait(KVTicket& ticket, absl::Duration timeout) {
  ticket.issued_.WaitForNotification();
  {
    absl::MutexLock lock(&ticket.mu_);
    if (ticket.final_.has_value()) return *ticket.final_;
  }
  absl::ReaderMutexLock lifetime(&lifetime_mu_);
  if (worker<float>() == nullptr) {
    return absl::FailedPreconditionError(
        "the client closed before the request completed");
  }
  const int ts = ticket.timestamp_;
  bool complete = false;
  absl::Status s = WithWorker(ticket.value_type, [&](auto* kv) {
    absl::Status waited = kv->Wait(ts, timeout);
    complete = waited.ok() || kv->customer()->IsComplete(ts);
    return waited;
  });
  absl::MutexLock lock(&ticket.mu_);
  if (ticket.final_.has_value()) return *ticket.final_;  // another waiter
  // A Wait that timed out leaves the request outstanding; anything else
  // (including a server's own DeadlineExceeded) ends it.
  if (!complete) return s;
  ticket.final_ = s;
  return s;
}

bool KVClient::Done(KVTicket& ticket) {
  if (!ticket.issued_.HasBeenNotified()) return false;
  {
    absl::MutexLock lock(&ticket.mu_);
    if (ticket.final_.has_value()) return true;
  }
  absl::ReaderMutexLock lifetime(&lifetime_mu_);
  if (worker<float>() == nullptr) return true;
  return WithWorker(ticket.value_type, [&](auto* kv) {
    return kv->customer()->IsComplete(ticket.timestamp_);
  });
}

std::shared_ptr<KVTicket> KVClient::NextCompleted(absl::Duration timeout) {
  auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return closing_ || !completed_.empty();
  };
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  if (completed_.empty()) return nullptr;
  std::shared_ptr<KVTicket> t = std::move(completed_.front());
  completed_.pop_front();
  return t;
}

absl::StatusOr<std::string> KVClient::Broadcast(const std::string& value,
                                                int root,
                                                absl::Duration timeout) {
  absl::ReaderMutexLock lock(&lifetime_mu_);
  if (!started_ || closed_) {
    return absl::FailedPreconditionError("the client is not in a cluster");
  }
  Postoffice* po = runtime_.postoffice();
  if (root < 0 || root >= po->num_workers()) {
    return absl::InvalidArgumentError(absl::StrCat("root ", root,
                                                   " is not a worker rank (0..",
                                                   po->num_workers() - 1, ")"));
  }
  if (po->my_rank() == root) {
    std::vector<int> sent;
    for (int id : po->GetNodeIds(kWorkerGroup)) {
      if (id != po->my_id()) sent.push_back(broadcast_->Request(0, value, id));
    }
    for (int ts : sent) {
      PETREL_RETURN_IF_ERROR(Annotate(broadcast_->Wait(ts, timeout),
                                      "broadcasting to the workers"));
    }
    return value;
  }
  auto arrived = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return !broadcasts_.empty();
  };
  absl::MutexLock queue_lock(&mu_);
  if (!mu_.AwaitWithTimeout(absl::Condition(&arrived), timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat("no broadcast from worker ", root, " within ",
                     absl::FormatDuration(timeout)));
  }
  std::string got = std::move(broadcasts_.front());
  broadcasts_.pop_front();
  return got;
}

absl::Status KVClient::Barrier(absl::Duration timeout) {
  absl::ReaderMutexLock lock(&lifetime_mu_);
  if (!started_ || closed_) {
    return absl::FailedPreconditionError("the client is not in a cluster");
  }
  return runtime_.postoffice()->Barrier(kWorkerGroup, timeout);
}

absl::Status KVClient::Finish(absl::Duration timeout) {
  absl::Status s;
  {
    absl::ReaderMutexLock lock(&lifetime_mu_);
    if (!started_ || closed_) {
      return absl::FailedPreconditionError("the client is not in a cluster");
    }
    s = Annotate(runtime_.postoffice()->Finish(timeout), "finishing the job");
  }
  Close();
  return s;
}

void KVClient::Close() {
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;  // wakes NextCompleted
  }
  absl::WriterMutexLock lock(&lifetime_mu_);
  if (closed_) return;
  closed_ = true;
  kv_ = {};
  broadcast_.reset();
  runtime_.Stop();
  absl::MutexLock queue_lock(&mu_);
  completed_.clear();
}

#define PETREL_KV_CLIENT_INSTANTIATE(Val)                                    \
  template std::shared_ptr<TypedKVTicket<Val>> KVClient::Push<Val>(          \
      const SArray<Key>&, const SArray<Val>&, const SArray<int>&,            \
      const KVRequestOptions&, bool);                                        \
  template std::shared_ptr<TypedKVTicket<Val>> KVClient::Pull<Val>(          \
      const SArray<Key>&, SArray<Val>, bool, const KVRequestOptions&, bool); \
  template std::shared_ptr<TypedKVTicket<Val>> KVClient::PushPull<Val>(      \
      const SArray<Key>&, const SArray<Val>&, SArray<Val>,                   \
      const KVRequestOptions&, bool);
PETREL_KV_CLIENT_INSTANTIATE(float)
PETREL_KV_CLIENT_INSTANTIATE(double)
PETREL_KV_CLIENT_INSTANTIATE(int32_t)
PETREL_KV_CLIENT_INSTANTIATE(int64_t)
#undef PETREL_KV_CLIENT_INSTANTIATE

}  // namespace petrel
