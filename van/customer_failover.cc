// Customer::FailOver: pending requests to a server that died continue on
// the replica that took over its ranges (docs/failures.md, "Replicated
// servers"). Kept apart from customer.cc's sequencing and resends.
#include "absl/container/flat_hash_set.h"
#include "glog/logging.h"

#include "van/customer.h"
#include "van/postoffice.h"

namespace petrel {

int Customer::MovedTo(int id) const {
  int to = id;
  // Successive failovers chain (at most one per server).
  for (size_t hops = 0; hops <= moved_to_.size(); ++hops) {
    auto it = moved_to_.find(to);
    if (it == moved_to_.end()) break;
    to = it->second;
  }
  return to == id ? 0 : to;
}

uint64_t Customer::Reroute(Pending& p, Message* msg, int to) {
  // A part number of its own: the request may have (or still send) parts
  // of its own to `to`.
  const int part = kReroutedPartBase + p.rerouted++;
  msg->meta.set_recipient(to);
  msg->meta.set_part(part);
  const uint64_t key = PartKey(to, part);
  p.waiting.insert(key);
  if (options_.resend_timeout > absl::ZeroDuration()) p.sent[key] = *msg;
  return key;
}

bool Customer::RerouteOnSend(Message* msg, int* timestamp, uint64_t* from,
                             uint64_t* to) {
  const int dead = msg->meta.recipient();
  const int successor = MovedTo(dead);
  if (successor == 0) return false;
  auto it = pending_.find(msg->meta.timestamp());
  if (it == pending_.end()) return false;
  Pending& p = it->second;
  // Never sent to the dead node: a new message to the successor, numbered
  // in its stream like any other (no copy of it exists anywhere).
  const int own_part = p.parts_sent[dead]++;
  *from = PartKey(dead, own_part);
  if (!p.waiting.erase(*from)) return false;
  msg->meta.set_seq(++next_seq_[successor]);
  p.bytes += msg->DataBytes();
  *to = Reroute(p, msg, successor);
  *timestamp = msg->meta.timestamp();
  return true;
}

void Customer::ForgetPeer(int id) {
  absl::MutexLock lock(&mu_);
  next_seq_.erase(id);
  moved_to_.erase(id);
  for (auto it = seen_.begin(); it != seen_.end();) {
    if (static_cast<int>(it->first >> 32) == id) {
      held_bytes_ -= it->second.held_bytes;
      seen_.erase(it++);
    } else {
      ++it;
    }
  }
}

void Customer::FailOver(int dead, int successor, const absl::Status& status) {
  if (!failover_hooks_.reroute) {
    FailRequestsTo(dead, status);
    return;
  }
  struct Moved {
    int timestamp;
    uint64_t from;
    uint64_t to;
    Message msg;
  };
  std::vector<Moved> moved;
  absl::flat_hash_set<int> fail;
  std::vector<std::pair<int, CompletionHandler>> completed;
  {
    absl::MutexLock lock(&mu_);
    moved_to_[dead] = successor;
    for (auto& [ts, p] : pending_) {
      if (!p.failure.ok()) continue;
      std::vector<uint64_t> parts;
      for (uint64_t key : p.waiting) {
        if (static_cast<int>(key >> 32) == dead) parts.push_back(key);
      }
      if (parts.empty()) continue;
      for (uint64_t key : parts) {
        auto it = p.sent.find(key);
        if (it == p.sent.end()) {
          const int part = static_cast<int>(key & 0xffffffffu);
          // Not sent yet (another thread is sending the request): its
          // SendRequest moves it. Sent but not kept (resends off): lost.
          if (options_.resend_timeout > absl::ZeroDuration() &&
              part < kReroutedPartBase && part >= p.parts_sent[dead]) {
            continue;
          }
          fail.insert(ts);
          break;
        }
        Message msg = it->second;  // shares the data frames
        const int to = failover_hooks_.reroute(&msg, successor);
        if (to < 0) {
          fail.insert(ts);
          break;
        }
        p.waiting.erase(key);
        p.sent.erase(it);
        if (to == 0) continue;  // counts as answered
        msg.meta.set_seq(0);    // its origin fields identify it
        const uint64_t new_key = Reroute(p, &msg, to);
        moved.push_back(Moved{ts, key, new_key, std::move(msg)});
      }
      if (!fail.contains(ts) && p.waiting.empty()) {
        completed.emplace_back(ts, std::move(p.on_complete));
      }
    }
  }
  if (!fail.empty()) {
    FailWhere([&fail](int ts, const Pending&) { return fail.contains(ts); },
              status);
  }
  for (Moved& m : moved) {
    if (fail.contains(m.timestamp)) continue;
    if (failover_hooks_.rerouted) {
      failover_hooks_.rerouted(m.timestamp, m.from, m.to);
    }
    absl::Status s = postoffice_->Send(std::move(m.msg));
    if (!s.ok()) {
      LOG_EVERY_T(WARNING, 1.0) << "resend after failover: " << s;
    }
  }
  if (!moved.empty()) {
    LOG(INFO) << "app " << app_id_ << " customer " << customer_id_ << ": sent "
              << moved.size() << " message(s) for node " << dead << " to node "
              << successor;
  }
  // Every message of these went to the dead node and needs no answer now.
  for (auto& [ts, on_complete] : completed) {
    if (on_complete) on_complete(ts);
    postoffice_->van()->RequestClosed();
    absl::MutexLock lock(&mu_);
    pending_.erase(ts);
  }
}

}  // namespace petrel
