#include "python/py_arrays.h"

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"

namespace petrel {
namespace py = pybind11;
namespace {

struct KindInfo {
  size_t size;
  const char* codes;  // struct-module format codes accepted
  const char* name;
};

KindInfo InfoOf(ElementKind kind) {
  switch (kind) {
    case ElementKind::kFloat32:
      return {4, "f", "float32"};
    case ElementKind::kUint64:
      return {8, "qQlLnN", "uint64 (or int64)"};
    case ElementKind::kInt32:
      return {4, "iIlL", "int32"};
    case ElementKind::kFloat64:
      return {8, "d", "float64"};
    case ElementKind::kInt64:
      return {8, "qln", "int64"};
  }
  return {0, "", ""};
}

// The format's type code without a native or little-endian prefix; 0 for
// big-endian or compound formats.
char TypeCode(const char* format) {
  if (format == nullptr) return 'B';
  std::string f(format);
  if (!f.empty() && (f[0] == '@' || f[0] == '=' || f[0] == '<')) f.erase(0, 1);
  return f.size() == 1 ? f[0] : 0;
}

}  // namespace

ReleaseQueue::~ReleaseQueue() = default;

void ReleaseQueue::Add(Py_buffer* view) {
  absl::MutexLock lock(&mu_);
  pending_.push_back(view);
}

void ReleaseQueue::Drain() {
  std::vector<Py_buffer*> views;
  {
    absl::MutexLock lock(&mu_);
    views.swap(pending_);
  }
  for (Py_buffer* view : views) {
    PyBuffer_Release(view);
    delete view;
  }
}

Buffer ShareBuffer(py::handle obj, ElementKind kind, bool writable,
                   const char* what,
                   const std::shared_ptr<ReleaseQueue>& queue) {
  const KindInfo info = InfoOf(kind);
  auto view = std::make_unique<Py_buffer>();
  int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
  if (writable) flags |= PyBUF_WRITABLE;
  if (PyObject_GetBuffer(obj.ptr(), view.get(), flags) != 0) {
    PyErr_Clear();
    throw py::type_error(absl::StrCat(
        what, " must be a C-contiguous", writable ? ", writable" : "", " ",
        info.name, " array (a NumPy array or a CPU tensor), not ",
        std::string(py::str(obj.get_type().attr("__name__")))));
  }
  const char code = TypeCode(view->format);
  if (static_cast<size_t>(view->itemsize) != info.size || code == 0 ||
      std::string(info.codes).find(code) == std::string::npos) {
    const std::string format = view->format == nullptr ? "B" : view->format;
    const Py_ssize_t itemsize = view->itemsize;
    PyBuffer_Release(view.get());
    throw py::type_error(absl::StrCat(what, " must hold ", info.name,
                                      " elements, not format '", format,
                                      "' of ", itemsize, " bytes"));
  }
  char* data = static_cast<char*>(view->buf);
  const size_t bytes = static_cast<size_t>(view->len);
  if (reinterpret_cast<uintptr_t>(data) % info.size != 0) {
    // Misaligned (a view at an odd offset): the one case that copies.
    Buffer copy = Buffer::CopyOf(data, bytes);
    PyBuffer_Release(view.get());
    return copy;
  }
  Py_buffer* raw = view.release();
  std::shared_ptr<void> owner(
      raw, [queue](void* v) { queue->Add(static_cast<Py_buffer*>(v)); });
  return Buffer::Wrap(data, bytes, std::move(owner));
}

}  // namespace petrel
