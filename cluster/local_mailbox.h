// LocalMailbox: delivers the messages a node sends to itself, which no
// connection carries: the scheduler's own barrier request when the group
// holds the scheduler (PS-Lite's Barrier(kScheduler + ...)), and a
// SimpleApp request to a group that holds the sender, with its answer. Post
// queues a message; one thread of the mailbox's own (started on first use)
// hands each to the handler in order, so a handler may send to its own node
// again without waiting for itself.
//
// Thread safety: thread-safe. The handler runs on the mailbox's thread,
// concurrently with the van's receive thread (the Postoffice serialises
// what it dispatches).
#ifndef PETREL_CLUSTER_LOCAL_MAILBOX_H_
#define PETREL_CLUSTER_LOCAL_MAILBOX_H_

#include <deque>
#include <functional>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

#include "van/message.h"

namespace petrel {

class LocalMailbox {
 public:
  using Handler = std::function<void(Message&& msg)>;

  explicit LocalMailbox(Handler handler) : handler_(std::move(handler)) {}
  ~LocalMailbox() { Stop(); }
  LocalMailbox(const LocalMailbox&) = delete;
  LocalMailbox& operator=(const LocalMailbox&) = delete;

  // Queues `msg` for the handler. FailedPrecondition after Stop.
  absl::Status Post(Message msg);
  // Drops what is still queued and joins the thread once the message being
  // handled is done. Idempotent. REQUIRES: not called from the handler.
  void Stop();

 private:
  void Run();

  const Handler handler_;
  absl::Mutex mu_;
  std::deque<Message> queue_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_ ABSL_GUARDED_BY(mu_);
};

}  // namespace petrel

#endif  // PETREL_CLUSTER_LOCAL_MAILBOX_H_
