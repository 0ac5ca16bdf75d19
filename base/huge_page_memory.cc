#include "base/huge_page_memory.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include <sys/mman.h>

#include "absl/strings/str_cat.h"

namespace petrel {

absl::StatusOr<HugePageMemory> HugePageMemory::Map(size_t bytes, bool advise) {
  if (bytes > SIZE_MAX - kHugePageBytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot map ", bytes, " bytes"));
  }
  HugePageMemory m;
  // Map one huge page more than asked and use the aligned part.
  m.map_bytes_ = bytes + kHugePageBytes;
  void* map = mmap(nullptr, m.map_bytes_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("mmap of ", bytes, " bytes: ", std::strerror(errno)));
  }
  m.map_ = map;
  m.size_ = bytes;
  const uintptr_t start = reinterpret_cast<uintptr_t>(map);
  const uintptr_t aligned =
      (start + kHugePageBytes - 1) & ~(uintptr_t{kHugePageBytes} - 1);
  m.data_ = reinterpret_cast<void*>(aligned);
  const size_t whole = bytes & ~(kHugePageBytes - 1);
  // Advice only: without THP the memory works the same, in small pages.
  if (advise && whole > 0) madvise(m.data_, whole, MADV_HUGEPAGE);
  return m;
}

HugePageMemory::~HugePageMemory() { Release(); }

HugePageMemory::HugePageMemory(HugePageMemory&& other) noexcept {
  *this = std::move(other);
}

HugePageMemory& HugePageMemory::operator=(HugePageMemory&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    map_ = std::exchange(other.map_, nullptr);
    map_bytes_ = std::exchange(other.map_bytes_, 0);
  }
  return *this;
}

void HugePageMemory::Release() {
  if (map_ != nullptr) munmap(map_, map_bytes_);
  map_ = nullptr;
  data_ = nullptr;
}

}  // namespace petrel
