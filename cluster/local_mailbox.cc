#include "cluster/local_mailbox.h"

#include <utility>

namespace petrel {

absl::Status LocalMailbox::Post(Message msg) {
  absl::MutexLock lock(&mu_);
  if (stopped_) return absl::FailedPreconditionError("the node stopped");
  queue_.push_back(std::move(msg));
  if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void LocalMailbox::Stop() {
  std::thread thread;
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
    queue_.clear();
    thread.swap(thread_);
  }
  if (thread.joinable()) thread.join();
}

void LocalMailbox::Run() {
  for (;;) {
    Message msg;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return stopped_ || !queue_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (stopped_) return;
      msg = std::move(queue_.front());
      queue_.pop_front();
    }
    handler_(std::move(msg));
  }
}

}  // namespace petrel
