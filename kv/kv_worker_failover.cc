// KVWorker: requests to a server that died continue on the replica that
// took over its ranges (docs/failures.md, "Replicated servers").
#include <vector>

#include "absl/status/statusor.h"

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
std::vector<Message> KVWorker<Val>::SplitMoved(const Message& msg,
                                               const KeyRangeMap& ranges) {
  // Pushes and pulls of keys; a clock goes by Reroute.
  if ((!msg.meta.push() && !msg.meta.pull()) || msg.data.empty()) return {};
  KVSlice whole;
  whole.keys = SArray<Key>(msg.data[0]);
  if (whole.keys.empty()) return {};
  // Named by its origin as Reroute names a message moved whole.
  pb::Meta meta = msg.meta;
  if (meta.origin_node() == 0) {
    meta.set_origin_node(meta.recipient());
    meta.set_origin_seq(meta.seq());
  }
  auto piece_of = [&meta](int rank) {
    Message piece;
    piece.meta = meta;
    piece.meta.clear_data_types();  // AddData lists the frames
    piece.meta.set_recipient(ServerRankToId(rank));
    return piece;
  };
  std::vector<Message> pieces;
  if (!msg.meta.push()) {
    if (msg.data.size() != 1) return {};
    for (const KVSlice& s : CutPullSlice(whole, ranges)) {
      Message piece = piece_of(s.server_rank);
      piece.AddData(s.keys);
      pieces.push_back(std::move(piece));
    }
    return pieces;
  }
  // A push (or push-pull): to the new primary of each of its keys' ranges,
  // which applies it and forwards it to that range's backups. Each piece
  // keeps the origin, and the servers tell its pieces apart by the key
  // ranges they hold (ReplicaDedup). A slice of one key's values stays
  // whole.
  if (msg.meta.value_total() > 0 || msg.data.size() < 2) {
    Message piece = msg;
    piece.meta = meta;
    piece.meta.set_recipient(ServerRankToId(ranges.OwnerOf(whole.keys[0])));
    pieces.push_back(std::move(piece));
    return pieces;
  }
  const SArray<int> lens =
      msg.data.size() >= 3 ? SArray<int>(msg.data[2]) : SArray<int>();
  absl::StatusOr<std::vector<KVSlice>> slices =
      SliceRequest(ranges, whole.keys, msg.data[1], sizeof(Val), lens);
  if (!slices.ok()) return {};  // sent so: cannot be; goes whole
  for (const KVSlice& s : *slices) {
    Message piece = piece_of(s.server_rank);
    piece.AddData(s.keys);
    piece.AddData(SArray<Val>(s.vals));
    if (!lens.empty()) piece.AddData(s.lens);
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
