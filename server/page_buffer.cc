#include "server/page_buffer.h"

#include <cstdlib>
#include <new>
#include <utility>

#include <sys/mman.h>

namespace petrel {

PageBuffer::PageBuffer(size_t bytes) {
  if (bytes >= kHugePageBytes) {
    const size_t rounded =
        (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    void* p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      madvise(p, rounded, MADV_HUGEPAGE);  // a hint; failing is harmless
      data_ = p;
      size_ = rounded;
      mapped_ = true;
      return;
    }
  }
  data_ = std::malloc(bytes == 0 ? 1 : bytes);
  if (data_ == nullptr) throw std::bad_alloc();
  size_ = bytes;
}

PageBuffer::~PageBuffer() { Release(); }

PageBuffer::PageBuffer(PageBuffer&& other) noexcept {
  *this = std::move(other);
}

PageBuffer& PageBuffer::operator=(PageBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, false);
  }
  return *this;
}

void PageBuffer::Release() {
  if (data_ == nullptr) return;
  if (mapped_) {
    munmap(data_, size_);
  } else {
    std::free(data_);
  }
  data_ = nullptr;
  size_ = 0;
}

}  // namespace petrel
