// The parts of a range copy (docs/failures.md, "Replacement servers"): a
// copy larger than one message (--max_message_bytes) goes as several, each
// a run of whole entries (key, its lens[i] values) in order.
#ifndef PETREL_KV_REPLICATION_COPY_PARTS_H_
#define PETREL_KV_REPLICATION_COPY_PARTS_H_

#include <cstdint>
#include <vector>

#include "kv/kv_codec.h"

namespace petrel {

// Cuts `rows` (keys, vals, lens with one length per key) into runs of
// consecutive entries whose data frames (keys, values and lens) hold at
// most `max_bytes` bytes each; an entry larger than that alone goes alone.
// The parts share `rows`' memory. Rows without entries give one empty part,
// so that a copy always has one; rows
// without one length per key, one part.
template <typename Val>
std::vector<KVPairs<Val>> SplitCopy(const KVPairs<Val>& rows,
                                    int64_t max_bytes);

}  // namespace petrel

#endif  // PETREL_KV_REPLICATION_COPY_PARTS_H_
