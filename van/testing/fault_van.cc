#include "van/testing/fault_van.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace petrel {
namespace {

// A data type value no Petrel node knows.
constexpr int kUnknownDataType = 99;

Counter* InjectedCounter(MetricsRegistry* metrics, const char* fault) {
  return metrics->GetCounter("petrel_fault_van_injected_total",
                             "Faults a test FaultVan injected, by kind.",
                             {{"fault", fault}});
}

// A copy of `frame` with `extra` more bytes (zero) at the end.
Buffer Grow(const Buffer& frame, size_t extra) {
  Buffer out = Buffer::Allocate(frame.size() + extra);
  if (!frame.empty())
    std::memcpy(out.mutable_data(), frame.data(), frame.size());
  std::memset(out.mutable_data() + frame.size(), 0, extra);
  return out;
}

// Makes the kv counts of `msg` disagree. REQUIRES: kv with >= 2 frames.
void BreakKvCounts(Message* msg) {
  std::vector<Buffer>& data = msg->data;
  size_t keys = data[0].size() / sizeof(uint64_t);
  size_t val_size = DataTypeSize(msg->meta.data_types(1));
  if (data.size() >= 3 && keys > 0) {
    // Lens no longer sum to the number of values.
    Buffer lens = Buffer::CopyOf(data[2].data(), data[2].size());
    int32_t first;
    std::memcpy(&first, lens.data(), sizeof(first));
    first = first == INT32_MAX ? 0 : first + 1;
    std::memcpy(lens.mutable_data(), &first, sizeof(first));
    data[2] = lens;
  } else if (data.size() == 2 && keys == 1) {
    // One key whose length is one more than the values that follow.
    int32_t len = static_cast<int32_t>(data[1].size() / val_size) + 1;
    data.push_back(Buffer::CopyOf(&len, sizeof(len)));
    msg->meta.add_data_types(pb::DATA_TYPE_INT32);
  } else {
    // One value too many: 0 keys with values, or values % keys != 0.
    data[1] = Grow(data[1], val_size);
  }
}

}  // namespace

FaultVan::FaultVan(std::unique_ptr<Van> inner, FaultOptions options)
    : Van(inner->options(), inner->metrics(), inner->transport_id()),
      inner_(std::move(inner)),
      injected_drop_(InjectedCounter(metrics(), "drop")),
      injected_duplicate_(InjectedCounter(metrics(), "duplicate")),
      injected_delay_(InjectedCounter(metrics(), "delay")),
      injected_reorder_(InjectedCounter(metrics(), "reorder")),
      injected_corrupt_(InjectedCounter(metrics(), "corrupt")),
      options_(std::move(options)),
      rng_(options_.seed) {}

FaultVan::~FaultVan() { Stop(); }

void FaultVan::SyncIdentity() {
  inner_->set_my_id(my_id());
  inner_->set_is_scheduler(is_scheduler());
}

absl::Status FaultVan::Start(MessageHandler on_message, TickHandler on_tick) {
  SyncIdentity();
  absl::Status s = inner_->Start(std::move(on_message), std::move(on_tick));
  if (!s.ok()) return s;
  {
    absl::MutexLock lock(&mu_);
    running_ = true;
  }
  release_thread_ = std::thread([this] { ReleaseLoop(); });
  return absl::OkStatus();
}

void FaultVan::Stop() {
  {
    absl::MutexLock lock(&mu_);
    running_ = false;
  }
  if (release_thread_.joinable()) release_thread_.join();
  {
    absl::MutexLock lock(&mu_);
    held_.clear();
    reorder_slot_.clear();
  }
  inner_->Stop();
}

void FaultVan::Connect(const pb::Node& node) {
  // Postoffice sets this van's id just before it connects to the nodes of
  // the table, so the inner van learns its id before any data message.
  SyncIdentity();
  inner_->Connect(node);
}

void FaultVan::set_options(FaultOptions options) {
  absl::MutexLock lock(&mu_);
  options_ = std::move(options);
  rng_.seed(options_.seed);
}

FaultStats FaultVan::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

bool FaultVan::Roll(double probability) {
  if (probability <= 0) return false;
  return std::uniform_real_distribution<double>(0, 1)(rng_) < probability;
}

size_t FaultVan::Uniform(size_t n) {
  return std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
}

absl::Status FaultVan::Send(Message msg) {
  SyncIdentity();
  std::vector<Message> out;
  {
    absl::MutexLock lock(&mu_);
    if (!running_) return absl::FailedPreconditionError("van is not running");
    ++stats_.sent;
    if (options_.data_messages_only && msg.meta.has_control()) {
      out.push_back(std::move(msg));
    } else {
      if (Roll(options_.drop_probability)) {
        ++stats_.dropped;
        injected_drop_->Increment();
        return absl::OkStatus();
      }
      if (Roll(options_.corrupt_probability)) CorruptSomehow(&msg);
      std::vector<Message> copies;
      if (Roll(options_.duplicate_probability)) {
        ++stats_.duplicated;
        injected_duplicate_->Increment();
        copies.push_back(msg);
      }
      copies.push_back(std::move(msg));
      absl::Time now = absl::Now();
      for (Message& m : copies) {
        if (Roll(options_.delay_probability)) {
          ++stats_.delayed;
          injected_delay_->Increment();
          absl::Duration d = options_.max_delay *
                             std::uniform_real_distribution<double>(0, 1)(rng_);
          Hold(now + d, std::move(m), /*reorder=*/false);
          continue;
        }
        auto slot = reorder_slot_.find(m.meta.recipient());
        if (slot != reorder_slot_.end()) {
          // This message overtakes the one held for its recipient.
          auto held = held_.extract(slot->second);
          reorder_slot_.erase(slot);
          out.push_back(std::move(m));
          out.push_back(std::move(held.mapped().msg));
        } else if (Roll(options_.reorder_probability)) {
          ++stats_.reordered;
          injected_reorder_->Increment();
          Hold(now + options_.reorder_max_hold, std::move(m), /*reorder=*/true);
        } else {
          out.push_back(std::move(m));
        }
      }
    }
  }
  for (Message& m : out) PassOn(std::move(m));
  return absl::OkStatus();
}

void FaultVan::Hold(absl::Time due, Message msg, bool reorder) {
  std::pair<absl::Time, uint64_t> key(due, next_hold_++);
  if (reorder) reorder_slot_[msg.meta.recipient()] = key;
  Held& h = held_[key];
  h.msg = std::move(msg);
  h.reorder = reorder;
  wake_ = true;
}

void FaultVan::ReleaseLoop() {
  while (true) {
    std::vector<Message> due;
    {
      absl::MutexLock lock(&mu_);
      absl::Time deadline =
          held_.empty() ? absl::InfiniteFuture() : held_.begin()->first.first;
      auto woken = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
        return wake_ || !running_;
      };
      mu_.AwaitWithDeadline(absl::Condition(&woken), deadline);
      wake_ = false;
      if (!running_) return;
      absl::Time now = absl::Now();
      while (!held_.empty() && held_.begin()->first.first <= now) {
        auto node = held_.extract(held_.begin());
        if (node.mapped().reorder) {
          // Nothing overtook it in time: it goes alone.
          auto slot = reorder_slot_.find(node.mapped().msg.meta.recipient());
          if (slot != reorder_slot_.end() && slot->second == node.key()) {
            reorder_slot_.erase(slot);
          }
        }
        due.push_back(std::move(node.mapped().msg));
      }
    }
    for (Message& m : due) PassOn(std::move(m));
  }
}

void FaultVan::PassOn(Message msg) {
  absl::Status s = inner_->Send(std::move(msg));
  if (!s.ok()) VLOG(1) << "fault van: inner send failed: " << s;
}

void FaultVan::CorruptSomehow(Message* msg) {
  std::vector<CorruptKind> kinds = options_.corrupt_kinds;
  while (!kinds.empty()) {
    size_t i = Uniform(kinds.size());
    if (Corrupt(kinds[i], msg)) {
      ++stats_.corrupted;
      injected_corrupt_->Increment();
      return;
    }
    kinds.erase(kinds.begin() + static_cast<ptrdiff_t>(i));
  }
}

bool FaultVan::Corrupt(CorruptKind kind, Message* msg) {
  std::vector<Buffer>& data = msg->data;
  switch (kind) {
    case CorruptKind::kBadDataType: {
      if (data.empty()) return false;
      msg->meta.mutable_data_types()->Set(
          static_cast<int>(Uniform(data.size())), kUnknownDataType);
      return true;
    }
    case CorruptKind::kTruncateFrame: {
      std::vector<size_t> candidates;
      for (size_t i = 0; i < data.size(); ++i) {
        if (!data[i].empty() &&
            DataTypeSize(msg->meta.data_types(static_cast<int>(i))) > 1) {
          candidates.push_back(i);
        }
      }
      if (candidates.empty()) return false;
      Buffer& frame = data[candidates[Uniform(candidates.size())]];
      frame = frame.Slice(0, frame.size() - 1);
      return true;
    }
    case CorruptKind::kMissingFrame:
      msg->meta.add_data_types(pb::DATA_TYPE_BYTES);
      return true;
    case CorruptKind::kSpoofSender:
      msg->meta.set_sender(msg->meta.sender() + 2);
      return true;
    case CorruptKind::kBadKvCounts:
      if (!msg->meta.kv() || data.size() < 2) return false;
      BreakKvCounts(msg);
      return true;
    case CorruptKind::kFlipDataByte: {
      std::vector<size_t> candidates;
      for (size_t i = 0; i < data.size(); ++i) {
        if (!data[i].empty()) candidates.push_back(i);
      }
      if (candidates.empty()) return false;
      // A copy: the sender's buffer may be shared with its caller.
      Buffer& frame = data[candidates[Uniform(candidates.size())]];
      frame = Buffer::CopyOf(frame.data(), frame.size());
      frame.mutable_data()[Uniform(frame.size())] ^=
          static_cast<char>(1 << Uniform(8));
      return true;
    }
    case CorruptKind::kFlipMetaByte: {
      std::string bytes = msg->meta.SerializeAsString();
      if (bytes.empty()) return false;
      bytes[Uniform(bytes.size())] ^= static_cast<char>(1 << Uniform(8));
      pb::Meta meta;
      if (!meta.ParseFromString(bytes)) return false;
      msg->meta = std::move(meta);
      return true;
    }
  }
  return false;
}

}  // namespace petrel
