#include "van/customer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"

#include "van/postoffice.h"

namespace petrel {
namespace {

constexpr size_t kMaxSeqAhead = 1 << 16;

}  // namespace

bool Customer::SeqWindow::Insert(uint64_t seq) {
  if (seq < next || ahead.contains(seq)) return false;
  if (seq == next) {
    ++next;
    while (ahead.erase(next) > 0) ++next;
    return true;
  }
  ahead.insert(seq);
  if (ahead.size() > kMaxSeqAhead) {
    // A sequence number that never came (its sender gave up): move on.
    uint64_t lowest = *std::min_element(ahead.begin(), ahead.end());
    next = lowest;
    while (ahead.erase(next) > 0) ++next;
  }
  return true;
}

Customer::Customer(int app_id, int customer_id, Postoffice* postoffice,
                   CustomerOptions options)
    : app_id_(app_id),
      customer_id_(customer_id),
      postoffice_(postoffice),
      options_(options) {}

Customer::~Customer() { Stop(); }

absl::Status Customer::Start() {
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
  CompletionHandler run_now;
  int ts;
  {
    absl::MutexLock lock(&mu_);
    ts = next_timestamp_++;
    if (recipients.empty()) {
      run_now = std::move(on_complete);
    } else {
      Pending& p = pending_[ts];
      absl::flat_hash_map<int, int> parts;
      for (int r : recipients) p.waiting.insert(PartKey(r, parts[r]++));
      p.on_complete = std::move(on_complete);
      p.last_sent = absl::Now();
    }
  }
  if (run_now) run_now(ts);
  return ts;
}

absl::Status Customer::SendRequest(Message msg) {
  msg.meta.set_app_id(app_id_);
  msg.meta.set_customer_id(customer_id_);
  msg.meta.set_request(true);
  {
    absl::MutexLock lock(&mu_);
    const int recipient = msg.meta.recipient();
    msg.meta.set_seq(++next_seq_[recipient]);
    auto it = pending_.find(msg.meta.timestamp());
    if (it != pending_.end()) {
      const int part = it->second.parts_sent[recipient]++;
      msg.meta.set_part(part);
      if (options_.resend_timeout > absl::ZeroDuration()) {
        it->second.sent[PartKey(recipient, part)] = msg;
      }
    }
  }
  return postoffice_->Send(std::move(msg));
}

absl::Status Customer::SendResponse(const Message& request, Message response) {
  response.meta.set_app_id(app_id_);
  response.meta.set_customer_id(request.meta.customer_id());
  response.meta.set_request(false);
  response.meta.set_timestamp(request.meta.timestamp());
  response.meta.set_recipient(request.meta.sender());
  response.meta.set_push(request.meta.push());
  response.meta.set_pull(request.meta.pull());
  response.meta.set_head(request.meta.head());
  response.meta.set_table_id(request.meta.table_id());
  response.meta.set_part(request.meta.part());
  return postoffice_->Send(std::move(response));
}

absl::Status Customer::Wait(int timestamp, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto done = [this, timestamp]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
    return !pending_.contains(timestamp);
  };
  if (mu_.AwaitWithTimeout(absl::Condition(&done), timeout)) {
    return absl::OkStatus();
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
  bool duplicate = IsDuplicateRequest(msg);
  if (request_handler_) {
    request_handler_(std::move(msg), duplicate);
  }
}

bool Customer::IsDuplicateRequest(const Message& msg) {
  if (msg.meta.seq() == 0) return false;  // not sequenced
  absl::MutexLock lock(&mu_);
  uint64_t stream = (static_cast<uint64_t>(msg.meta.sender()) << 32) |
                    static_cast<uint32_t>(msg.meta.customer_id());
  return !seen_[stream].Insert(msg.meta.seq());
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
  {
    absl::MutexLock lock(&mu_);
    auto it = pending_.find(ts);
    it->second.waiting.erase(part);
    it->second.sent.erase(part);
    if (!it->second.waiting.empty()) return;
    on_complete = std::move(it->second.on_complete);
  }
  // Before the entry goes: waiters must see the handler's effects.
  if (on_complete) on_complete(ts);
  absl::MutexLock lock(&mu_);
  pending_.erase(ts);
}

void Customer::Tick(absl::Time now) {
  if (options_.resend_timeout <= absl::ZeroDuration()) return;
  std::vector<Message> resend;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [ts, p] : pending_) {
      if (now - p.last_sent < options_.resend_timeout ||
          p.resends >= options_.max_resends) {
        continue;
      }
      p.last_sent = now;
      ++p.resends;
      for (auto& [recipient, m] : p.sent) resend.push_back(m);
    }
  }
  for (Message& m : resend) {
    VLOG(1) << "resending " << m.DebugString();
    absl::Status s = postoffice_->Send(std::move(m));
    if (!s.ok()) {
      LOG_EVERY_T(WARNING, 1.0) << "resend failed: " << s;
    }
  }
}

}  // namespace petrel
