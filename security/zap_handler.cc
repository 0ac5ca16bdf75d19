#include "security/zap_handler.h"

#include <cerrno>
#include <cstring>
#include <vector>

#include <sys/eventfd.h>
#include <unistd.h>
#include <zmq.h>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "security/curve_keys.h"

namespace petrel {
namespace {

constexpr char kZapEndpoint[] = "inproc://zeromq.zap.01";
constexpr char kMonitorEndpoint[] = "inproc://petrel-zap-handshakes";

// Receives one multipart message as strings; false when nothing came whole.
bool ReceiveParts(void* socket, std::vector<std::string>* parts) {
  parts->clear();
  int more = 1;
  while (more) {
    zmq_msg_t m;
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, socket, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&m);
      return false;
    }
    parts->emplace_back(static_cast<char*>(zmq_msg_data(&m)), zmq_msg_size(&m));
    more = zmq_msg_more(&m);
    zmq_msg_close(&m);
    if (parts->size() > 16) {  // not a ZAP request; drain the rest
      while (more) {
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, socket, ZMQ_DONTWAIT) < 0)
          more = 0;
        else
          more = zmq_msg_more(&m);
        zmq_msg_close(&m);
      }
      return false;
    }
  }
  return true;
}

// ZAP metadata: name length (1 byte), name, value length (4 bytes, big
// endian), value (ZMTP's property encoding).
std::string Property(absl::string_view name, absl::string_view value) {
  std::string out;
  out.push_back(static_cast<char>(name.size()));
  out.append(name.data(), name.size());
  const uint32_t n = static_cast<uint32_t>(value.size());
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((n >> shift) & 0xff));
  }
  out.append(value.data(), value.size());
  return out;
}

bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino &&
         a.st_size == b.st_size && a.st_mtim.tv_sec == b.st_mtim.tv_sec &&
         a.st_mtim.tv_nsec == b.st_mtim.tv_nsec;
}

}  // namespace

ZapDecision DecideZap(const ZapRequest& request, const AuthorizedKeys& keys) {
  ZapDecision d;
  d.status_code = "400";
  if (request.mechanism != "CURVE") {
    d.status_text = "CURVE required";
    return d;
  }
  char z85[kZ85KeyLength + 1];
  if (request.client_key.size() != 32 ||
      zmq_z85_encode(
          z85, reinterpret_cast<const uint8_t*>(request.client_key.data()),
          32) == nullptr) {
    d.status_text = "bad client key";
    return d;
  }
  const AuthorizedKey* key = keys.Find(z85);
  if (key == nullptr) {
    d.status_text = "key not authorized";
    d.user_id = z85;  // for the log line only
    return d;
  }
  d.admit = true;
  d.status_code = "200";
  d.status_text = "OK";
  d.user_id = z85;
  d.roles = KeyRolesString(key->roles);
  d.name = key->name;
  return d;
}

ZapHandler::ZapHandler(std::string authorized_keys_path,
                       MetricsRegistry* metrics)
    : path_(std::move(authorized_keys_path)), metrics_(metrics) {
  const char* help =
      "Connections refused at the CURVE handshake, by reason (unknown_key: "
      "not in the authorized-keys file; handshake_failed: plaintext or "
      "broken handshake).";
  unknown_key_ = metrics_->GetCounter("petrel_van_handshakes_refused_total",
                                      help, {{"reason", "unknown_key"}});
  handshake_failed_ =
      metrics_->GetCounter("petrel_van_handshakes_refused_total", help,
                           {{"reason", "handshake_failed"}});
  reload_errors_ = metrics_->GetCounter(
      "petrel_van_authorized_keys_reload_errors_total",
      "Changes of the authorized-keys file that did not parse (the previous "
      "list stays in force).");
  listed_keys_ = metrics_->GetGauge("petrel_van_authorized_keys",
                                    "Keys in the authorized-keys file.");
}

ZapHandler::~ZapHandler() { Stop(); }

absl::Status ZapHandler::Start(void* context, void* watched) {
  {
    absl::MutexLock lock(&mu_);
    if (stat(path_.c_str(), &file_) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          path_,
          ": cannot read the authorized-keys file: ", std::strerror(errno)));
    }
    absl::StatusOr<AuthorizedKeys> keys = AuthorizedKeys::Load(path_);
    if (!keys.ok()) return keys.status();
    keys_ = *std::move(keys);
    listed_keys_->Set(static_cast<double>(keys_.size()));
  }
  zap_ = zmq_socket(context, ZMQ_REP);
  if (zap_ == nullptr || zmq_bind(zap_, kZapEndpoint) != 0) {
    const int err = errno;
    Stop();
    return absl::UnavailableError(
        absl::StrCat("cannot bind the ZAP handler: ", zmq_strerror(err)));
  }
  if (watched != nullptr) {
    if (zmq_socket_monitor(watched, kMonitorEndpoint,
                           ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) != 0 ||
        (monitor_ = zmq_socket(context, ZMQ_PAIR)) == nullptr ||
        zmq_connect(monitor_, kMonitorEndpoint) != 0) {
      const int err = errno;
      Stop();
      return absl::UnavailableError(
          absl::StrCat("cannot monitor handshakes: ", zmq_strerror(err)));
    }
  }
  stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (stop_fd_ < 0) {
    Stop();
    return absl::UnavailableError("cannot create an eventfd");
  }
  thread_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void ZapHandler::Stop() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    ssize_t n = write(stop_fd_, &one, sizeof(one));
    (void)n;
    thread_.join();
  }
  for (void** s : {&zap_, &monitor_}) {
    if (*s != nullptr) {
      const int zero = 0;
      zmq_setsockopt(*s, ZMQ_LINGER, &zero, sizeof(zero));
      zmq_close(*s);
      *s = nullptr;
    }
  }
  if (stop_fd_ >= 0) close(stop_fd_);
  stop_fd_ = -1;
}

void ZapHandler::Loop() {
  while (true) {
    zmq_pollitem_t items[3] = {{zap_, 0, ZMQ_POLLIN, 0},
                               {nullptr, stop_fd_, ZMQ_POLLIN, 0},
                               {monitor_, 0, ZMQ_POLLIN, 0}};
    const int n = monitor_ != nullptr ? 3 : 2;
    if (zmq_poll(items, n, -1) < 0) {
      if (errno == EINTR) continue;
      LOG(ERROR) << "ZAP handler: zmq_poll: " << zmq_strerror(errno);
      return;
    }
    if (items[1].revents & ZMQ_POLLIN) return;
    if (items[0].revents & ZMQ_POLLIN) Answer();
    if (n == 3 && (items[2].revents & ZMQ_POLLIN)) ReadMonitorEvent();
  }
}

void ZapHandler::Answer() {
  std::vector<std::string> parts;
  if (!ReceiveParts(zap_, &parts)) return;
  // version, request id, domain, address, routing id, mechanism, creds...
  ZapRequest request;
  std::string request_id = parts.size() > 1 ? parts[1] : "";
  if (parts.size() >= 6 && parts[0] == "1.0") {
    request.domain = parts[2];
    request.address = parts[3];
    request.mechanism = parts[5];
    if (parts.size() >= 7) request.client_key = parts[6];
  }
  ZapDecision d;
  {
    absl::MutexLock lock(&mu_);
    ReloadIfChanged();
    d = DecideZap(request, keys_);
  }
  if (d.admit) {
    VLOG(1) << "admitted key " << d.user_id << " (" << d.name << ", roles "
            << d.roles << ") from " << request.address;
  } else {
    unknown_key_->Increment();
    LOG_EVERY_T(WARNING, 1.0)
        << "refused a connection from " << request.address << ": "
        << d.status_text << (d.user_id.empty() ? "" : " (key ") << d.user_id
        << (d.user_id.empty() ? "" : ")");
  }
  const std::string metadata =
      d.admit ? Property(kRolesProperty, d.roles) : std::string();
  const std::string reply[] = {"1.0",
                               request_id,
                               d.status_code,
                               d.status_text,
                               d.admit ? d.user_id : "",
                               metadata};
  for (size_t i = 0; i < 6; ++i) {
    if (zmq_send(zap_, reply[i].data(), reply[i].size(),
                 i + 1 < 6 ? ZMQ_SNDMORE : 0) < 0) {
      LOG_EVERY_T(ERROR, 1.0)
          << "ZAP handler: cannot answer: " << zmq_strerror(errno);
      return;
    }
  }
}

void ZapHandler::ReadMonitorEvent() {
  std::vector<std::string> parts;
  while (ReceiveParts(monitor_, &parts)) {
    if (parts.size() != 2 || parts[0].size() < 2) continue;
    uint16_t event;
    std::memcpy(&event, parts[0].data(), sizeof(event));
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL ||
        event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) {
      handshake_failed_->Increment();
      LOG_EVERY_T(WARNING, 1.0)
          << "refused a connection from " << parts[1]
          << ": the CURVE handshake failed (a plaintext peer, or one that "
             "does not know this node's public key)";
    }
  }
}

void ZapHandler::CountHandshakeFailed() {
  handshake_failed_->Increment();
  LOG_EVERY_T(WARNING, 1.0)
      << "refused a connection: the CURVE handshake failed (a plaintext "
         "peer, or one that does not know this node's public key)";
}

void ZapHandler::ReloadIfChanged() {
  struct stat now;
  if (stat(path_.c_str(), &now) != 0) {
    reload_errors_->Increment();
    LOG_EVERY_T(ERROR, 10.0) << path_ << ": cannot read the authorized-keys "
                             << "file (" << std::strerror(errno)
                             << "); the previous list stays in force";
    return;
  }
  if (SameFile(now, file_)) return;
  file_ = now;
  absl::StatusOr<AuthorizedKeys> keys = AuthorizedKeys::Load(path_);
  if (!keys.ok()) {
    reload_errors_->Increment();
    LOG(ERROR) << keys.status().message()
               << "; the previous authorized keys stay in force";
    return;
  }
  keys_ = *std::move(keys);
  listed_keys_->Set(static_cast<double>(keys_.size()));
  reloads_.fetch_add(1);
  LOG(INFO) << "re-read " << path_ << ": " << keys_.size() << " keys";
}

}  // namespace petrel
