// Buffer: reference-counted bytes shared without copying, and SArray<T>, a
// typed view over a Buffer. A Buffer is the unit the van sends and receives:
// a received ZeroMQ frame is owned by the Buffer that wraps it and freed when
// the last copy of that Buffer goes away; a sent Buffer is kept alive until
// ZeroMQ has put it on the wire.
//
// Thread safety: a Buffer may be copied and destroyed from any thread (the
// count is atomic). Writing through mutable_data() while another thread
// reads the same bytes is a data race; the van never writes a Buffer it sends
// or receives.
#ifndef PETREL_VAN_BUFFER_H_
#define PETREL_VAN_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "glog/logging.h"

namespace petrel {

class Buffer {
 public:
  Buffer() = default;

  // Allocates `size` uninitialised bytes, aligned for any scalar type.
  static Buffer Allocate(size_t size);
  // Copies `size` bytes from `data`.
  static Buffer CopyOf(const void* data, size_t size);
  // Wraps bytes owned by `owner`; the bytes stay valid while any Buffer
  // sharing `owner` lives. `data` must point into memory that `owner` keeps.
  static Buffer Wrap(char* data, size_t size, std::shared_ptr<void> owner) {
    return Buffer(data, size, std::move(owner));
  }
  // Takes ownership of a vector's storage without copying.
  template <typename T>
  static Buffer FromVector(std::vector<T>&& v) {
    auto holder = std::make_shared<std::vector<T>>(std::move(v));
    char* data = reinterpret_cast<char*>(holder->data());
    size_t size = holder->size() * sizeof(T);
    return Buffer(data, size, std::move(holder));
  }

  const char* data() const { return data_; }
  char* mutable_data() { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const std::shared_ptr<void>& owner() const { return owner_; }

  // The bytes [offset, offset + size), sharing this Buffer's storage.
  // REQUIRES: offset + size <= this->size().
  Buffer Slice(size_t offset, size_t size) const {
    DCHECK_LE(offset + size, size_);
    return Buffer(data_ + offset, size, owner_);
  }

 private:
  Buffer(char* data, size_t size, std::shared_ptr<void> owner)
      : owner_(std::move(owner)), data_(data), size_(size) {}

  std::shared_ptr<void> owner_;
  char* data_ = nullptr;
  size_t size_ = 0;
};

// A typed, shared, zero-copy array (PS-Lite's SArray): copies share storage.
// REQUIRES for the Buffer constructor: size and alignment fit T (the wire
// decoder guarantees both for received frames).
template <typename T>
class SArray {
 public:
  SArray() = default;
  explicit SArray(size_t n) : buffer_(Buffer::Allocate(n * sizeof(T))) {}
  SArray(size_t n, T value) : SArray(n) { std::fill(begin(), end(), value); }
  explicit SArray(std::vector<T>&& v)
      : buffer_(Buffer::FromVector(std::move(v))) {}
  SArray(std::initializer_list<T> init) : SArray(std::vector<T>(init)) {}
  explicit SArray(const Buffer& buffer) : buffer_(buffer) {
    DCHECK_EQ(buffer.size() % sizeof(T), 0u);
    DCHECK_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % alignof(T), 0u);
  }

  static SArray CopyOf(const T* data, size_t n) {
    return SArray(Buffer::CopyOf(data, n * sizeof(T)));
  }
  static SArray CopyOf(const std::vector<T>& v) {
    return CopyOf(v.data(), v.size());
  }

  T* data() { return reinterpret_cast<T*>(buffer_.mutable_data()); }
  const T* data() const { return reinterpret_cast<const T*>(buffer_.data()); }
  size_t size() const { return buffer_.size() / sizeof(T); }
  bool empty() const { return size() == 0; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size(); }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size(); }
  std::vector<T> ToVector() const { return std::vector<T>(begin(), end()); }

  // Elements [begin, end), sharing storage.
  SArray Segment(size_t begin, size_t end) const {
    DCHECK_LE(begin, end);
    DCHECK_LE(end, size());
    return SArray(buffer_.Slice(begin * sizeof(T), (end - begin) * sizeof(T)));
  }
  const Buffer& buffer() const { return buffer_; }

 private:
  Buffer buffer_;
};

}  // namespace petrel

#endif  // PETREL_VAN_BUFFER_H_
