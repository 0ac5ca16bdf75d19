#include "van/loopback_van.h"

#include "absl/strings/str_cat.h"

namespace petrel {

absl::StatusOr<int> LoopbackNetwork::Register(LoopbackVan* van, int port) {
  absl::MutexLock lock(&mu_);
  if (port != 0) {
    if (vans_.contains(port)) {
      return absl::UnavailableError(
          absl::StrCat("port ", port, " is already in use"));
    }
  } else {
    while (vans_.contains(next_port_)) ++next_port_;
    port = next_port_++;
  }
  vans_[port] = van;
  return port;
}

void LoopbackNetwork::Unregister(int port) {
  absl::MutexLock lock(&mu_);
  vans_.erase(port);
}

bool LoopbackNetwork::DeliverTo(int port, const std::string& from,
                                std::vector<Buffer> frames) {
  absl::MutexLock lock(&mu_);
  auto it = vans_.find(port);
  if (it == vans_.end()) return false;
  it->second->Enqueue(from, std::move(frames));
  return true;
}

LoopbackVan::LoopbackVan(LoopbackNetwork* network, VanOptions options,
                         MetricsRegistry* metrics)
    : Van(std::move(options), metrics), network_(network) {}

LoopbackVan::~LoopbackVan() { Stop(); }

absl::Status LoopbackVan::Start(MessageHandler on_message,
                                TickHandler on_tick) {
  on_message_ = std::move(on_message);
  on_tick_ = std::move(on_tick);
  absl::StatusOr<int> port = network_->Register(this, options().port);
  if (!port.ok()) return port.status();
  port_ = *port;
  {
    absl::MutexLock lock(&mu_);
    running_ = true;
  }
  thread_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void LoopbackVan::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (!running_) return;
    running_ = false;
  }
  network_->Unregister(port_);
  thread_.join();
}

void LoopbackVan::Connect(const pb::Node& node) {
  BindIdentity(node.transport_id(), node.id());
  absl::MutexLock lock(&mu_);
  routes_[node.id()] = node.port();
}

absl::Status LoopbackVan::Send(Message msg) {
  int port;
  {
    absl::MutexLock lock(&mu_);
    if (!running_) return absl::FailedPreconditionError("van is not running");
    auto it = routes_.find(msg.meta.recipient());
    if (it == routes_.end()) {
      CountDrop("no_route",
                absl::StrCat("no connection to node ", msg.meta.recipient()));
      return absl::OkStatus();
    }
    port = it->second;
  }
  std::vector<Buffer> frames;
  frames.push_back(EncodeHeader(msg.meta));
  size_t bytes = msg.DataBytes();
  for (Buffer& b : msg.data) frames.push_back(std::move(b));
  if (network_->DeliverTo(port, transport_id(), std::move(frames))) {
    CountSent(bytes);
  } else {
    CountDrop("send_failed", absl::StrCat("nothing listens on port ", port));
  }
  return absl::OkStatus();
}

void LoopbackVan::Enqueue(const std::string& from, std::vector<Buffer> frames) {
  absl::MutexLock lock(&mu_);
  if (running_) inbox_.push_back(Inbound{from, std::move(frames)});
}

void LoopbackVan::Loop() {
  absl::Time next_tick = absl::Now() + options().tick_interval;
  while (true) {
    std::deque<Inbound> batch;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
        return !inbox_.empty() || !running_;
      };
      mu_.AwaitWithDeadline(absl::Condition(&ready), next_tick);
      if (!running_) return;
      batch.swap(inbox_);
    }
    for (Inbound& in : batch) {
      if (in.frames.empty()) {
        CountDrop("resource_exhausted", "message with no header frame");
        continue;
      }
      Buffer header = in.frames.front();
      in.frames.erase(in.frames.begin());
      Deliver(in.from, header, std::move(in.frames));
    }
    if (absl::Now() >= next_tick) {
      if (on_tick_) on_tick_();
      next_tick = absl::Now() + options().tick_interval;
    }
  }
}

}  // namespace petrel
