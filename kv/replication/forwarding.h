// Pieces of KVServer's replication (docs/failures.md, "Replicated
// servers"): the duplicate-detection state a backup keeps for the requests
// its primary forwarded, and the forward message itself.
//
// Thread safety: ReplicaDedup is thread-compatible (KVServer uses it from
// its handler only); the functions are stateless.
#ifndef PETREL_KV_REPLICATION_FORWARDING_H_
#define PETREL_KV_REPLICATION_FORWARDING_H_

#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

#include "cluster/key_range_map.h"
#include "cluster/replica_map.h"
#include "van/buffer.h"
#include "van/message.h"

namespace petrel {

// Which requests of one stream (original sender, its customer, the server
// it first went to) a server applied, by their sequence number there. A
// primary handles its requests in sequence order and forwards its pushes
// in that order, so a forward of an in-order request (origin_in_order)
// says that every earlier push of the stream was forwarded before it, whole:
// a watermark. Requests resent after a failover arrive in any order and are
// remembered one by one above the watermark (as many as were in flight),
// each with the key ranges it held: a worker cuts a moved push by the map
// (one piece per new primary, docs/failures.md), so one number may come as
// several pieces, each of other ranges, and a piece is seen only when every
// range it holds was applied under that number before.
class ReplicaDedup {
 public:
  // Range indices (in the key-range map), ascending, without repeats.
  using Ranges = std::vector<uint32_t>;

  // Returns true when request `seq` of the stream was seen before (for an
  // out-of-order one with `ranges`: each of them under `seq`); otherwise
  // records it and returns false. An in-order request, or one without
  // `ranges` (null), counts as whole: every range. When it returns false
  // and `fresh` is given, `*fresh` receives the ranges of `ranges` not seen
  // before (all of them but in a partial overlap, which a piece of a piece
  // arriving after the whole could cause); empty for a whole request.
  bool SeenOrRecord(int sender, int customer, int origin, uint64_t seq,
                    bool in_order, const Ranges* ranges = nullptr,
                    Ranges* fresh = nullptr);
  size_t streams() const { return streams_.size(); }

  // The whole state as bytes (for a replacement's copy), and merging such
  // bytes in: each stream's watermark becomes the larger of the two, and
  // the numbers above it are united (their ranges too). Import:
  // InvalidArgument, with nothing merged, for bytes that do not parse.
  std::string Export() const;
  absl::Status Import(absl::string_view bytes);
  // Only the streams whose origin server (node id) `keep` accepts. A range
  // copy takes the source's own streams and those of dead servers: a
  // stream of another live primary, which the source holds as its backup,
  // describes rows copied from that primary, whose later forwards must not
  // read as seen (docs/failures.md, "Elastic servers").
  absl::Status Import(absl::string_view bytes,
                      const std::function<bool(int origin)>& keep);

 private:
  // A number seen above the watermark: whole, or the ranges applied.
  struct Seen {
    bool whole = false;
    Ranges ranges;
  };
  struct Stream {
    uint64_t watermark = 0;  // every in-order request <= this was seen
    absl::flat_hash_map<uint64_t, Seen> above;
  };
  absl::flat_hash_map<std::tuple<int, int, int>, Stream> streams_;
};

// The key ranges (indices in `ranges`, ascending, without repeats) that
// `keys` fall in: what a moved push's piece holds (ReplicaDedup).
ReplicaDedup::Ranges RangesOfKeys(const KeyRangeMap& ranges,
                                  const SArray<uint64_t>& keys);

// The copy of push `request` (received by this server, node `self`) that
// a primary forwards to a backup: a push only (a push-pull's pull stays
// with the primary), the same data frames (shared, not copied), and the
// request's origin: its sender, customer and sequence number, and the
// server it first went to (this one, or the one named in the request when
// it was resent after a failover). Addressing fields (recipient, timestamp,
// seq) are left for the caller's Customer.
Message ForwardCopy(const Message& request, int self, uint64_t map_version);

// The duplicate-detection streams a range copy from server node `source`
// brings along (ReplicaDedup::Import): its own and those of servers dead in
// `map`.
std::function<bool(int origin)> CopiedStreams(int source,
                                              const ReplicaMap& map);

}  // namespace petrel

#endif  // PETREL_KV_REPLICATION_FORWARDING_H_
