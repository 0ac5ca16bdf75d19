#include "worker/internal/block_arena.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <sys/mman.h>

#include "absl/strings/str_cat.h"

namespace petrel {
namespace internal {
BlockArena::~BlockArena() { Clear(); }

void BlockArena::Clear() {
  for (const Chunk& chunk : chunks_) munmap(chunk.data, chunk.size);
  chunks_.clear();
}

absl::StatusOr<absl::string_view> BlockArena::Append(absl::string_view bytes) {
  if (chunks_.empty() ||
      chunks_.back().size - chunks_.back().used < bytes.size()) {
    const size_t size = std::max(chunk_bytes_, bytes.size());
    void* data = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (data == MAP_FAILED) {
      return absl::ResourceExhaustedError(
          absl::StrCat("cannot map ", size, " bytes: ", std::strerror(errno)));
    }
#ifdef MADV_HUGEPAGE
    madvise(data, size, MADV_HUGEPAGE);  // a hint; failure is harmless
#endif
    chunks_.push_back({static_cast<char*>(data), size, 0});
  }
  Chunk& chunk = chunks_.back();
  char* copy = chunk.data + chunk.used;
  if (!bytes.empty()) std::memcpy(copy, bytes.data(), bytes.size());
  chunk.used += bytes.size();
  return absl::string_view(copy, bytes.size());
}

}  // namespace internal
}  // namespace petrel
