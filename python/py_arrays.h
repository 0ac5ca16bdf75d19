// The Python side of Petrel's arrays: SArrays that share the memory of
// objects supporting the buffer protocol (NumPy arrays; the petrel package
// turns torch CPU tensors into NumPy views first), and NumPy arrays that
// share the memory of SArrays. Nothing is copied unless the caller's
// memory is misaligned for its type.
//
// A wrapped Python buffer must be released with the GIL held, but the last
// reference to an SArray may drop on any thread (the van thread, ZeroMQ's
// I/O thread once a message is on the wire). So the deleter only queues
// the buffer in a ReleaseQueue, which Python-facing calls drain while they
// hold the GIL.
//
// Thread safety: ReleaseQueue::Add is thread-safe; Drain and the
// conversions require the GIL.
#ifndef PETREL_PYTHON_PY_ARRAYS_H_
#define PETREL_PYTHON_PY_ARRAYS_H_

#include <memory>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "absl/synchronization/mutex.h"

#include "van/buffer.h"

namespace petrel {

class ReleaseQueue {
 public:
  ReleaseQueue() = default;
  ~ReleaseQueue();  // leaks what was never drained (no GIL here)
  ReleaseQueue(const ReleaseQueue&) = delete;
  ReleaseQueue& operator=(const ReleaseQueue&) = delete;

  // Takes ownership of `view` (from PyObject_GetBuffer). Any thread.
  void Add(Py_buffer* view);
  // Releases every queued buffer. REQUIRES: the GIL.
  void Drain();

 private:
  absl::Mutex mu_;
  std::vector<Py_buffer*> pending_ ABSL_GUARDED_BY(mu_);
};

// The element types an array may hold.
enum class ElementKind { kFloat32, kFloat64, kUint64, kInt32, kInt64 };

// Shares the memory of `obj` (C-contiguous, `kind`-typed, any shape) as a
// Buffer; `writable` asks for memory the caller may write (a pull's
// output). Throws pybind11 exceptions (TypeError, ValueError) on arrays of
// the wrong type or layout. The buffer is released through `queue` once
// the last copy of the Buffer is gone.
Buffer ShareBuffer(pybind11::handle obj, ElementKind kind, bool writable,
                   const char* what,
                   const std::shared_ptr<ReleaseQueue>& queue);

template <typename T>
SArray<T> ShareArray(pybind11::handle obj, ElementKind kind, bool writable,
                     const char* what,
                     const std::shared_ptr<ReleaseQueue>& queue) {
  return SArray<T>(ShareBuffer(obj, kind, writable, what, queue));
}

// A NumPy array of `shape` over `array`'s memory, keeping it alive.
// REQUIRES: the product of `shape` equals array.size().
template <typename T>
pybind11::array_t<T> ToNumpy(SArray<T> array,
                             const std::vector<pybind11::ssize_t>& shape) {
  auto* holder = new SArray<T>(std::move(array));
  pybind11::capsule owner(holder,
                          [](void* p) { delete static_cast<SArray<T>*>(p); });
  return pybind11::array_t<T>(shape, holder->data(), owner);
}

}  // namespace petrel

#endif  // PETREL_PYTHON_PY_ARRAYS_H_
