#include "base/row_index.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace petrel {
namespace {

constexpr size_t kMinCapacity = 16;
// Most keys an index may hold: 2^56 slots of 16 bytes is more memory than
// any machine maps, and the sizes below stay clear of overflow.
constexpr size_t kMaxKeys = size_t{3} << 54;

}  // namespace

absl::Status RowIndex::Grow(size_t n) {
  if (n > kMaxKeys) {
    return absl::ResourceExhaustedError(
        absl::StrCat("an index of ", n, " keys is too large"));
  }
  size_t capacity = slots_ == empty_ ? kMinCapacity : mask_ + 1;
  while (n > capacity / 4 * 3) capacity *= 2;
  if (slots_ != empty_ && capacity == mask_ + 1) return absl::OkStatus();
  return Rehash(capacity);
}

absl::Status RowIndex::Rehash(size_t capacity, bool drop_empty) {
  absl::StatusOr<HugePageMemory> memory =
      HugePageMemory::Map(capacity * sizeof(Slot), /*advise=*/true);
  if (!memory.ok()) return memory.status();
  Slot* slots = static_cast<Slot*>(memory->data());
  for (size_t i = 0; i < capacity; ++i) slots[i].width = kFreeSlot;
  // Reinsert every key into the new table (keys are unique: no lookups).
  Slot* old = slots_;
  size_t size = 0;
  const size_t old_capacity = mask_ + 1;
  slots_ = slots;
  mask_ = capacity - 1;
  for (size_t j = 0; old != empty_ && j < old_capacity; ++j) {
    const Slot& s = old[j];
    if (s.width == kFreeSlot || (drop_empty && s.width == 0)) continue;
    ++size;
    size_t i = Home(s.key);
    while (slots[i].width != kFreeSlot) i = (i + 1) & mask_;
    slots[i] = s;
  }
  memory_ = *std::move(memory);
  max_size_ = capacity / 4 * 3;
  size_ = size;
  return absl::OkStatus();
}

}  // namespace petrel
