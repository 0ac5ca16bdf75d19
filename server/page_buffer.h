// PageBuffer: an owned, uninitialized block of memory for a table's slot
// arrays and row slabs. A block of 2 MiB or more is mapped on its own and
// asked for transparent huge pages (madvise; the kernel may decline), so
// that random lookups over a big table do not miss the TLB on almost every
// access, which costs most on a virtual machine; a smaller one comes from
// malloc.
//
// Thread safety: a plain move-only value type.
#ifndef PETREL_SERVER_PAGE_BUFFER_H_
#define PETREL_SERVER_PAGE_BUFFER_H_

#include <cstddef>

namespace petrel {

class PageBuffer {
 public:
  static constexpr size_t kHugePageBytes = size_t{2} << 20;

  PageBuffer() = default;
  // At least `bytes` bytes (a multiple of kHugePageBytes when mapped),
  // aligned for any scalar type. Throws std::bad_alloc when out of memory.
  explicit PageBuffer(size_t bytes);
  ~PageBuffer();
  PageBuffer(PageBuffer&& other) noexcept;
  PageBuffer& operator=(PageBuffer&& other) noexcept;
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;

  void* data() const { return data_; }
  // The bytes held (what was asked, rounded up when mapped).
  size_t size() const { return size_; }

 private:
  void Release();

  void* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
};

}  // namespace petrel

#endif  // PETREL_SERVER_PAGE_BUFFER_H_
