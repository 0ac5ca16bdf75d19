#include "server/row_index.h"

#include <utility>

#include "glog/logging.h"

namespace petrel {
namespace {

constexpr size_t kMinCapacity = 16;

}  // namespace

RowIndex::RowIndex(RowIndex&& other) noexcept { *this = std::move(other); }

RowIndex& RowIndex::operator=(RowIndex&& other) noexcept {
  if (this != &other) {
    buffer_ = std::move(other.buffer_);
    slots_ = std::exchange(other.slots_, nullptr);
    mask_ = std::exchange(other.mask_, 0);
    shift_ = std::exchange(other.shift_, 64);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void RowIndex::Grow() {
  const size_t old_capacity = slots_ == nullptr ? 0 : mask_ + 1;
  const size_t capacity = old_capacity == 0 ? kMinCapacity : 2 * old_capacity;
  PageBuffer buffer(capacity * sizeof(Slot));
  Slot* slots = static_cast<Slot*>(buffer.data());
  for (size_t i = 0; i < capacity; ++i) slots[i].row = kNoRow;
  PageBuffer old_buffer = std::exchange(buffer_, std::move(buffer));
  const Slot* old = slots_;
  slots_ = slots;
  mask_ = capacity - 1;
  shift_ = 64 - __builtin_ctzll(capacity);
  for (size_t i = 0; i < old_capacity; ++i) {
    if (old[i].row == kNoRow) continue;
    size_t pos = Home(old[i].key);
    while (slots_[pos].row != kNoRow) pos = (pos + 1) & mask_;
    slots_[pos] = old[i];
  }
}

uint32_t RowIndex::FindOrInsert(uint64_t key, bool* inserted) {
  *inserted = false;
  if (slots_ == nullptr) Grow();
  size_t pos = Home(key);
  for (;; pos = (pos + 1) & mask_) {
    const Slot& s = slots_[pos];
    if (s.row == kNoRow) break;
    if (s.key == key) return s.row;
  }
  CHECK_LT(size_, size_t{kNoRow} - 1) << "RowIndex is full";
  if (2 * (size_ + 1) > mask_ + 1) {
    Grow();
    pos = Home(key);
    while (slots_[pos].row != kNoRow) pos = (pos + 1) & mask_;
  }
  const uint32_t row = static_cast<uint32_t>(size_);
  slots_[pos] = Slot{key, row, 0};
  ++size_;
  *inserted = true;
  return row;
}

}  // namespace petrel
