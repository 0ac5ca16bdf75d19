// BlockArena: append-only memory for the encoded blocks of an in-memory
// parsed-example cache. Blocks are copied into large chunks of
// HugePageMemory (huge pages where the kernel allows), because a cache touches
// hundreds of MiB of new memory and a fault per 4 KiB page is slow, very much
// so in a virtual machine.
//
// Thread safety: not thread-safe. Ownership: owns its chunks; a view
// returned by Append stays valid until Clear or destruction.
#ifndef PETREL_WORKER_DATA_INTERNAL_BLOCK_ARENA_H_
#define PETREL_WORKER_DATA_INTERNAL_BLOCK_ARENA_H_

#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "base/huge_page_memory.h"

namespace petrel {
namespace internal {

class BlockArena {
 public:
  // Chunks of `chunk_bytes` (default 32 MiB: few mappings, and untouched
  // pages of a small cache cost nothing); a bigger block gets its own.
  explicit BlockArena(size_t chunk_bytes = size_t{32} << 20)
      : chunk_bytes_(chunk_bytes) {}
  BlockArena(const BlockArena&) = delete;
  BlockArena& operator=(const BlockArena&) = delete;
  ~BlockArena();

  // Copies `bytes` into the arena and returns the copy. ResourceExhausted
  // when the memory cannot be mapped.
  absl::StatusOr<absl::string_view> Append(absl::string_view bytes);
  // Frees every chunk (invalidating every view).
  void Clear();

 private:
  struct Chunk {
    HugePageMemory memory;
    size_t used;
  };
  const size_t chunk_bytes_;
  std::vector<Chunk> chunks_;
};

}  // namespace internal
}  // namespace petrel

#endif  // PETREL_WORKER_DATA_INTERNAL_BLOCK_ARENA_H_
