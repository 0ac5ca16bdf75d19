// AdminClient: petrelctl's side of the scheduler's admin channel. It runs a
// ZeroMQ van of its own with no node id, sends one COMMAND_ADMIN request to
// the scheduler (like a join, see scheduler/admin_channel.h) and waits
// for the reply, which the scheduler sends back to this client's address.
//
// Thread safety: one call at a time per object.
#ifndef PETREL_TOOLS_PETRELCTL_ADMIN_CLIENT_H_
#define PETREL_TOOLS_PETRELCTL_ADMIN_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "base/metrics.h"
#include "proto/meta.pb.h"
#include "security/curve_keys.h"
#include "van/van.h"

namespace petrel {

struct AdminClientOptions {
  std::string scheduler_host;
  int scheduler_port = 0;
  // The cluster's --auth_token. Default empty.
  std::string auth_token;
  // Address this client listens on for the reply, which the scheduler must
  // reach; empty: the local address that routes to the scheduler.
  std::string bind_host;
  // ADMIN_COMMAND_DRAIN_SERVER: the server's node id. Default -1.
  int node_id = -1;
  // Longest wait for the reply. Default 10 s.
  absl::Duration timeout = absl::Seconds(10);
  // The client's CURVE keys (an admin key), the authorized-keys file that
  // admits the scheduler's answer, and the scheduler's public key, as
  // LoadCurveOptions + CompleteCurveOptions make them. Default: off (the
  // cluster is open).
  CurveOptions curve;
};

// Sets up the client's van (bound, not started): the one place that decides
// how the admin client's socket is secured (CURVE with options.curve when
// the cluster has keys). InvalidArgument when the scheduler's host does not
// resolve.
absl::StatusOr<std::unique_ptr<Van>> OpenAdminVan(
    const AdminClientOptions& options, MetricsRegistry* metrics,
    std::string* bind_host);

// Sends `command` and returns the scheduler's reply. DeadlineExceeded
// naming the scheduler when no reply came within the timeout (a wrong auth
// token, or with CURVE a key without role admin, looks the same: the
// scheduler does not answer strangers);
// the reply's own status when the scheduler refused the command.
absl::StatusOr<pb::AdminReply> AdminCall(const AdminClientOptions& options,
                                         pb::AdminCommand command);

}  // namespace petrel

#endif  // PETREL_TOOLS_PETRELCTL_ADMIN_CLIENT_H_
