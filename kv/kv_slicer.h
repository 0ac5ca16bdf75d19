// Slicing and merging of key-value requests: splits a request's keys (in any
// order, duplicates allowed) and their values by owning server, and puts the
// servers' pull answers back into the caller's order. Type-erased over the
// value element size, so one copy of this code serves every KVWorker<Val>.
//
// Thread safety: stateless functions.
#ifndef PETREL_KV_KV_SLICER_H_
#define PETREL_KV_KV_SLICER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

#include "cluster/key_range_map.h"
#include "van/buffer.h"

namespace petrel {

using Key = uint64_t;

// The part of a request for one server.
struct KVSlice {
  int server_rank = 0;
  SArray<Key> keys;
  Buffer vals;       // values of `keys`, in their order (may be empty)
  SArray<int> lens;  // per-key value counts, when the request had lens
  // Index in the caller's keys of each of `keys`, ascending; empty when the
  // slice is the caller's keys in their own order, from first_position on
  // (all of them, or a part: SplitPullSlices).
  SArray<uint32_t> positions;
  uint32_t first_position = 0;
  // A part holding values [value_offset, value_offset + n) of its single
  // key's value_total values (SplitPushSlices with split_keys); 0 and 0
  // otherwise.
  int64_t value_offset = 0;
  int64_t value_total = 0;
};

// One server's answer to a pull slice: the values of the slice's keys, in
// their order (the answer does not repeat the keys).
struct PulledPart {
  Buffer vals;
  SArray<int> lens;  // empty: every key has vals / (slice's keys) values
};

// Splits `keys` with their `vals` (elements of `elem_size` bytes; empty for
// a pull) and optional per-key `lens` by the server owning each key. When
// every key belongs to one server the caller's buffers are reused without
// copying (with one server in the map, without looking at the keys).
// Otherwise one pass over the keys writes each key, its position and its
// values straight into its server's slice: no allocation per key.
// InvalidArgument when values and keys do not agree.
absl::StatusOr<std::vector<KVSlice>> SliceRequest(const KeyRangeMap& ranges,
                                                  const SArray<Key>& keys,
                                                  const Buffer& vals,
                                                  size_t elem_size,
                                                  const SArray<int>& lens);

// Splits every slice of a push whose values exceed `max_bytes` into
// consecutive parts at key boundaries, each at most `max_bytes` unless one
// key's values alone are larger: that key is a part of its own or, with
// `split_keys`, several parts of at most `max_bytes` of its values each
// (value_offset, value_total set). Parts share the slice's buffers without
// copying and keep its server; they have no positions (a push needs none).
// `max_bytes` 0 splits nothing.
std::vector<KVSlice> SplitPushSlices(std::vector<KVSlice> slices,
                                     size_t elem_size, size_t max_bytes,
                                     bool split_keys = false);

// Splits every slice of a pull with more than `max_keys` keys into
// consecutive parts of at most `max_keys` keys (sharing the slice's
// buffers, keeping its server and, through positions or first_position,
// where each key's values go), so that a server looks up a part while the
// next one's keys and the last one's answer travel. 0 splits nothing.
std::vector<KVSlice> SplitPullSlices(std::vector<KVSlice> slices,
                                     size_t max_keys);
// A failover's cut of a pull slice whose server died
// (KVWorker::SplitMovedPull): its keys grouped by their owner in `ranges`,
// one slice per owner in the order owners first appear, each key keeping
// its order and its position in the caller's keys.
std::vector<KVSlice> CutPullSlice(const KVSlice& whole,
                                  const KeyRangeMap& ranges);
// The slice of server `rank` holding `keys`, a subsequence of `whole`'s
// keys in their order, with the positions `whole` gave them
// (KVWorker::OnSplit). InvalidArgument when `keys` is not one.
absl::StatusOr<KVSlice> SubSliceOf(const KVSlice& whole,
                                   const SArray<Key>& keys, int rank);
// Checks that `part` can answer `slice` (elements of `elem_size` bytes):
// without lens its values divide evenly over the slice's keys (none for a
// slice without keys); with lens there is one non-negative length per key,
// summing to the value count. InvalidArgument naming server_rank otherwise.
absl::Status CheckPulledPart(const KVSlice& slice, const PulledPart& part,
                             size_t elem_size);

// Copies `vals`, the answer to `slice` with rows of `row_bytes` bytes
// each (checked by CheckPulledPart), to where its keys go in the caller's
// order: `dst` holds row_bytes per key of the caller's request.
void PlacePulledPart(const KVSlice& slice, const char* vals, size_t row_bytes,
                     char* dst);

// Merges the answers to `slices` (parts[i] answers slices[i], several
// slices may be parts for one server) into the caller's order. Writes into
// `*vals` when it already has the right size, else replaces it (without copying
// when a single slice answered the whole request). `*lens`, when not null,
// receives per-key counts; without it all keys must have the same count.
// InvalidArgument when a server's answer does not match what was asked
// (CheckPulledPart). When every answer has the same values per key (the common
// case) each key's values are copied once, straight to their place, with no
// per-key bookkeeping.
absl::Status MergePulled(const std::vector<KVSlice>& slices,
                         const std::vector<PulledPart>& parts, size_t num_keys,
                         size_t elem_size, Buffer* vals, SArray<int>* lens);

}  // namespace petrel

#endif  // PETREL_KV_KV_SLICER_H_
