// ShardPool: a small fixed pool of threads that runs the shards of one
// request in parallel (a ParallelRunner for Table). The calling thread takes
// part, so a pool of N threads starts N - 1 of its own.
//
//   ShardPool pool(4);
//   PETREL_RETURN_IF_ERROR(pool.Start());
//   pool.Run(16, [&](int shard) { ... });  // returns when all 16 are done
//   pool.Stop();
//
// Joining: when the caller runs out of tasks while another thread is still
// in its last one, the caller spins (up to kJoinSpin) before it blocks. A
// blocked caller is woken by the last thread to finish, and on a VM whose
// other vCPU went idle that wake-up alone costs tens of microseconds, as
// much as a pull of 10,000 keys spends in the walk (docs/kv.md).
//
// Thread safety: Run may be called from one thread at a time (a second
// caller waits for the first to finish). Start and Stop from the owner;
// Stop is idempotent and the destructor calls it. Run before Start or after
// Stop runs everything on the calling thread.
#ifndef PETREL_BASE_SHARD_POOL_H_
#define PETREL_BASE_SHARD_POOL_H_

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace petrel {

class ShardPool {
 public:
  // `num_threads` >= 1 counts the calling thread.
  explicit ShardPool(int num_threads);
  ~ShardPool();
  ShardPool(const ShardPool&) = delete;
  ShardPool& operator=(const ShardPool&) = delete;

  absl::Status Start();
  void Stop();

  // Runs fn(0..n-1) across the pool; returns when every call returned.
  void Run(int n, const std::function<void(int)>& fn);

  int num_threads() const { return num_threads_; }

  // The longest the caller of Run spins for the other threads' last tasks
  // before it blocks (see above).
  static constexpr absl::Duration kJoinSpin = absl::Microseconds(50);

 private:
  void Loop();
  // Claims and runs tasks of the current job until none are left.
  void Work() ABSL_LOCKS_EXCLUDED(mu_);
  // Returns once `n` tasks are done or kJoinSpin has passed.
  void SpinForOthers(int n) ABSL_LOCKS_EXCLUDED(mu_);

  const int num_threads_;
  absl::Mutex run_mu_;  // serializes Run callers
  absl::Mutex mu_;
  // The current job; state below is guarded by mu_.
  const std::function<void(int)>* fn_ ABSL_GUARDED_BY(mu_) = nullptr;
  int num_tasks_ ABSL_GUARDED_BY(mu_) = 0;
  int next_task_ ABSL_GUARDED_BY(mu_) = 0;
  int done_tasks_ ABSL_GUARDED_BY(mu_) = 0;
  // done_tasks_, also readable without mu_ (Run's spin).
  std::atomic<int> done_spin_{0};
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;  // owner thread only
};

}  // namespace petrel

#endif  // PETREL_BASE_SHARD_POOL_H_
