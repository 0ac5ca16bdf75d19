// PS-Lite compatibility (docs/pslite.md): SArray<V>, PS-Lite's shared array.
// Copies share storage (as PS-Lite's do); resize and push_back grow it in
// place while the capacity allows, and otherwise move this array (not its
// other copies) to new storage. The storage is a petrel::Buffer, so an
// SArray converts to and from petrel::SArray<V> without copying, and a
// ZPush sends the caller's array as it is.
//
// Unlike PS-Lite's, ptr() (the std::shared_ptr<V> of the storage) is not
// offered: the storage is shared through petrel::Buffer.
//
// Thread safety: as a std::vector; copies in other threads share the bytes.
#ifndef PETREL_PSLITE_INCLUDE_PS_SARRAY_H_
#define PETREL_PSLITE_INCLUDE_PS_SARRAY_H_

#include <algorithm>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <ostream>
#include <vector>

#include "glog/logging.h"

#include "van/buffer.h"

namespace ps {

template <typename V>
class SArray {
 public:
  using Deleter = std::function<void(V* data)>;

  SArray() = default;
  // `size` elements, each `val`.
  explicit SArray(size_t size, V val = 0) { resize(size, val); }
  // A copy of `vec`.
  explicit SArray(const std::vector<V>& vec) {
    CopyFrom(vec.data(), vec.size());
  }
  SArray(const std::initializer_list<V>& list) {
    CopyFrom(list.begin(), list.end());
  }
  // Wraps `data` without copying; with `deletable` the last copy frees it
  // with delete[]. Without, `data` must outlive every copy.
  SArray(V* data, size_t size, bool deletable = false) {
    if (deletable) {
      reset(data, size, [](V* p) { delete[] p; });
    } else {
      reset(data, size, nullptr);
    }
  }
  // The bytes of `arr` seen as V (sizes must divide), shared.
  template <typename W>
  explicit SArray(const SArray<W>& arr) {
    *this = arr;
  }
  template <typename W>
  void operator=(const SArray<W>& arr) {
    const size_t bytes = arr.size() * sizeof(W);
    CHECK_EQ(bytes % sizeof(V), 0u)
        << "an SArray of " << arr.size() << " elements of " << sizeof(W)
        << " bytes is not a whole number of " << sizeof(V) << "-byte ones";
    buffer_ = arr.buffer_;
    size_ = bytes / sizeof(V);
  }

  // Petrel's array, shared both ways.
  SArray(const petrel::SArray<V>& arr)  // NOLINT(runtime/explicit)
      : buffer_(arr.buffer()), size_(arr.size()) {}
  operator petrel::SArray<V>() const {  // NOLINT(runtime/explicit)
    if (size_ == 0) return petrel::SArray<V>();
    return petrel::SArray<V>(buffer_.Slice(0, size_ * sizeof(V)));
  }

  // Wraps `data` (`size` elements); `del` frees it when the last copy goes
  // (null: never).
  void reset(V* data, size_t size, Deleter del) {
    std::shared_ptr<void> owner;
    if (del)
      owner = std::shared_ptr<void>(
          data, [del](void* p) { del(static_cast<V*>(p)); });
    buffer_ = petrel::Buffer::Wrap(reinterpret_cast<char*>(data),
                                   size * sizeof(V), std::move(owner));
    size_ = size;
  }

  // New elements are `val`; existing ones are kept.
  void resize(size_t size, V val = 0) {
    const size_t old = size_;
    if (size > capacity()) Grow(size);
    size_ = size;
    if (size > old) std::fill(data() + old, data() + size, val);
  }
  void reserve(size_t size) {
    if (size > capacity()) Grow(size);
  }
  void clear() { reset(nullptr, 0, nullptr); }
  void push_back(const V& val) {
    if (size_ == capacity()) Grow(std::max<size_t>(2 * size_, 8));
    data()[size_++] = val;
  }
  void pop_back() {
    if (size_ > 0) --size_;
  }
  void append(const SArray<V>& arr) {
    if (arr.empty()) return;
    const size_t old = size_;
    reserve(size_ + arr.size());
    std::memcpy(data() + old, arr.data(), arr.size() * sizeof(V));
    size_ = old + arr.size();
  }

  // Copies, into storage of its own.
  void CopyFrom(const V* data, size_t size) {
    buffer_ = petrel::Buffer::CopyOf(data, size * sizeof(V));
    size_ = size;
  }
  void CopyFrom(const SArray<V>& other) {
    if (this != &other) CopyFrom(other.data(), other.size());
  }
  template <typename ForwardIt>
  void CopyFrom(const ForwardIt& first, const ForwardIt& last) {
    const size_t n = static_cast<size_t>(std::distance(first, last));
    buffer_ = petrel::Buffer::Allocate(n * sizeof(V));
    size_ = n;
    std::copy(first, last, data());
  }

  // Elements [begin, end), sharing storage.
  SArray<V> segment(size_t begin, size_t end) const {
    CHECK_LE(begin, end);
    CHECK_LE(end, size_);
    SArray<V> s;
    s.buffer_ = buffer_.Slice(begin * sizeof(V), (end - begin) * sizeof(V));
    s.size_ = end - begin;
    return s;
  }

  V* data() const {
    return reinterpret_cast<V*>(const_cast<char*>(buffer_.data()));
  }
  size_t size() const { return size_; }
  size_t capacity() const { return buffer_.size() / sizeof(V); }
  bool empty() const { return size_ == 0; }
  V* begin() { return data(); }
  const V* begin() const { return data(); }
  V* end() { return data() + size_; }
  const V* end() const { return data() + size_; }
  V back() const {
    CHECK(!empty());
    return data()[size_ - 1];
  }
  V front() const {
    CHECK(!empty());
    return data()[0];
  }
  V& operator[](size_t i) { return data()[i]; }
  const V& operator[](size_t i) const { return data()[i]; }

 private:
  template <typename W>
  friend class SArray;

  // Moves the elements to new storage for `n`, with room to grow.
  void Grow(size_t n) {
    petrel::Buffer grown = petrel::Buffer::Allocate((n + n / 4) * sizeof(V));
    if (size_ > 0) std::memcpy(grown.mutable_data(), data(), size_ * sizeof(V));
    buffer_ = std::move(grown);
  }

  petrel::Buffer buffer_;
  size_t size_ = 0;
};

// Prints up to the first 10 elements, as PS-Lite's DebugStr does.
template <typename V>
std::ostream& operator<<(std::ostream& os, const SArray<V>& arr) {
  os << "[" << arr.size() << "]:";
  const size_t n = std::min<size_t>(arr.size(), 10);
  for (size_t i = 0; i < n; ++i) os << " " << arr[i];
  if (arr.size() > n) os << " ...";
  return os;
}

}  // namespace ps

#endif  // PETREL_PSLITE_INCLUDE_PS_SARRAY_H_
