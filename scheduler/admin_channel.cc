#include "scheduler/admin_channel.h"

#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "base/secret_compare.h"
#include "security/authorized_keys.h"

namespace petrel {
namespace {

// Routes to admin clients: ids kAdminRoute, kAdminRoute - 1, ... (far below
// the joining nodes' temporary routes, -1, -2, ...).
constexpr int kAdminRoute = -1000000;
constexpr uint64_t kAdminRoutes = 4;

constexpr const char* kRequestsHelp =
    "Admin requests (petrelctl), by command and result.";

const char* CommandLabel(pb::AdminCommand command) {
  switch (command) {
    case pb::ADMIN_COMMAND_STATUS:
      return "status";
    case pb::ADMIN_COMMAND_CHECKPOINT:
      return "checkpoint";
    case pb::ADMIN_COMMAND_STOP:
      return "stop";
    case pb::ADMIN_COMMAND_DRAIN_SERVER:
      return "drain_server";
    default:
      return "unknown";
  }
}

}  // namespace

AdminChannel::AdminChannel(Postoffice* postoffice, std::string auth_token,
                           Handlers handlers)
    : postoffice_(postoffice),
      auth_token_(std::move(auth_token)),
      handlers_(std::move(handlers)) {}

std::string AdminChannel::Refusal(const Message& msg) const {
  const pb::AdminRequest& req = msg.meta.control().admin_request();
  if (!SecretsEqual(req.auth_token(), auth_token_)) return "wrong auth token";
  // With CURVE on, only a key with role admin may ask (its connection
  // authenticated it: msg.peer).
  if (!postoffice_->van()->options().curve.enabled()) return "";
  absl::StatusOr<uint32_t> roles = ParseKeyRoles(msg.peer.roles);
  if (msg.peer.public_key.empty() || !roles.ok()) {
    return "the connection has no authenticated CURVE key";
  }
  if ((*roles & kKeyRoleAdmin) == 0) {
    return absl::StrCat("key ", msg.peer.public_key, " has roles '",
                        msg.peer.roles,
                        "', not admin (see the authorized-keys file)");
  }
  return "";
}

void AdminChannel::Handle(const Message& msg) {
  if (!msg.meta.request()) return;
  const pb::AdminRequest& req = msg.meta.control().admin_request();
  MetricsRegistry* metrics = postoffice_->metrics();
  if (std::string refusal = Refusal(msg); !refusal.empty()) {
    metrics
        ->GetCounter("petrel_scheduler_admin_requests_total", kRequestsHelp,
                     {{"command", "any"}, {"result", "refused"}})
        ->Increment();
    LOG_EVERY_T(WARNING, 1.0)
        << "refused an admin request from " << req.client().host() << ":"
        << req.client().port() << ": " << refusal;
    return;
  }
  pb::AdminReply reply;
  reply.set_nonce(req.nonce());
  handlers_.status(req.command() == pb::ADMIN_COMMAND_STATUS, &reply);
  const absl::Status result = Execute(req);
  reply.set_status_code(static_cast<int>(result.code()));
  reply.set_status_message(std::string(result.message()));
  metrics
      ->GetCounter("petrel_scheduler_admin_requests_total", kRequestsHelp,
                   {{"command", CommandLabel(req.command())},
                    {"result", result.ok() ? "ok" : "error"}})
      ->Increment();
  Answer(msg, std::move(reply));
}

absl::Status AdminChannel::Execute(const pb::AdminRequest& req) {
  switch (req.command()) {
    case pb::ADMIN_COMMAND_STATUS:
      return absl::OkStatus();
    case pb::ADMIN_COMMAND_CHECKPOINT:
      return handlers_.checkpoint();
    case pb::ADMIN_COMMAND_STOP:
      LOG(INFO) << "stop requested by petrelctl from " << req.client().host();
      handlers_.stop("stop requested by petrelctl");
      return absl::OkStatus();
    case pb::ADMIN_COMMAND_DRAIN_SERVER: {
      LOG(INFO) << "drain of node " << req.node_id()
                << " requested by petrelctl from " << req.client().host();
      absl::Status result = handlers_.drain(req.node_id());
      if (!result.ok()) {
        LOG(WARNING) << "refused to drain node " << req.node_id() << ": "
                     << result.message();
      }
      return result;
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("unknown admin command ", req.command()));
  }
}

void AdminChannel::Answer(const Message& msg, pb::AdminReply reply) {
  const pb::AdminRequest& req = msg.meta.control().admin_request();
  const int route = kAdminRoute - static_cast<int>(answered_++ % kAdminRoutes);
  pb::Node client = req.client();
  client.set_id(route);
  client.clear_transport_id();
  // With CURVE the client listens as a CURVE server with the key it asked
  // with: the route to it is a CURVE client that expects that key.
  const bool curve = postoffice_->van()->options().curve.enabled();
  client.set_curve_public_key(curve ? msg.peer.public_key : "");
  postoffice_->van()->Connect(client);
  pb::Control control;
  control.set_cmd(pb::COMMAND_ADMIN);
  // Names the client's transport identity, as every reply to a node
  // without an id does (wire_codec.cc, IsJoinReply).
  *control.add_nodes() = req.client();
  *control.mutable_admin_reply() = std::move(reply);
  Message out;
  out.meta.set_recipient(route);
  out.meta.set_request(false);
  *out.meta.mutable_control() = std::move(control);
  absl::Status s = postoffice_->Send(std::move(out));
  if (!s.ok()) LOG(WARNING) << "control to node " << route << ": " << s;
}

}  // namespace petrel
