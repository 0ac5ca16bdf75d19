#include "cluster/customer.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"

#include "cluster/postoffice.h"

namespace petrel {
namespace {

// Bounds on requests held for a missing sequence number: per stream, and in
// bytes over all streams of a customer. Past either the gap is skipped.
constexpr size_t kMaxHeldPerStream = 16384;
// A request further ahead of the next expected one than this is dropped.
constexpr uint64_t kMaxSeqAhead = uint64_t{1} << 16;
constexpr size_t kMaxHeldBytes = size_t{256} << 20;
// Counted per held request besides its data.
constexpr size_t kHeldOverheadBytes = 512;
// Failed requests remembered for their Wait.
constexpr size_t kMaxFailures = 4096;

size_t HeldSize(const Message& msg) {
  return msg.DataBytes() + kHeldOverheadBytes;
}

}  // namespace

Customer::Customer(int app_id, int customer_id, Postoffice* postoffice,
                   CustomerOptions options)
    : app_id_(app_id),
      customer_id_(customer_id),
      postoffice_(postoffice),
      options_(options) {}

Customer::~Customer() { Stop(); }

absl::Status Customer::Start() {
  resent_ = postoffice_->metrics()->GetCounter(
      "petrel_customer_resent_total",
      "Request messages sent again because no answer came in time.");
  duplicates_ = postoffice_->metrics()->GetCounter(
      "petrel_customer_duplicates_total",
      "Requests received again (resent) and not handled as new.");
  absl::Status s =
      postoffice_->AddCustomer(this, static_cast<bool>(request_handler_));
  started_ = s.ok();
  return s;
}

void Customer::Stop() {
  if (!started_) return;
  postoffice_->RemoveCustomer(this);
  started_ = false;
}

int Customer::NewRequest(const std::vector<int>& recipients,
                         CompletionHandler on_complete) {
  // A request to a node already declared dead fails at once.
  absl::Status alive = postoffice_->CheckAlive(recipients);
  std::vector<int> dead;
  if (!alive.ok() && failover_hooks_.reroute) {
    for (int r : recipients) {
      if (!postoffice_->CheckAlive({r}).ok()) dead.push_back(r);
    }
  }
  CompletionHandler run_now;
  int ts;
  {
    absl::MutexLock lock(&mu_);
    if (!dead.empty()) {
      // Nodes that failed over: SendRequest moves their messages.
      bool all_moved = true;
      for (int r : dead) all_moved = all_moved && MovedTo(r) != 0;
      if (all_moved) alive = absl::OkStatus();
    }
    ts = next_timestamp_++;
    if (recipients.empty()) {
      run_now = std::move(on_complete);
    } else {
      postoffice_->van()->RequestOpened();
      Pending& p = pending_[ts];
      absl::flat_hash_map<int, int> parts;
      for (int r : recipients) p.waiting.insert(PartKey(r, parts[r]++));
      p.on_complete = std::move(on_complete);
      p.last_sent = absl::Now();
    }
  }
  if (run_now) run_now(ts);
  if (!alive.ok() && !recipients.empty()) {
    FailWhere([ts](int t, const Pending&) { return t == ts; }, alive);
  }
  return ts;
}

absl::Status Customer::SendRequest(Message msg) {
  msg.meta.set_app_id(app_id_);
  msg.meta.set_customer_id(customer_id_);
  msg.meta.set_request(true);
  MovedOnSend moved;
  // The current map, to cut a message to a node that failed over
  // (FailoverHooks::split); read without the lock.
  std::optional<KeyRangeMap> ranges;
  for (bool retry = true; retry;) {
    retry = false;
    if (failover_hooks_.split && !ranges.has_value() &&
        any_moved_.load(std::memory_order_acquire)) {
      ranges = postoffice_->key_ranges();
    }
    absl::MutexLock lock(&mu_);
    // Addressed to a node that failed over after the request was sliced:
    // it goes to the node that took over (FailOver), or, cut by the map,
    // to the nodes that lead its keys now.
    if (!moved_to_.empty() && failover_hooks_.split && !ranges.has_value() &&
        MovedTo(msg.meta.recipient()) != 0) {
      retry = true;  // read the map first
      continue;
    }
    moved.moved = !moved_to_.empty() &&
                  RerouteOnSend(&msg, ranges ? &*ranges : nullptr, &moved);
    const int recipient = msg.meta.recipient();
    auto it =
        moved.moved ? pending_.end() : pending_.find(msg.meta.timestamp());
    if (moved.moved) {
      // RerouteOnSend numbered and kept it.
    } else if (it != pending_.end()) {
      msg.meta.set_seq(++next_seq_[recipient]);
      const int part = it->second.parts_sent[recipient]++;
      msg.meta.set_part(part);
      if (options_.resend_timeout > absl::ZeroDuration()) {
        it->second.bytes += msg.DataBytes();
        it->second.sent[PartKey(recipient, part)] = msg;
      }
    } else if (failures_.contains(msg.meta.timestamp())) {
      return absl::OkStatus();  // failed (a dead recipient): nobody waits
    } else {
      msg.meta.set_seq(++next_seq_[recipient]);
    }
  }
  if (!moved.pieces.empty()) {
    if (failover_hooks_.split_rerouted) {
      failover_hooks_.split_rerouted(moved.timestamp, moved.from, moved.to,
                                     moved.pieces);
    }
    absl::Status status;
    for (Message& piece : moved.pieces) {
      absl::Status s = postoffice_->Send(std::move(piece));
      if (status.ok()) status = s;
    }
    return status;
  }
  if (moved.moved && failover_hooks_.rerouted) {
    failover_hooks_.rerouted(moved.timestamp, moved.from, moved.to[0]);
  }
  return postoffice_->Send(std::move(msg));
}

absl::Status Customer::SendResponse(const ReplyAddress& to, Message response) {
  response.meta.set_app_id(app_id_);
  response.meta.set_customer_id(to.customer_id);
  response.meta.set_request(false);
  response.meta.set_timestamp(to.timestamp);
  response.meta.set_recipient(to.sender);
  response.meta.set_part(to.part);
  return postoffice_->Send(std::move(response));
}

absl::Status Customer::Wait(int timestamp, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  auto done = [this, timestamp]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
    return !pending_.contains(timestamp);
  };
  absl::MutexLock lock(&mu_);
  if (postoffice_->van()->AwaitResponse(&mu_, absl::Condition(&done),
                                        deadline)) {
    // Kept, not consumed: a caller that waits again (to read the status
    // after a sliced wait) must not see the failed request succeed.
    auto failed = failures_.find(timestamp);
    return failed == failures_.end() ? absl::OkStatus() : failed->second;
  }
  std::vector<int> missing;
  for (uint64_t key : pending_[timestamp].waiting) {
    missing.push_back(static_cast<int>(key >> 32));
  }
  std::sort(missing.begin(), missing.end());
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
  return absl::DeadlineExceededError(absl::StrCat(
      "request ", timestamp, " of app ", app_id_, ": no response within ",
      absl::FormatDuration(timeout), " from node(s) ",
      absl::StrJoin(missing, ", ", [](std::string* out, int id) {
        absl::StrAppend(out, id,
                        IsServerId(id)   ? " (server "
                        : IsWorkerId(id) ? " (worker "
                                         : " (node ",
                        IdToRank(id), ")");
      })));
}

bool Customer::IsComplete(int timestamp) {
  absl::MutexLock lock(&mu_);
  return timestamp < next_timestamp_ && !pending_.contains(timestamp);
}

void Customer::Accept(Message&& msg) {
  if (!msg.meta.request()) {
    AcceptResponse(std::move(msg));
    return;
  }
  Dispatch(SequenceRequest(std::move(msg)));
}

void Customer::Dispatch(Ready ready) {
  if (!request_handler_) return;
  for (auto& [msg, duplicate] : ready) {
    request_handler_(std::move(msg), duplicate);
  }
}

Customer::Ready Customer::SequenceRequest(Message&& msg) {
  Ready out;
  const uint64_t seq = msg.meta.seq();
  if (seq == 0) {  // not sequenced
    out.emplace_back(std::move(msg), false);
    return out;
  }
  const uint64_t stream = (static_cast<uint64_t>(msg.meta.sender()) << 32) |
                          static_cast<uint32_t>(msg.meta.customer_id());
  const absl::Time now = absl::Now();
  absl::MutexLock lock(&mu_);
  SeqWindow& w = seen_[stream];
  if (seq < w.next) {
    if (duplicates_ != nullptr) duplicates_->Increment();
    out.emplace_back(std::move(msg), true);
    return out;
  }
  // A copy of a held request: the held one is answered when it runs.
  if (w.held.contains(seq)) return out;
  if (seq - w.next > kMaxSeqAhead) {
    // Further ahead than any gap we wait for: holding it would let one
    // bad number skip the stream past every request still to come, and
    // those would then be acknowledged as duplicates without being run.
    LOG_EVERY_T(WARNING, 1.0)
        << "app " << app_id_ << " customer " << customer_id_
        << ": dropped request seq " << seq << " of node " << (stream >> 32)
        << " customer " << static_cast<uint32_t>(stream) << ", more than "
        << kMaxSeqAhead << " ahead of " << w.next;
    return out;
  }
  if (seq == w.next) {
    ++w.next;
    out.emplace_back(std::move(msg), false);
    ReleaseHeld(w, now, &out);
    return out;
  }
  if (w.held.empty()) w.gap_since = now;
  const size_t bytes = HeldSize(msg);
  w.held.emplace(seq, std::move(msg));
  w.held_bytes += bytes;
  held_bytes_ += bytes;
  if (w.held.size() > kMaxHeldPerStream || held_bytes_ > kMaxHeldBytes) {
    SkipGap(stream, w, &out);
  }
  return out;
}

void Customer::ReleaseHeld(SeqWindow& w, absl::Time now, Ready* out) {
  while (!w.held.empty() && w.held.begin()->first == w.next) {
    auto it = w.held.begin();
    const size_t bytes = HeldSize(it->second);
    w.held_bytes -= bytes;
    held_bytes_ -= bytes;
    out->emplace_back(std::move(it->second), false);
    w.held.erase(it);
    ++w.next;
  }
  w.gap_since = now;  // a wait for the new `next`, if any, starts now
}

void Customer::SkipGap(uint64_t stream, SeqWindow& w, Ready* out) {
  if (w.held.empty()) return;
  LOG_EVERY_T(WARNING, 1.0)
      << "app " << app_id_ << " customer " << customer_id_
      << ": gave up waiting for requests " << w.next << ".."
      << w.held.begin()->first - 1 << " of node " << (stream >> 32)
      << " customer " << static_cast<uint32_t>(stream) << "; handling the "
      << w.held.size() << " that came after them";
  for (auto& [seq, msg] : w.held) {
    out->emplace_back(std::move(msg), false);
    w.next = seq + 1;
  }
  held_bytes_ -= w.held_bytes;
  w.held_bytes = 0;
  w.held.clear();
}

void Customer::AcceptResponse(Message&& msg) {
  const int ts = msg.meta.timestamp();
  const uint64_t part = PartKey(msg.meta.sender(), msg.meta.part());
  {
    absl::MutexLock lock(&mu_);
    auto it = pending_.find(ts);
    if (it == pending_.end() || !it->second.waiting.contains(part)) {
      VLOG(2) << "duplicate or late response " << msg.DebugString();
      return;
    }
  }
  // The handler merges the data before the request counts as complete; only
  // this thread removes `part`, so the entry cannot vanish meanwhile.
  if (response_handler_) response_handler_(std::move(msg));
  CompletionHandler on_complete;
  std::vector<Message> released;  // moved pulls this answer lets go
  bool done;
  {
    absl::MutexLock lock(&mu_);
    auto it = pending_.find(ts);
    it->second.waiting.erase(part);
    it->second.sent.erase(part);
    if (!after_pushes_.empty()) released = TakeReleased();
    done = it->second.waiting.empty();
    if (done) on_complete = std::move(it->second.on_complete);
  }
  SendReleased(std::move(released));
  if (!done) return;
  // Before the entry goes: waiters must see the handler's effects.
  if (on_complete) on_complete(ts);
  postoffice_->van()->RequestClosed();
  absl::MutexLock lock(&mu_);
  pending_.erase(ts);
}

void Customer::Tick(absl::Time now) {
  Ready ready;
  {
    absl::MutexLock lock(&mu_);
    if (held_bytes_ > 0) {
      for (auto& [stream, w] : seen_) {
        if (!w.held.empty() && now - w.gap_since >= options_.max_reorder_wait) {
          SkipGap(stream, w, &ready);
        }
      }
    }
  }
  Dispatch(std::move(ready));
  if (options_.resend_timeout <= absl::ZeroDuration()) return;
  std::vector<Message> resend;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [ts, p] : pending_) {
      if (p.resends >= options_.max_resends ||
          now - p.last_sent < ResendInterval(p.resends, p.bytes)) {
        continue;
      }
      p.last_sent = now;
      ++p.resends;
      for (auto& [key, m] : p.sent) {
        if (!p.held_back.contains(key)) resend.push_back(m);
      }
    }
  }
  if (!resend.empty()) {
    if (resent_ != nullptr) resent_->Increment(resend.size());
    LOG_EVERY_T(WARNING, 1.0)
        << "app " << app_id_ << " customer " << customer_id_ << ": resending "
        << resend.size() << " unanswered request message(s), e.g. to node "
        << resend.front().meta.recipient();
  }
  for (Message& m : resend) {
    VLOG(1) << "resending " << m.DebugString();
    absl::Status s = postoffice_->Send(std::move(m));
    if (!s.ok()) {
      LOG_EVERY_T(WARNING, 1.0) << "resend failed: " << s;
    }
  }
}

absl::Duration Customer::ResendInterval(int resends, size_t bytes) const {
  absl::Duration interval = options_.resend_timeout;
  for (int i = 0; i < resends && interval < options_.max_resend_interval; ++i) {
    interval *= 2;
  }
  interval = std::min(interval, std::max(options_.max_resend_interval,
                                         options_.resend_timeout));
  if (options_.resend_min_bytes_per_second > 0) {
    interval += absl::Seconds(static_cast<double>(bytes) /
                              options_.resend_min_bytes_per_second);
  }
  return interval;
}

void Customer::FailRequestsTo(int node_id, const absl::Status& status) {
  FailWhere(
      [node_id](int, const Pending& p) {
        for (uint64_t key : p.waiting) {
          if (static_cast<int>(key >> 32) == node_id) return true;
        }
        return false;
      },
      status);
}

bool Customer::HasPendingTo(int node_id) {
  absl::MutexLock lock(&mu_);
  for (const auto& [ts, p] : pending_) {
    for (uint64_t key : p.waiting) {
      if (static_cast<int>(key >> 32) == node_id) return true;
    }
  }
  return false;
}

size_t Customer::FailAll(const absl::Status& status) {
  return FailWhere([](int, const Pending&) { return true; }, status);
}

absl::Status Customer::RequestFailure(int timestamp) {
  absl::MutexLock lock(&mu_);
  auto it = pending_.find(timestamp);
  return it == pending_.end() ? absl::OkStatus() : it->second.failure;
}

size_t Customer::FailWhere(const std::function<bool(int, const Pending&)>& fail,
                           const absl::Status& status) {
  std::vector<std::pair<int, CompletionHandler>> failed;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [ts, p] : pending_) {
      if (!p.failure.ok() || !fail(ts, p)) continue;
      p.failure = status;
      p.waiting.clear();
      p.sent.clear();
      failed.emplace_back(ts, std::move(p.on_complete));
    }
  }
  // As AcceptResponse completes a request: the handler first, then the
  // entry goes and Wait returns.
  for (auto& [ts, on_complete] : failed) {
    if (on_complete) on_complete(ts);
    postoffice_->van()->RequestClosed();
    absl::MutexLock lock(&mu_);
    failures_[ts] = status;
    if (failures_.size() > kMaxFailures) failures_.erase(failures_.begin());
    pending_.erase(ts);
  }
  std::vector<Message> released;  // moved pulls waiting on a failed push
  if (!failed.empty()) {
    absl::MutexLock lock(&mu_);
    released = TakeReleased();
  }
  SendReleased(std::move(released));
  return failed.size();
}

}  // namespace petrel
