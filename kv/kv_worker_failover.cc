// KVWorker: requests to a server that died continue on the replica that
// took over its ranges (docs/failures.md, "Replicated servers").
#include "kv/kv_worker.h"

namespace petrel {

template <typename Val>
int KVWorker<Val>::Reroute(Message* msg, int successor) {
  // A clock goes to every live server by itself: the successor has its own.
  if (msg->meta.clock_advance() && !msg->meta.push() && !msg->meta.pull()) {
    return 0;
  }
  // The first server it was sent to and its number there: the successor
  // holds the dead server's duplicate-detection state for it (forwarded
  // pushes), so a push the dead one applied is acknowledged, not applied
  // again. A message moved before keeps its first origin.
  if (msg->meta.origin_node() == 0) {
    msg->meta.set_origin_node(msg->meta.recipient());
    msg->meta.set_origin_seq(msg->meta.seq());
  }
  return successor;
}

template <typename Val>
void KVWorker<Val>::OnRerouted(int timestamp, uint64_t from, uint64_t to) {
  absl::MutexLock lock(&mu_);
  auto it = pulls_.find(timestamp);
  if (it == pulls_.end()) return;  // a push
  auto slice = it->second->slice_of_part.find(from);
  if (slice == it->second->slice_of_part.end()) return;
  const size_t index = slice->second;
  it->second->slice_of_part.erase(slice);
  it->second->slice_of_part[to] = index;
}

template class KVWorker<float>;
template class KVWorker<double>;
template class KVWorker<int32_t>;
template class KVWorker<int64_t>;

}  // namespace petrel
