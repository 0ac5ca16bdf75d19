#include "base/shard_pool.h"

#include <algorithm>

#include "absl/time/clock.h"

namespace petrel {

ShardPool::ShardPool(int num_threads)
    : num_threads_(std::max(1, num_threads)) {}

ShardPool::~ShardPool() { Stop(); }

absl::Status ShardPool::Start() {
  {
    absl::MutexLock lock(&mu_);
    if (started_) return absl::FailedPreconditionError("pool already started");
    started_ = true;
  }
  for (int i = 1; i < num_threads_; ++i)
    threads_.emplace_back([this] { Loop(); });
  return absl::OkStatus();
}

void ShardPool::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void ShardPool::Loop() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
        return stopping_ || next_task_ < num_tasks_;
      };
      mu_.Await(absl::Condition(&ready));
      if (stopping_) return;
    }
    Work();
  }
}

void ShardPool::Work() {
  for (;;) {
    int task;
    const std::function<void(int)>* fn;
    {
      absl::MutexLock lock(&mu_);
      if (next_task_ >= num_tasks_) return;
      task = next_task_++;
      fn = fn_;
    }
    (*fn)(task);
    absl::MutexLock lock(&mu_);
    ++done_tasks_;
    done_spin_.store(done_tasks_, std::memory_order_release);
  }
}

void ShardPool::SpinForOthers(int n) {
  if (done_spin_.load(std::memory_order_acquire) == n) return;
  const int64_t deadline =
      absl::GetCurrentTimeNanos() + absl::ToInt64Nanoseconds(kJoinSpin);
  do {
    for (int i = 0; i < 64; ++i) {
      if (done_spin_.load(std::memory_order_acquire) == n) return;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
  } while (absl::GetCurrentTimeNanos() < deadline);
}

void ShardPool::Run(int n, const std::function<void(int)>& fn) {
  absl::MutexLock run_lock(&run_mu_);
  bool parallel;
  {
    absl::MutexLock lock(&mu_);
    parallel = started_ && !stopping_ && num_threads_ > 1 && n > 1;
    if (parallel) {
      fn_ = &fn;
      num_tasks_ = n;
      next_task_ = 0;
      done_tasks_ = 0;
      done_spin_.store(0, std::memory_order_relaxed);
    }
  }
  if (!parallel) {
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  Work();
  SpinForOthers(n);
  absl::MutexLock lock(&mu_);
  auto done = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
    return done_tasks_ == num_tasks_;
  };
  mu_.Await(absl::Condition(&done));
  fn_ = nullptr;
  num_tasks_ = 0;
  next_task_ = 0;
}

}  // namespace petrel
