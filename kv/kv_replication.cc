#include "kv/kv_replication.h"

namespace petrel {

bool ReplicaDedup::SeenOrRecord(int sender, int customer, int origin,
                                uint64_t seq, bool in_order) {
  Stream& s = streams_[std::make_tuple(sender, customer, origin)];
  if (seq <= s.watermark || s.above.contains(seq)) return true;
  if (in_order) {
    s.watermark = seq;
    // Entries below the watermark are covered by it now.
    absl::erase_if(s.above, [seq](uint64_t v) { return v <= seq; });
  } else {
    s.above.insert(seq);
  }
  return false;
}

Message ForwardCopy(const Message& request, int self, uint64_t map_version) {
  Message fwd;
  fwd.meta = request.meta;
  fwd.data = request.data;
  fwd.meta.set_pull(false);
  fwd.meta.set_forwarded(true);
  fwd.meta.set_map_version(map_version);
  fwd.meta.set_origin_sender(request.meta.sender());
  fwd.meta.set_origin_customer(request.meta.customer_id());
  if (request.meta.origin_node() == 0) {
    fwd.meta.set_origin_node(self);
    fwd.meta.set_origin_seq(request.meta.seq());
    fwd.meta.set_origin_in_order(true);
  } else {
    fwd.meta.set_origin_in_order(false);
  }
  fwd.meta.clear_status_code();
  fwd.meta.clear_status_message();
  return fwd;
}

}  // namespace petrel
