// KVWorker: requests to a server that died continue on the replica that
// took over its ranges (docs/failures.md, "Replicated servers").
#include <vector>

#include "kv/kv_slicer.h"
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

template <typename Val>
std::vector<Message> KVWorker<Val>::SplitMovedPull(const Message& msg,
                                                   const KeyRangeMap& ranges) {
  // A pull of keys, nothing else: a push goes whole to the successor, whose
  // duplicate detection and forwards decide (docs/failures.md).
  if (msg.meta.push() || !msg.meta.pull() || msg.data.size() != 1) return {};
  KVSlice whole;
  whole.keys = SArray<Key>(msg.data[0]);
  if (whole.keys.empty()) return {};
  std::vector<Message> pieces;
  for (const KVSlice& s : CutPullSlice(whole, ranges)) {
    Message piece;
    piece.meta = msg.meta;
    piece.meta.clear_data_types();  // AddData lists the one frame
    piece.meta.set_recipient(ServerRankToId(s.server_rank));
    piece.AddData(s.keys);
    pieces.push_back(std::move(piece));
  }
  return pieces;
}

template <typename Val>
void KVWorker<Val>::OnSplit(int timestamp, uint64_t from,
                            const std::vector<uint64_t>& to,
                            const std::vector<Message>& pieces) {
  absl::MutexLock lock(&mu_);
  auto it = pulls_.find(timestamp);
  if (it == pulls_.end()) return;
  PullState& state = *it->second;
  auto slice = state.slice_of_part.find(from);
  if (slice == state.slice_of_part.end()) return;
  const size_t index = slice->second;
  state.slice_of_part.erase(slice);
  state.eager = false;  // the slices change: Complete merges the parts
  const KVSlice whole = state.slices[index];
  for (size_t p = 0; p < pieces.size(); ++p) {
    absl::StatusOr<KVSlice> s =
        SubSliceOf(whole, SArray<Key>(pieces[p].data[0]),
                   IdToRank(pieces[p].meta.recipient()));
    if (!s.ok()) {  // SplitMovedPull cut the slice's own message: no way
      RecordError(timestamp, s.status());
      return;
    }
    size_t at = index;  // the first piece takes the slice's place
    if (p > 0) {
      at = state.slices.size();
      state.slices.emplace_back();
      state.parts.emplace_back();
    }
    state.slices[at] = *std::move(s);
    state.slice_of_part[to[p]] = at;
  }
}

template class KVWorker<float>;
template class KVWorker<double>;
template class KVWorker<int32_t>;
template class KVWorker<int64_t>;

}  // namespace petrel
