// Customer::FailOver: pending requests to a server that died continue on
// the replica that took over its ranges (docs/failures.md, "Replicated
// servers"). Kept apart from customer.cc's sequencing and resends.
#include <algorithm>
#include <optional>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "cluster/customer.h"
#include "cluster/postoffice.h"

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
  // Sent by the map that moved it: a server still on an older one holds it
  // until that map arrives (cluster/map_hold.h).
  msg->meta.set_map_version(
      std::max(msg->meta.map_version(), postoffice_->map_version()));
  const uint64_t key = PartKey(to, part);
  p.waiting.insert(key);
  if (options_.resend_timeout > absl::ZeroDuration()) p.sent[key] = *msg;
  return key;
}

bool Customer::RerouteOnSend(Message* msg, const KeyRangeMap* ranges,
                             MovedOnSend* moved) {
  const int dead = msg->meta.recipient();
  const int successor = MovedTo(dead);
  if (successor == 0) return false;
  auto it = pending_.find(msg->meta.timestamp());
  if (it == pending_.end()) return false;
  Pending& p = it->second;
  // Never sent to the dead node: a new message to the successor (or, cut
  // by the map, to each node leading some of its keys now), numbered in
  // its stream like any other (no copy of it exists anywhere).
  const int own_part = p.parts_sent[dead]++;
  moved->from = PartKey(dead, own_part);
  if (!p.waiting.erase(moved->from)) return false;
  moved->timestamp = msg->meta.timestamp();
  moved->to.clear();
  moved->pieces.clear();
  if (ranges != nullptr && failover_hooks_.split) {
    moved->pieces = failover_hooks_.split(*msg, *ranges);
  }
  for (Message& piece : moved->pieces) {
    // A new message, not a resent one: no origin.
    piece.meta.set_origin_node(msg->meta.origin_node());
    piece.meta.set_origin_seq(msg->meta.origin_seq());
    const int to = piece.meta.recipient();
    piece.meta.set_seq(++next_seq_[to]);
    p.bytes += piece.DataBytes();
    moved->to.push_back(Reroute(p, &piece, to));
  }
  if (moved->pieces.empty()) {
    msg->meta.set_seq(++next_seq_[successor]);
    p.bytes += msg->DataBytes();
    moved->to.push_back(Reroute(p, msg, successor));
  }
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
  std::optional<KeyRangeMap> ranges;
  if (failover_hooks_.split) ranges = postoffice_->key_ranges();
  MovedRequests m;
  {
    absl::MutexLock lock(&mu_);
    m = MoveRequestsTo(dead, successor, ranges);
  }
  if (!m.fail.empty()) {
    const absl::flat_hash_set<int>& fail = m.fail;
    FailWhere([&fail](int ts, const Pending&) { return fail.contains(ts); },
              status);
  }
  SendMoved(dead, successor, m);
  // Every message of these went to the dead node and needs no answer now.
  for (auto& [ts, on_complete] : m.completed) {
    if (on_complete) on_complete(ts);
    postoffice_->van()->RequestClosed();
    absl::MutexLock lock(&mu_);
    pending_.erase(ts);
  }
  std::vector<Message> released;
  {
    absl::MutexLock lock(&mu_);
    released = TakeReleased();
  }
  SendReleased(std::move(released));
}

Customer::MovedRequests Customer::MoveRequestsTo(
    int dead, int successor, const std::optional<KeyRangeMap>& ranges) {
  MovedRequests out;
  std::vector<Moved>& moved = out.moved;
  absl::flat_hash_set<int>& fail = out.fail;
  moved_to_[dead] = successor;
  any_moved_.store(true, std::memory_order_release);
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
      std::vector<Message> pieces;
      if (ranges.has_value()) pieces = failover_hooks_.split(msg, *ranges);
      const int to =
          pieces.empty() ? failover_hooks_.reroute(&msg, successor) : successor;
      if (to < 0) {
        fail.insert(ts);
        break;
      }
      p.waiting.erase(key);
      p.sent.erase(it);
      p.held_back.erase(key);
      if (to == 0) continue;  // counts as answered
      Moved m{ts, key, {}, {}, !pieces.empty()};
      if (pieces.empty()) {
        msg.meta.set_recipient(to);
        pieces.push_back(std::move(msg));
      }
      for (Message& piece : pieces) {
        piece.meta.set_seq(0);  // its origin fields identify it
        m.to.push_back(Reroute(p, &piece, piece.meta.recipient()));
        m.msgs.push_back(std::move(piece));
      }
      moved.push_back(std::move(m));
    }
    if (!fail.contains(ts) && p.waiting.empty()) {
      out.completed.emplace_back(ts, std::move(p.on_complete));
    }
  }
  // With a push moved, the other moved messages wait (SendMoved): no
  // resending them meanwhile.
  bool any_push = false;
  for (const Moved& m : moved) {
    for (const Message& msg : m.msgs) any_push |= msg.meta.push();
  }
  for (const Moved& m : moved) {
    for (size_t i = 0; any_push && i < m.msgs.size(); ++i) {
      if (m.msgs[i].meta.push()) continue;
      auto p = pending_.find(m.timestamp);
      if (p != pending_.end()) p->second.held_back.insert(m.to[i]);
    }
  }
  return out;
}

void Customer::SendMoved(int dead, int successor, MovedRequests& moved) {
  // The pushes first; the rest once they are answered.
  AfterPushes later;
  std::vector<Message> now;
  size_t pieces = 0;
  for (Moved& m : moved.moved) {
    if (moved.fail.contains(m.timestamp)) {
      // Failed: counts as answered (TakeReleased), like its pushes.
      for (size_t i = 0; i < m.msgs.size(); ++i) {
        if (m.msgs[i].meta.push())
          later.pushes.emplace_back(m.timestamp, m.to[i]);
      }
      continue;
    }
    if (m.split && failover_hooks_.split_rerouted) {
      failover_hooks_.split_rerouted(m.timestamp, m.from, m.to, m.msgs);
    } else if (!m.split && failover_hooks_.rerouted) {
      failover_hooks_.rerouted(m.timestamp, m.from, m.to[0]);
    }
    if (m.split) pieces += m.msgs.size();
    for (size_t i = 0; i < m.msgs.size(); ++i) {
      if (m.msgs[i].meta.push()) {
        later.pushes.emplace_back(m.timestamp, m.to[i]);
        now.push_back(std::move(m.msgs[i]));
      } else {
        later.msgs.push_back(std::move(m.msgs[i]));
      }
    }
  }
  const size_t held = later.pushes.empty() ? 0 : later.msgs.size();
  const size_t sent = now.size() + later.msgs.size();
  if (held > 0) {
    absl::MutexLock lock(&mu_);
    after_pushes_.push_back(std::move(later));
  } else {
    for (Message& m : later.msgs) now.push_back(std::move(m));
  }
  SendReleased(std::move(now));
  if (sent > 0) {
    LOG(INFO) << "app " << app_id_ << " customer " << customer_id_ << ": sent "
              << sent << " message(s) for node " << dead << " to node "
              << successor
              << (pieces > 0 ? absl::StrCat(" or, for ", pieces,
                                            " pieces cut by the map, to the "
                                            "nodes that now lead their keys")
                             : std::string())
              << (held > 0 ? absl::StrCat(", ", held,
                                          " of them once the moved pushes "
                                          "are answered")
                           : std::string());
  }
}

std::vector<Message> Customer::TakeReleased() {
  std::vector<Message> out;
  for (auto it = after_pushes_.begin(); it != after_pushes_.end();) {
    bool answered = true;
    for (const auto& [ts, key] : it->pushes) {
      auto p = pending_.find(ts);
      if (p != pending_.end() && p->second.failure.ok() &&
          p->second.waiting.contains(key)) {
        answered = false;
        break;
      }
    }
    if (!answered) {
      ++it;
      continue;
    }
    for (Message& m : it->msgs) {
      // Still wanted: its request neither failed nor ended meanwhile.
      auto p = pending_.find(m.meta.timestamp());
      if (p == pending_.end() || !p->second.failure.ok()) continue;
      const uint64_t key = PartKey(m.meta.recipient(), m.meta.part());
      if (!p->second.held_back.erase(key) || !p->second.waiting.contains(key)) {
        continue;
      }
      out.push_back(std::move(m));
    }
    it = after_pushes_.erase(it);
  }
  return out;
}

void Customer::SendReleased(std::vector<Message> msgs) {
  for (Message& m : msgs) {
    absl::Status s = postoffice_->Send(std::move(m));
    if (!s.ok()) {
      LOG_EVERY_T(WARNING, 1.0) << "resend after failover: " << s;
    }
  }
}

}  // namespace petrel
