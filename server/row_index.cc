#include "server/row_index.h"

#include <cstdlib>
#include <new>
#include <utility>

#include <sys/mman.h>

#include "glog/logging.h"

namespace petrel {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kMinCapacity = 16;

}  // namespace

RowIndex::~RowIndex() { Release(); }

RowIndex::RowIndex(RowIndex&& other) noexcept { *this = std::move(other); }

RowIndex& RowIndex::operator=(RowIndex&& other) noexcept {
  if (this != &other) {
    Release();
    slots_ = std::exchange(other.slots_, nullptr);
    mask_ = std::exchange(other.mask_, 0);
    shift_ = std::exchange(other.shift_, 64);
    size_ = std::exchange(other.size_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
    mapped_ = std::exchange(other.mapped_, false);
  }
  return *this;
}

void RowIndex::Release() {
  if (slots_ == nullptr) return;
  if (mapped_) {
    munmap(slots_, bytes_);
  } else {
    std::free(slots_);
  }
  slots_ = nullptr;
}

void RowIndex::Grow() {
  const size_t old_capacity = slots_ == nullptr ? 0 : mask_ + 1;
  const size_t capacity = old_capacity == 0 ? kMinCapacity : 2 * old_capacity;
  const size_t bytes = capacity * sizeof(Slot);
  Slot* slots = nullptr;
  bool mapped = false;
  if (bytes >= kHugePage) {
    // A multiple of 2 MiB, so every page of it can be a huge page; mmap's
    // memory is zero and the madvise is a hint (no huge pages: small ones).
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      madvise(p, bytes, MADV_HUGEPAGE);
      slots = static_cast<Slot*>(p);
      mapped = true;
    }
  }
  if (slots == nullptr) {
    slots = static_cast<Slot*>(std::malloc(bytes));
    if (slots == nullptr) throw std::bad_alloc();
  }
  for (size_t i = 0; i < capacity; ++i) slots[i].row = kNoRow;
  Slot* old = slots_;
  const bool old_mapped = mapped_;
  const size_t old_bytes = bytes_;
  slots_ = slots;
  mask_ = capacity - 1;
  shift_ = 64 - __builtin_ctzll(capacity);
  bytes_ = bytes;
  mapped_ = mapped;
  for (size_t i = 0; i < old_capacity; ++i) {
    if (old[i].row == kNoRow) continue;
    size_t pos = Home(old[i].key);
    while (slots_[pos].row != kNoRow) pos = (pos + 1) & mask_;
    slots_[pos] = old[i];
  }
  if (old != nullptr) {
    if (old_mapped) {
      munmap(old, old_bytes);
    } else {
      std::free(old);
    }
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
