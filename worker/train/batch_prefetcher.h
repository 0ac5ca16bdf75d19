// BatchPrefetcher: reads and deduplicates training batches on its own
// thread, a few batches ahead of the trainer, over several epochs. The
// trainer's thread then spends its time on pulls, compute and pushes.
//
// Thread safety: Next is called by one consumer thread; the prefetcher owns
// its reader thread (started in Start, joined in Stop or the destructor).
#ifndef PETREL_WORKER_TRAIN_BATCH_PREFETCHER_H_
#define PETREL_WORKER_TRAIN_BATCH_PREFETCHER_H_

#include <atomic>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

#include "worker/data/batch.h"
#include "worker/data/reader.h"

namespace petrel {

// A batch with its unique keys and each feature's index into them.
struct PreparedBatch {
  Batch batch;
  std::vector<uint64_t> unique;
  std::vector<uint32_t> inverse;
  int epoch = 0;  // 0-based
  // The reader's next_offset() after this batch: where the example after
  // its last one starts (-1 when not known, e.g. from the cache).
  int64_t next_offset = -1;
  // The reader's fraction_read() after this batch (-1: not known).
  double fraction_read = -1;
};

class BatchPrefetcher {
 public:
  // Reads `epochs` passes over `reader` in batches of `batch_size`, keeping
  // at most `depth` batches ready. `reader` is owned.
  BatchPrefetcher(std::unique_ptr<Reader> reader, int batch_size, int epochs,
                  int depth = 4);
  ~BatchPrefetcher();
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  // Resumes a run: starts at 0-based `epoch` (< epochs), skipping the
  // first `skip_examples` examples of it (a checkpoint's worker position).
  // REQUIRES: before Start.
  void set_start(int epoch, int64_t skip_examples) {
    start_epoch_ = epoch;
    skip_examples_ = skip_examples;
  }
  void Start();
  void Stop();
  // The next batch; nullptr after the last one. A read error (file and
  // line) is returned once the batches before it were consumed.
  absl::StatusOr<std::unique_ptr<PreparedBatch>> Next();
  int64_t malformed_lines() const;

 private:
  void Run();
  absl::StatusOr<bool> ReadOne(int* epoch, PreparedBatch* out);
  absl::Status Skip();

  std::unique_ptr<Reader> reader_;
  const int batch_size_;
  const int epochs_;
  const size_t depth_;
  int start_epoch_ = 0;
  int64_t skip_examples_ = 0;
  std::thread thread_;
  std::atomic<int64_t> malformed_{0};

  mutable absl::Mutex mu_;
  std::deque<std::unique_ptr<PreparedBatch>> ready_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;  // no more batches will come
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace petrel

#endif  // PETREL_WORKER_TRAIN_BATCH_PREFETCHER_H_
