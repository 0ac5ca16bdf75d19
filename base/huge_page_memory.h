// HugePageMemory: a block of memory from mmap, aligned to 2 MiB, whose
// whole 2 MiB pages the kernel is asked to back with transparent huge pages
// (madvise MADV_HUGEPAGE; the machine's THP setting may be "madvise" only).
// RowIndex's slots, KVStore's and the training tables' row slabs and the
// worker's cache chunks (BlockArena) live in such blocks: a lookup at a
// random key of a 10^7-key store otherwise misses the TLB as well as the
// cache, and a page walk costs about as much as the miss itself, more in a
// VM; and filling hundreds of MiB faults once per 2 MiB, not per 4 KiB.
//
// The memory starts as zeros and is committed page by page as it is
// touched (a whole 2 MiB page at a time where advised).
//
// Thread safety: a plain owner of bytes, like std::unique_ptr<char[]>.
#ifndef PETREL_BASE_HUGE_PAGE_MEMORY_H_
#define PETREL_BASE_HUGE_PAGE_MEMORY_H_

#include <cstddef>

#include "absl/status/statusor.h"

namespace petrel {

class HugePageMemory {
 public:
  static constexpr size_t kHugePageBytes = size_t{2} << 20;

  HugePageMemory() = default;
  // Maps `bytes` (> 0). With `advise`, asks for huge pages for every whole
  // 2 MiB page of it. ResourceExhausted when the mapping fails.
  static absl::StatusOr<HugePageMemory> Map(size_t bytes, bool advise);
  ~HugePageMemory();
  HugePageMemory(HugePageMemory&& other) noexcept;
  HugePageMemory& operator=(HugePageMemory&& other) noexcept;
  HugePageMemory(const HugePageMemory&) = delete;
  HugePageMemory& operator=(const HugePageMemory&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void Release();

  void* data_ = nullptr;
  size_t size_ = 0;
  void* map_ = nullptr;  // the whole mapping (data_ is aligned within it)
  size_t map_bytes_ = 0;
};

}  // namespace petrel

#endif  // PETREL_BASE_HUGE_PAGE_MEMORY_H_
