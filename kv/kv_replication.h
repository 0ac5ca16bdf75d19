// Pieces of KVServer's replication (docs/failures.md, "Replicated
// servers"): the duplicate-detection state a backup keeps for the requests
// its primary forwarded, and the forward message itself.
//
// Thread safety: ReplicaDedup is thread-compatible (KVServer uses it from
// its handler only); the functions are stateless.
#ifndef PETREL_KV_KV_REPLICATION_H_
#define PETREL_KV_KV_REPLICATION_H_

#include <cstdint>
#include <functional>
#include <string>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

#include "van/message.h"
#include "van/replica_map.h"

namespace petrel {

// Which requests of one stream (original sender, its customer, the server
// it first went to) a server applied, by their sequence number there. A
// primary handles its requests in sequence order and forwards its pushes
// in that order, so a forward of an in-order request (origin_in_order)
// says that every earlier push of the stream was forwarded before it: a
// watermark. Requests resent after a failover arrive in any order and are
// remembered one by one above the watermark (as many as were in flight).
class ReplicaDedup {
 public:
  // Returns true when request `seq` of the stream was seen before;
  // otherwise records it and returns false.
  bool SeenOrRecord(int sender, int customer, int origin, uint64_t seq,
                    bool in_order);
  size_t streams() const { return streams_.size(); }

  // The whole state as bytes (for a replacement's copy), and merging such
  // bytes in: each stream's watermark becomes the larger of the two, and
  // the numbers above it are united. Import: InvalidArgument, with nothing
  // merged, for bytes that do not parse.
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
  struct Stream {
    uint64_t watermark = 0;  // every in-order request <= this was seen
    absl::flat_hash_set<uint64_t> above;
  };
  absl::flat_hash_map<std::tuple<int, int, int>, Stream> streams_;
};

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

#endif  // PETREL_KV_KV_REPLICATION_H_
