#include "tools/petrelctl/admin_client.h"

#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

#include "base/net_util.h"
#include "van/message.h"
#include "van/zmq_van.h"

namespace petrel {

absl::StatusOr<std::unique_ptr<Van>> OpenAdminVan(
    const AdminClientOptions& options, MetricsRegistry* metrics,
    std::string* bind_host) {
  *bind_host = options.bind_host;
  if (bind_host->empty()) {
    absl::StatusOr<std::string> local =
        LocalAddressTowards(options.scheduler_host);
    if (!local.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--scheduler: cannot reach ", options.scheduler_host,
                       ": ", local.status().message()));
    }
    *bind_host = *local;
  }
  VanOptions van;
  van.bind_host = *bind_host;
  van.port = 0;
  van.curve = options.curve;
  return std::unique_ptr<Van>(std::make_unique<ZmqVan>(van, metrics));
}

absl::StatusOr<pb::AdminReply> AdminCall(const AdminClientOptions& options,
                                         pb::AdminCommand command) {
  MetricsRegistry metrics;
  std::string host;
  absl::StatusOr<std::unique_ptr<Van>> opened =
      OpenAdminVan(options, &metrics, &host);
  if (!opened.ok()) return opened.status();
  Van& van = **opened;
  const uint64_t nonce =
      std::random_device()() * 4294967296ull + std::random_device()();
  absl::Mutex mu;
  std::optional<pb::AdminReply> reply;
  absl::Status started = van.Start(
      [&](Message&& msg) {
        const pb::Control& c = msg.meta.control();
        if (c.cmd() != pb::COMMAND_ADMIN || c.admin_reply().nonce() != nonce) {
          return;
        }
        absl::MutexLock lock(&mu);
        reply = c.admin_reply();
      },
      [] {});
  if (!started.ok()) return started;
  pb::Node scheduler;
  scheduler.set_id(kSchedulerId);
  scheduler.set_host(options.scheduler_host);
  scheduler.set_port(options.scheduler_port);
  van.Connect(scheduler);

  Message msg;
  msg.meta.set_sender(kEmptyNodeId);
  msg.meta.set_recipient(kSchedulerId);
  msg.meta.set_request(true);
  pb::Control* control = msg.meta.mutable_control();
  control->set_cmd(pb::COMMAND_ADMIN);
  pb::AdminRequest* req = control->mutable_admin_request();
  req->set_command(command);
  req->set_auth_token(options.auth_token);
  req->set_nonce(nonce);
  req->set_node_id(options.node_id);
  pb::Node* client = req->mutable_client();
  client->set_host(host);
  client->set_port(van.port());
  client->set_transport_id(van.transport_id());
  absl::Status sent = van.Send(std::move(msg));
  if (!sent.ok()) {
    van.Stop();
    return sent;
  }
  bool answered = false;
  {
    absl::MutexLock lock(&mu);
    auto done = [&reply]() { return reply.has_value(); };
    answered = mu.AwaitWithTimeout(absl::Condition(&done), options.timeout);
  }
  van.Stop();
  if (!answered) {
    return absl::DeadlineExceededError(absl::StrCat(
        "no answer from the scheduler at ", options.scheduler_host, ":",
        options.scheduler_port, " within ",
        absl::FormatDuration(options.timeout),
        options.curve.enabled()
            ? " (is it running and reachable, is --auth_token right, and "
              "does the authorized-keys file give this key role admin?)"
            : " (is it running, reachable, and is --auth_token right?)"));
  }
  if (reply->status_code() != 0) {
    const int code = reply->status_code();
    return absl::Status(code > 0 && code <= 16
                            ? static_cast<absl::StatusCode>(code)
                            : absl::StatusCode::kInternal,
                        reply->status_message());
  }
  return *std::move(reply);
}

}  // namespace petrel
