#include "job/recovery_protocol.h"

namespace petrel {

std::vector<pb::DataPiece> SplitByEpoch(const pb::DataPiece& piece,
                                        int64_t* next_id) {
  std::vector<pb::DataPiece> out;
  for (int e = piece.epoch(); e < piece.end_epoch(); ++e) {
    pb::DataPiece p;
    p.set_id((*next_id)++);
    p.set_shard(piece.shard());
    p.set_epoch(e);
    p.set_examples_in_epoch(e == piece.epoch() ? piece.examples_in_epoch() : 0);
    p.set_end_epoch(e + 1);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace petrel
