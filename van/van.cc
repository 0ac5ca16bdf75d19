#include "van/van.h"

#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "glog/logging.h"

namespace petrel {
namespace {

// Escapes unprintable bytes and truncates, for logging peer-supplied text.
std::string Sanitize(absl::string_view s) {
  std::string out;
  for (char c : s.substr(0, 64)) {
    if (absl::ascii_isprint(static_cast<unsigned char>(c))) {
      out.push_back(c);
    } else {
      absl::StrAppendFormat(&out, "\\x%02x", static_cast<unsigned char>(c));
    }
  }
  return out;
}

}  // namespace

std::string NewTransportId() {
  std::random_device rd;
  uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return absl::StrFormat("p%016x", v);
}

// The reasons petrel_van_messages_rejected_total counts: the decoder's
// status codes (lower case), the van's own, and those of the layers above
// (Postoffice: unknown_customer; KV: kv_layout).
constexpr const char* kRejectReasons[] = {
    "invalid_argument", "permission_denied", "resource_exhausted",
    "no_route",         "send_failed",       "connect_failed",
    "receive_failed",   "unknown_customer",  "kv_layout"};

Van::Van(VanOptions options, MetricsRegistry* metrics)
    : Van(std::move(options), metrics, NewTransportId()) {}

Van::Van(VanOptions options, MetricsRegistry* metrics, std::string transport_id)
    : options_(std::move(options)),
      metrics_(metrics),
      transport_id_(std::move(transport_id)),
      received_(metrics->GetCounter("petrel_van_messages_received_total",
                                    "Messages received and accepted.")),
      received_bytes_(metrics->GetCounter("petrel_van_bytes_received_total",
                                          "Data bytes of accepted messages.")),
      sent_(metrics->GetCounter("petrel_van_messages_sent_total",
                                "Messages sent.")),
      sent_bytes_(metrics->GetCounter("petrel_van_bytes_sent_total",
                                      "Data bytes of messages sent.")) {
  // Every reason exists from the start, at 0, so that a dashboard or alert
  // sees the series before the first reject (rate() needs two samples).
  for (const char* reason : kRejectReasons) {
    metrics_->GetCounter("petrel_van_messages_rejected_total",
                         "Messages dropped, by reason.", {{"reason", reason}});
  }
}

bool Van::AwaitResponse(absl::Mutex* mu, const absl::Condition& done,
                        absl::Time deadline) {
  if (done.Eval()) return true;
  mu->Unlock();
  ReceiveUntil(
      [mu, &done] {
        absl::MutexLock lock(mu);
        return done.Eval();
      },
      deadline);
  mu->Lock();
  return mu->AwaitWithDeadline(done, deadline);
}

void Van::BindIdentity(const std::string& transport_id, int id) {
  if (transport_id.empty()) return;
  absl::MutexLock lock(&identity_mu_);
  identity_to_id_[transport_id] = id;
}

void Van::AdmitIdentity(const std::string& transport_id) {
  if (transport_id.empty()) return;
  absl::MutexLock lock(&identity_mu_);
  admitted_.insert(transport_id);
}

bool Van::IsMemberConnection(absl::string_view from) {
  absl::MutexLock lock(&identity_mu_);
  return identity_to_id_.contains(from) || admitted_.contains(from);
}

int Van::ExpectedSender(absl::string_view from) {
  absl::MutexLock lock(&identity_mu_);
  auto it = identity_to_id_.find(from);
  return it == identity_to_id_.end() ? -1 : it->second;
}

void Van::CountDrop(absl::string_view reason, absl::string_view detail) {
  metrics_
      ->GetCounter("petrel_van_messages_rejected_total",
                   "Messages dropped, by reason.",
                   {{"reason", std::string(reason)}})
      ->Increment();
  LOG_EVERY_T(WARNING, 1.0) << "node " << my_id() << " dropped a message ("
                            << reason << "): " << detail;
}

void Van::CountSent(size_t bytes) {
  sent_->Increment();
  sent_bytes_->Increment(static_cast<int64_t>(bytes));
}

void Van::Deliver(absl::string_view from, const Buffer& header,
                  std::vector<Buffer> frames, const PeerAuth& peer) {
  const bool had_id = my_id() != kEmptyNodeId;
  DecodeContext context;
  context.my_id = my_id();
  context.is_scheduler = is_scheduler_.load();
  context.expected_sender = ExpectedSender(from);
  context.connection = from;
  context.my_transport_id = transport_id_;
  context.rejoining = rejoining_.load();
  context.limits = options_.limits;
  std::vector<Buffer> kept;  // shares the frames (no copy), in case we hold
  if (!had_id) kept = frames;
  absl::StatusOr<Message> msg =
      DecodeMessage(header, std::move(frames), context);
  if (!msg.ok()) {
    size_t bytes = header.size();
    for (const Buffer& b : kept) bytes += b.size();
    if (!had_id && absl::IsPermissionDenied(msg.status()) &&
        held_.size() < kMaxHeld && held_bytes_ + bytes <= kMaxHeldBytes) {
      held_.push_back(Held{std::string(from), header, std::move(kept), peer});
      held_bytes_ += bytes;
      return;
    }
    std::string code =
        absl::AsciiStrToLower(absl::StatusCodeToString(msg.status().code()));
    CountDrop(code, absl::StrCat("from connection '", Sanitize(from),
                                 "': ", msg.status().message()));
    return;
  }
  received_->Increment();
  received_bytes_->Increment(static_cast<int64_t>(msg->DataBytes()));
  msg->peer = peer;
  on_message_(*std::move(msg));
  if (!had_id && my_id() != kEmptyNodeId && !held_.empty()) {
    // The node table arrived: the senders' identities are bound now.
    std::vector<Held> held;
    held.swap(held_);
    held_bytes_ = 0;
    for (Held& h : held) {
      Deliver(h.from, h.header, std::move(h.frames), h.peer);
    }
  }
}

}  // namespace petrel
