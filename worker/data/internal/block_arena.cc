#include "worker/data/internal/block_arena.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace petrel {
namespace internal {

BlockArena::~BlockArena() = default;

void BlockArena::Clear() { chunks_.clear(); }

absl::StatusOr<absl::string_view> BlockArena::Append(absl::string_view bytes) {
  if (chunks_.empty() ||
      chunks_.back().memory.size() - chunks_.back().used < bytes.size()) {
    const size_t size = std::max(chunk_bytes_, bytes.size());
    absl::StatusOr<HugePageMemory> memory =
        HugePageMemory::Map(size, /*advise=*/true);
    if (!memory.ok()) {
      return absl::ResourceExhaustedError(
          absl::StrCat("cache block arena: ", memory.status().message()));
    }
    chunks_.push_back({*std::move(memory), 0});
  }
  Chunk& chunk = chunks_.back();
  char* copy = static_cast<char*>(chunk.memory.data()) + chunk.used;
  if (!bytes.empty()) std::memcpy(copy, bytes.data(), bytes.size());
  chunk.used += bytes.size();
  return absl::string_view(copy, bytes.size());
}

}  // namespace internal
}  // namespace petrel
