#include "job/recovery_protocol.h"

#include "gtest/gtest.h"

namespace petrel {
namespace {

pb::DataPiece Piece(int epoch, int64_t in_epoch, int end) {
  pb::DataPiece p;
  p.set_id(2);
  p.set_shard(2);
  p.set_epoch(epoch);
  p.set_examples_in_epoch(in_epoch);
  p.set_end_epoch(end);
  p.set_examples_trained(99);
  return p;
}

TEST(SplitByEpochTest, OnePiecePerEpochLeft) {
  int64_t next = 3;
  std::vector<pb::DataPiece> out = SplitByEpoch(Piece(1, 500, 4), &next);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(next, 6);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(out[i].id(), 3 + i);
    EXPECT_EQ(out[i].shard(), 2);
    EXPECT_EQ(out[i].epoch(), 1 + i);
    EXPECT_EQ(out[i].end_epoch(), 2 + i);
    EXPECT_EQ(out[i].examples_in_epoch(), i == 0 ? 500 : 0);
    EXPECT_EQ(out[i].examples_trained(), 0);
  }
}

TEST(SplitByEpochTest, NothingLeftOfADonePiece) {
  int64_t next = 3;
  EXPECT_TRUE(SplitByEpoch(Piece(4, 0, 4), &next).empty());
  EXPECT_EQ(next, 3);
}

}  // namespace
}  // namespace petrel
