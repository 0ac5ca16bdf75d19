// ZmqVan's connection watching (Van::WatchConnections, MarkPeerDead): each
// DEALER the I/O thread makes publishes its ZeroMQ monitor events to a PAIR
// socket, which the tick drains into a ConnectionWatch. Kept apart from the
// message path in zmq_van.cc.
#include <cstring>

#include <zmq.h>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "van/zmq_van.h"

namespace petrel {

void ZmqVan::MarkPeerDead(int node_id) {
  absl::MutexLock lock(&direct_mu_);
  auto it = addresses_.find(node_id);
  if (it != addresses_.end()) dead_addresses_.insert(it->second);
}

void ZmqVan::WatchConnections(absl::Duration grace,
                              ConnectionLostHandler handler) {
  CHECK(!running_) << "WatchConnections after Start";
  CHECK_GT(grace, absl::ZeroDuration());
  watch_grace_ = grace;
  on_connection_lost_ = std::move(handler);
}

std::string ZmqVan::NextMonitorEndpoint() {
  if (watch_ == nullptr) return "";
  return absl::StrCat("inproc://petrel-monitor-", instance_, "-",
                      next_monitor_++);
}

void ZmqVan::AddMonitor(void* dealer, const std::string& endpoint,
                        const std::string& address) {
  void* pair = zmq_socket(context_, ZMQ_PAIR);
  if (pair == nullptr || zmq_connect(pair, endpoint.c_str()) != 0) {
    // Only the fast detection is lost; heartbeats still catch the peer.
    LOG(WARNING) << "cannot watch the connection to " << address << ": "
                 << zmq_strerror(errno);
    if (pair != nullptr) zmq_close(pair);
    return;
  }
  DropQueued(pair);  // linger 0: it only reads
  monitors_[dealer] = Monitor{pair, address};
}

void ZmqVan::RemoveMonitor(void* dealer) {
  auto it = monitors_.find(dealer);
  if (it == monitors_.end()) return;
  zmq_socket_monitor(dealer, nullptr, 0);
  zmq_close(it->second.pair);
  monitors_.erase(it);
}

void ZmqVan::CheckConnections() {
  const absl::Time now = absl::Now();
  for (auto& [dealer, monitor] : monitors_) {
    while (true) {
      // Two frames per event: 6 bytes (uint16 event, uint32 value), then
      // the endpoint, which we do not need: the address is the monitor's.
      zmq_msg_t frame;
      zmq_msg_init(&frame);
      if (zmq_msg_recv(&frame, monitor.pair, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&frame);
        break;
      }
      uint16_t event = 0;
      if (zmq_msg_size(&frame) >= sizeof(event)) {
        std::memcpy(&event, zmq_msg_data(&frame), sizeof(event));
      }
      bool more = zmq_msg_more(&frame);
      zmq_msg_close(&frame);
      while (more) {
        zmq_msg_init(&frame);
        if (zmq_msg_recv(&frame, monitor.pair, ZMQ_DONTWAIT) < 0)
          more = false;
        else
          more = zmq_msg_more(&frame);
        zmq_msg_close(&frame);
      }
      VLOG(1) << "connection to " << monitor.address << ": event " << event;
      if (event == ZMQ_EVENT_CONNECTED) {
        watch_->OnEvent(monitor.address, ConnectionWatch::Event::kConnected,
                        now);
      } else if (event == ZMQ_EVENT_DISCONNECTED) {
        watch_->OnEvent(monitor.address, ConnectionWatch::Event::kDisconnected,
                        now);
      } else if (event == ZMQ_EVENT_CLOSED) {
        watch_->OnEvent(monitor.address, ConnectionWatch::Event::kConnectFailed,
                        now);
      }
    }
  }
  for (const ConnectionWatch::Lost& lost : watch_->TakeLost(now)) {
    on_connection_lost_(lost.node_id,
                        absl::StrCat(lost.reason, " (down for ",
                                     absl::FormatDuration(absl::Trunc(
                                         lost.down_for, absl::Milliseconds(1))),
                                     ")"));
  }
}

}  // namespace petrel
