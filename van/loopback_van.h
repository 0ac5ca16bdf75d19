// LoopbackVan: an in-process transport for unit tests. Several nodes in one
// process share a LoopbackNetwork (owned by the test, not a singleton); each
// van has its own delivery thread, so handlers run asynchronously as they do
// over ZeroMQ, and every message is encoded and decoded as on the wire.
//
// Thread safety: LoopbackNetwork is thread-safe. LoopbackVan as Van.
#ifndef PETREL_VAN_LOOPBACK_VAN_H_
#define PETREL_VAN_LOOPBACK_VAN_H_

#include <deque>
#include <thread>

#include "van/van.h"

namespace petrel {

class LoopbackVan;

class LoopbackNetwork {
 public:
  LoopbackNetwork() = default;
  LoopbackNetwork(const LoopbackNetwork&) = delete;
  LoopbackNetwork& operator=(const LoopbackNetwork&) = delete;

  // Assigns a port to `van` (its requested one if free and non-zero).
  absl::StatusOr<int> Register(LoopbackVan* van, int port);
  void Unregister(int port);
  // Hands frames to the van bound to `port`; false if none is.
  bool DeliverTo(int port, const std::string& from, std::vector<Buffer> frames);

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<int, LoopbackVan*> vans_ ABSL_GUARDED_BY(mu_);
  int next_port_ ABSL_GUARDED_BY(mu_) = 40000;
};

class LoopbackVan : public Van {
 public:
  // `network` must outlive this van.
  LoopbackVan(LoopbackNetwork* network, VanOptions options,
              MetricsRegistry* metrics);
  ~LoopbackVan() override;

  absl::Status Start(MessageHandler on_message, TickHandler on_tick) override;
  void Stop() override;
  int port() const override { return port_; }
  void Connect(const pb::Node& node) override;
  absl::Status Send(Message msg) override;

  // Called by LoopbackNetwork.
  void Enqueue(const std::string& from, std::vector<Buffer> frames);

 private:
  struct Inbound {
    std::string from;
    std::vector<Buffer> frames;
  };
  void Loop();

  LoopbackNetwork* const network_;
  int port_ = 0;
  std::thread thread_;
  absl::Mutex mu_;
  std::deque<Inbound> inbox_ ABSL_GUARDED_BY(mu_);
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<int, int> routes_ ABSL_GUARDED_BY(mu_);  // id -> port
};

}  // namespace petrel

#endif  // PETREL_VAN_LOOPBACK_VAN_H_
