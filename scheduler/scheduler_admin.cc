// The scheduler's admin channel and cluster metrics: petrelctl's requests
// (status, checkpoint, stop), the heartbeat stats behind `petrelctl
// status`, and the petrel_cluster_* / petrel_scheduler_* gauges.
//
// An admin request arrives like a join, from a client without a node id:
// COMMAND_ADMIN with an AdminRequest naming the client's address. It must
// carry the cluster's auth token (compared in constant time) and, with
// CURVE on, come over a connection authenticated by a key with role admin
// (the authorized-keys file); a request failing either gets no answer and no
// connection, only a count in
// petrel_scheduler_admin_requests_total{result="refused"}. The reply goes
// back on a temporary route to the client's address; a few such routes are
// reused in turn, so clients cost the scheduler at most that many
// connections.

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "base/secret_compare.h"
#include "scheduler/scheduler.h"
#include "security/authorized_keys.h"

namespace petrel {
namespace {

// Routes to admin clients: ids kAdminRoute, kAdminRoute - 1, ... (far below
// the joining nodes' temporary routes, -1, -2, ...).
constexpr int kAdminRoute = -1000000;
constexpr uint64_t kAdminRoutes = 4;

const char* RoleLabel(pb::Role role) {
  return role == pb::ROLE_SERVER ? "server" : "worker";
}

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

constexpr const char* kStates[] = {"alive", "finished", "dead", "lost"};

}  // namespace

void Scheduler::HandleAdmin(const Message& msg) {
  const pb::AdminRequest& req = msg.meta.control().admin_request();
  MetricsRegistry* metrics = postoffice_->metrics();
  const char* kHelp = "Admin requests (petrelctl), by command and result.";
  if (!msg.meta.request()) return;
  // With CURVE on, only a key with role admin may ask (its connection
  // authenticated it: msg.peer).
  const bool curve = postoffice_->van()->options().curve.enabled();
  pb::AdminReply reply;
  reply.set_nonce(req.nonce());
  int route = 0;
  {
    absl::MutexLock lock(&mu_);
    std::string refusal;
    if (!SecretsEqual(req.auth_token(), options_.auth_token)) {
      refusal = "wrong auth token";
    } else if (curve) {
      absl::StatusOr<uint32_t> roles = ParseKeyRoles(msg.peer.roles);
      if (msg.peer.public_key.empty() || !roles.ok()) {
        refusal = "the connection has no authenticated CURVE key";
      } else if ((*roles & kKeyRoleAdmin) == 0) {
        refusal = absl::StrCat("key ", msg.peer.public_key, " has roles '",
                               msg.peer.roles,
                               "', not admin (see the authorized-keys file)");
      }
    }
    if (!refusal.empty()) {
      metrics
          ->GetCounter("petrel_scheduler_admin_requests_total", kHelp,
                       {{"command", "any"}, {"result", "refused"}})
          ->Increment();
      LOG_EVERY_T(WARNING, 1.0)
          << "refused an admin request from " << req.client().host() << ":"
          << req.client().port() << ": " << refusal;
      return;
    }
    route = kAdminRoute - static_cast<int>(admin_requests_++ % kAdminRoutes);
    reply.set_num_servers(postoffice_->num_servers());
    reply.set_num_workers(postoffice_->num_workers());
    reply.set_formed(formed_);
    reply.set_job_state(result_.has_value() ? "ending"
                        : formed_           ? "running"
                                            : "forming");
    if (req.command() == pb::ADMIN_COMMAND_STATUS) FillStatus(&reply);
  }
  absl::Status result;
  switch (req.command()) {
    case pb::ADMIN_COMMAND_STATUS:
      break;
    case pb::ADMIN_COMMAND_CHECKPOINT:
      result = admin_actions_.checkpoint
                   ? admin_actions_.checkpoint()
                   : absl::FailedPreconditionError(
                         "the job has no checkpoint directory");
      break;
    case pb::ADMIN_COMMAND_STOP:
      LOG(INFO) << "stop requested by petrelctl from " << req.client().host();
      if (admin_actions_.stop) {
        admin_actions_.stop("stop requested by petrelctl");
      } else {
        Interrupt("stop requested by petrelctl");
      }
      break;
    case pb::ADMIN_COMMAND_DRAIN_SERVER:
      LOG(INFO) << "drain of node " << req.node_id()
                << " requested by petrelctl from " << req.client().host();
      result = RequestDrain(req.node_id());
      if (!result.ok()) {
        LOG(WARNING) << "refused to drain node " << req.node_id() << ": "
                     << result.message();
      }
      break;
    default:
      result = absl::InvalidArgumentError(
          absl::StrCat("unknown admin command ", req.command()));
  }
  reply.set_status_code(static_cast<int>(result.code()));
  reply.set_status_message(std::string(result.message()));
  metrics
      ->GetCounter("petrel_scheduler_admin_requests_total", kHelp,
                   {{"command", CommandLabel(req.command())},
                    {"result", result.ok() ? "ok" : "error"}})
      ->Increment();
  pb::Node client = req.client();
  client.set_id(route);
  client.clear_transport_id();
  // With CURVE the client listens as a CURVE server with the key it asked
  // with: the route to it is a CURVE client that expects that key.
  client.set_curve_public_key(curve ? msg.peer.public_key : "");
  postoffice_->van()->Connect(client);
  pb::Control control;
  control.set_cmd(pb::COMMAND_ADMIN);
  // Names the client's transport identity, as every reply to a node
  // without an id does (wire_codec.cc, IsJoinReply).
  *control.add_nodes() = req.client();
  *control.mutable_admin_reply() = std::move(reply);
  SendControl(route, std::move(control));
}

void Scheduler::FillStatus(pb::AdminReply* reply) const {
  const absl::Time now = absl::Now();
  if (!formed_) {
    for (const pb::Node& n : pending_) {
      pb::NodeStatus* s = reply->add_nodes();
      *s->mutable_node() = n;
      s->set_state("joining");
      s->set_heartbeat_age_s(-1);
    }
    return;
  }
  for (const pb::Node& n : table_) {
    if (n.id() == kSchedulerId) continue;
    pb::NodeStatus* s = reply->add_nodes();
    *s->mutable_node() = n;
    const bool dead =
        std::any_of(dead_.begin(), dead_.end(),
                    [&n](const DeadNode& d) { return d.node.id() == n.id(); });
    s->set_state(lost_workers_.contains(n.id())   ? "lost"
                 : drained_.contains(n.id())      ? "drained"
                 : dead                           ? "dead"
                 : done_workers_.contains(n.id()) ? "finished"
                                                  : "alive");
    auto seen = last_seen_.find(n.id());
    s->set_heartbeat_age_s(seen == last_seen_.end()
                               ? -1
                               : absl::ToDoubleSeconds(now - seen->second));
    auto report = reports_.find(n.id());
    if (report != reports_.end()) {
      s->set_requests_per_s(report->second.requests_per_s);
      s->set_requests_total(report->second.stats.requests_total());
      *s->mutable_tables() = report->second.stats.tables();
    }
  }
}

void Scheduler::RecordStats(int sender, const pb::NodeStats& stats) {
  NodeReport& r = reports_[sender];
  const absl::Time now = absl::Now();
  if (r.at != absl::InfinitePast() && now > r.at) {
    const double seconds = absl::ToDoubleSeconds(now - r.at);
    const int64_t delta =
        std::max<int64_t>(0, stats.requests_total() - r.stats.requests_total());
    r.requests_per_s = static_cast<double>(delta) / seconds;
  }
  r.stats = stats;
  r.at = now;
}

void Scheduler::ExportClusterMetrics() {
  MetricsRegistry* metrics = postoffice_->metrics();
  pb::AdminReply status;
  FillStatus(&status);
  for (pb::Role role : {pb::ROLE_SERVER, pb::ROLE_WORKER}) {
    for (const char* state : kStates) {
      int n = 0;
      for (const pb::NodeStatus& s : status.nodes()) {
        if (s.node().role() == role && s.state() == state) ++n;
      }
      metrics
          ->GetGauge("petrel_cluster_nodes",
                     "Nodes of the cluster by role and state (alive, "
                     "finished, dead, lost).",
                     {{"role", RoleLabel(role)}, {"state", state}})
          ->Set(n);
    }
    metrics
        ->GetGauge("petrel_cluster_nodes_expected",
                   "Nodes the job expects, by role.",
                   {{"role", RoleLabel(role)}})
        ->Set(role == pb::ROLE_SERVER ? postoffice_->num_servers()
                                      : postoffice_->num_workers());
  }
  metrics
      ->GetGauge("petrel_cluster_formed",
                 "1 once every expected node joined, else 0.")
      ->Set(formed_ ? 1 : 0);
  // The key-range map is fixed once the cluster formed (servers are not
  // elastic yet): version 1 from then on, 0 before.
  metrics
      ->GetGauge("petrel_cluster_key_range_version",
                 "Version of the key-range map the cluster uses (0: none).")
      ->Set(formed_ ? 1 : 0);
  size_t waiting = 0;
  for (const auto& entry : barriers_) waiting += entry.second.size();
  metrics
      ->GetGauge("petrel_scheduler_barrier_waiting_nodes",
                 "Nodes waiting at a barrier now.")
      ->Set(static_cast<double>(waiting));
  Counter* passed = metrics->GetCounter("petrel_scheduler_barriers_total",
                                        "Barriers passed.");
  if (static_cast<uint64_t>(passed->value()) < barriers_passed_) {
    passed->Increment(static_cast<int64_t>(barriers_passed_) - passed->value());
  }
  metrics->GetCounter("petrel_scheduler_admin_requests_total",
                      "Admin requests (petrelctl), by command and result.",
                      {{"command", "any"}, {"result", "refused"}});
}

}  // namespace petrel
