#include "base/startup_progress.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace petrel {

void StartupProgress::Begin(std::string what, uint64_t total) {
  absl::MutexLock lock(&mu_);
  what_ = std::move(what);
  total_ = std::max<uint64_t>(total, 1);
  done_ = 0;
  began_ = absl::Now();
  logged_ = began_;
  LOG(INFO) << what_;
}

void StartupProgress::Advance(uint64_t units) {
  absl::MutexLock lock(&mu_);
  done_ = std::min(total_, done_ + units);
  const absl::Time now = absl::Now();
  if (what_.empty() || now - logged_ < log_every_) return;
  logged_ = now;
  LOG(INFO) << "still " << DescribeLocked();
}

void StartupProgress::End() {
  absl::MutexLock lock(&mu_);
  what_.clear();
}

std::string StartupProgress::Describe() const {
  absl::MutexLock lock(&mu_);
  return DescribeLocked();
}

std::string StartupProgress::DescribeLocked() const {
  if (what_.empty()) return "";
  const absl::Duration elapsed =
      absl::Trunc(absl::Now() - began_, absl::Seconds(1));
  return absl::StrCat(what_, ": ", done_ * 100 / total_, "% after ",
                      absl::FormatDuration(elapsed));
}

void StartupProgress::Cancel(std::string reason) {
  absl::MutexLock lock(&mu_);
  if (cancelled_.load(std::memory_order_relaxed)) return;
  reason_ = std::move(reason);
  cancelled_.store(true, std::memory_order_relaxed);
}

absl::Status StartupProgress::CancelledError() const {
  absl::MutexLock lock(&mu_);
  const std::string doing = DescribeLocked();
  return absl::CancelledError(
      doing.empty() ? reason_ : absl::StrCat(reason_, " while ", doing));
}

}  // namespace petrel
