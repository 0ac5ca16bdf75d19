#include "van/zmq_sockets.h"

#include <cerrno>

#include <zmq.h>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "van/wire_codec.h"

namespace petrel {
namespace {

// Releases the Buffer that kept a sent frame alive; runs on a ZeroMQ thread.
void FreeSentBuffer(void* /*data*/, void* hint) {
  delete static_cast<Buffer*>(hint);
}

void SetIntOption(void* socket, int option, int value) {
  // Only fails for a bad option or a closed socket: our own bug.
  CHECK_EQ(zmq_setsockopt(socket, option, &value, sizeof(value)), 0)
      << zmq_strerror(errno);
}

}  // namespace

void* NewDealer(void* context, const std::string& routing_id,
                const std::string& address, std::string* error,
                const char* monitor_endpoint, const CurveKeyPair* curve,
                const std::string& server_key) {
  void* socket = zmq_socket(context, ZMQ_DEALER);
  if (socket == nullptr) {
    *error = zmq_strerror(errno);
    return nullptr;
  }
  zmq_setsockopt(socket, ZMQ_ROUTING_ID, routing_id.data(), routing_id.size());
  SetIntOption(socket, ZMQ_LINGER, 2000);
  SetIntOption(socket, ZMQ_SNDHWM, 0);
  SetIntOption(socket, ZMQ_RECONNECT_IVL, 50);
  SetIntOption(socket, ZMQ_RECONNECT_IVL_MAX, 1000);
  if (curve != nullptr) {
    absl::Status s =
        server_key.empty()
            ? absl::InvalidArgumentError("no CURVE public key for this peer")
            : ConfigureCurveClient(socket, *curve, server_key);
    if (!s.ok()) {
      *error = absl::StrCat(address, ": ", s.message());
      zmq_close(socket);
      return nullptr;
    }
  }
  if (monitor_endpoint != nullptr &&
      zmq_socket_monitor(socket, monitor_endpoint,
                         ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED |
                             ZMQ_EVENT_CLOSED) != 0) {
    *error = absl::StrCat("monitor ", address, ": ", zmq_strerror(errno));
    zmq_close(socket);
    return nullptr;
  }
  if (zmq_connect(socket, address.c_str()) != 0) {
    *error = absl::StrCat(address, ": ", zmq_strerror(errno));
    zmq_close(socket);
    return nullptr;
  }
  // First on the connection: who we are, before any large message.
  if (absl::Status s = SendFrames(socket, {HelloFrame()}); !s.ok()) {
    *error = absl::StrCat(address, ": ", s.message());
    zmq_close(socket);
    return nullptr;
  }
  return socket;
}

absl::Status SendFrames(void* socket, const std::vector<Buffer>& frames) {
  for (size_t i = 0; i < frames.size(); ++i) {
    zmq_msg_t m;
    Buffer* hold = new Buffer(frames[i]);
    zmq_msg_init_data(&m, hold->mutable_data(), hold->size(), FreeSentBuffer,
                      hold);
    int flags = ZMQ_DONTWAIT | (i + 1 < frames.size() ? ZMQ_SNDMORE : 0);
    if (zmq_msg_send(&m, socket, flags) < 0) {
      const int err = errno;
      zmq_msg_close(&m);  // frees `hold`
      return absl::UnavailableError(zmq_strerror(err));
    }
  }
  return absl::OkStatus();
}

absl::Status ZmqThreadSockets::Send(const std::string& address,
                                    const std::string& server_key,
                                    const std::vector<Buffer>& frames) {
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::FailedPreconditionError("van is stopping");
  void*& socket = sockets_[address];
  if (socket == nullptr) {
    std::string error;
    socket = NewDealer(context_, routing_id_, address, &error,
                       /*monitor_endpoint=*/nullptr, curve_, server_key);
    if (socket == nullptr) {
      sockets_.erase(address);
      return absl::UnavailableError(absl::StrCat("connect ", error));
    }
  }
  return SendFrames(socket, frames);
}

void DropQueued(void* socket) { SetIntOption(socket, ZMQ_LINGER, 0); }

void ShortenLinger(void* socket) {
  SetIntOption(socket, ZMQ_LINGER, kShortLingerMs);
}

void ZmqThreadSockets::CloseAll(const absl::flat_hash_set<std::string>& drop,
                                bool short_linger) {
  absl::MutexLock lock(&mu_);
  if (closed_) return;
  closed_ = true;
  for (auto& [address, socket] : sockets_) {
    if (drop.contains(address)) {
      DropQueued(socket);
    } else if (short_linger) {
      ShortenLinger(socket);
    }
    zmq_close(socket);
  }
  sockets_.clear();
}

}  // namespace petrel
