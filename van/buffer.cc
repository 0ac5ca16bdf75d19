#include "van/buffer.h"

namespace petrel {

Buffer Buffer::Allocate(size_t size) {
  if (size == 0) return Buffer();
  // operator new[] is aligned for every scalar type; no zero fill, since the
  // caller overwrites the bytes and first-touch of large buffers is costly.
  std::shared_ptr<char[]> storage(new char[size]);
  char* data = storage.get();
  return Buffer(data, size, std::shared_ptr<void>(storage, data));
}

Buffer Buffer::CopyOf(const void* data, size_t size) {
  Buffer b = Allocate(size);
  if (size > 0) std::memcpy(b.mutable_data(), data, size);
  return b;
}

}  // namespace petrel
