#include "worker/train/batch_prefetcher.h"

#include <algorithm>

#include "base/status_macros.h"
#include "kernels/dedup.h"

namespace petrel {

BatchPrefetcher::BatchPrefetcher(std::unique_ptr<Reader> reader, int batch_size,
                                 int epochs, int depth)
    : reader_(std::move(reader)),
      batch_size_(batch_size),
      epochs_(epochs),
      depth_(static_cast<size_t>(depth)) {}

BatchPrefetcher::~BatchPrefetcher() { Stop(); }

void BatchPrefetcher::Start() {
  thread_ = std::thread([this] { Run(); });
}

void BatchPrefetcher::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

int64_t BatchPrefetcher::malformed_lines() const { return malformed_.load(); }

// Reads the next non-empty batch, rewinding between epochs. False at the
// end of the last epoch.
absl::StatusOr<bool> BatchPrefetcher::ReadOne(int* epoch, PreparedBatch* out) {
  while (true) {
    PETREL_ASSIGN_OR_RETURN(bool more, reader_->Next(batch_size_, &out->batch));
    if (more && out->batch.size() > 0) break;
    if (*epoch + 1 >= epochs_) return false;
    ++*epoch;
    PETREL_RETURN_IF_ERROR(reader_->Rewind());
  }
  out->epoch = *epoch;
  out->next_offset = reader_->next_offset();
  out->fraction_read = reader_->fraction_read();
  PETREL_RETURN_IF_ERROR(Dedup(out->batch.keys, &out->unique, &out->inverse));
  return true;
}

// Reads and drops the examples a resumed run already trained. A skip past
// the end of the share leaves the reader there (ReadOne then rewinds).
absl::Status BatchPrefetcher::Skip() {
  Batch dropped;
  for (int64_t left = skip_examples_; left > 0;) {
    int n = static_cast<int>(std::min<int64_t>(left, 1 << 16));
    PETREL_ASSIGN_OR_RETURN(bool more, reader_->Next(n, &dropped));
    if (!more) break;
    left -= static_cast<int64_t>(dropped.size());
  }
  return absl::OkStatus();
}

void BatchPrefetcher::Run() {
  int epoch = start_epoch_;
  if (absl::Status s = Skip(); !s.ok()) {
    absl::MutexLock lock(&mu_);
    error_ = s;
    done_ = true;
    return;
  }
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto room = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
        return stop_ || ready_.size() < depth_;
      };
      mu_.Await(absl::Condition(&room));
      if (stop_) return;
    }
    auto prepared = std::make_unique<PreparedBatch>();
    absl::StatusOr<bool> more = ReadOne(&epoch, prepared.get());
    malformed_ = reader_->malformed_lines();
    absl::MutexLock lock(&mu_);
    if (!more.ok() || !*more) {
      if (!more.ok()) error_ = more.status();
      done_ = true;
      return;
    }
    ready_.push_back(std::move(prepared));
  }
}

absl::StatusOr<std::unique_ptr<PreparedBatch>> BatchPrefetcher::Next() {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
    return !ready_.empty() || done_;
  };
  mu_.Await(absl::Condition(&ready));
  if (!ready_.empty()) {
    std::unique_ptr<PreparedBatch> b = std::move(ready_.front());
    ready_.pop_front();
    return b;
  }
  if (!error_.ok()) return error_;
  return std::unique_ptr<PreparedBatch>();
}

}  // namespace petrel
