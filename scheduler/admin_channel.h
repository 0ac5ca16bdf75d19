// AdminChannel: the scheduler's end of petrelctl's requests (status,
// checkpoint, stop, drain-server).
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
//
// Thread safety: Handle runs on the scheduler's van thread only.
#ifndef PETREL_SCHEDULER_ADMIN_CHANNEL_H_
#define PETREL_SCHEDULER_ADMIN_CHANNEL_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"

#include "cluster/postoffice.h"
#include "proto/meta.pb.h"
#include "van/message.h"

namespace petrel {

class AdminChannel {
 public:
  // What the requests do; each runs on the van thread and must not block.
  struct Handlers {
    // Fills the reply's view of the job (its counts, whether it formed, its
    // state) and, when `nodes`, the status of every node.
    std::function<void(bool nodes, pb::AdminReply* reply)> status;
    std::function<absl::Status()> checkpoint;
    std::function<void(const std::string& reason)> stop;
    // Starts draining server node `node_id`, or says why it may not.
    std::function<absl::Status(int node_id)> drain;
  };

  // `postoffice` (the scheduler's) must outlive the channel; every handler
  // must be set.
  AdminChannel(Postoffice* postoffice, std::string auth_token,
               Handlers handlers);
  AdminChannel(const AdminChannel&) = delete;
  AdminChannel& operator=(const AdminChannel&) = delete;

  // A COMMAND_ADMIN control message.
  void Handle(const Message& msg);

 private:
  // Why `msg` may not ask (a wrong token, a CURVE key without role admin);
  // empty when it may.
  std::string Refusal(const Message& msg) const;
  // Carries out the request's command.
  absl::Status Execute(const pb::AdminRequest& req);
  // Sends `reply` to the client on the next of the temporary routes.
  void Answer(const Message& msg, pb::AdminReply reply);

  Postoffice* const postoffice_;
  const std::string auth_token_;
  const Handlers handlers_;
  // Requests answered so far: picks the route of the next (van thread).
  uint64_t answered_ = 0;
};

}  // namespace petrel

#endif  // PETREL_SCHEDULER_ADMIN_CHANNEL_H_
