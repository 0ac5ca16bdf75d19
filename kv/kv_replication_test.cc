#include "kv/kv_replication.h"

#include "gtest/gtest.h"

namespace petrel {
namespace {

// A range copy from server node 10 brings its own streams and those of
// dead servers, not those of another live primary it backs: that
// primary's later forwards to the copy's receiver must not read as seen.
TEST(ReplicaDedupTest, ARangeCopyKeepsTheSourcesOwnAndDeadServersStreams) {
  ReplicaMap map =
      ReplicaMap::Initial(KeyRangeMap::Uniform(3, 4).value(), 2).value();
  map = map.WithoutServer(2).value();  // node 12 dead
  ReplicaDedup source;
  EXPECT_FALSE(source.SeenOrRecord(9, 0, 10, 50, /*in_order=*/true));  // own
  EXPECT_FALSE(source.SeenOrRecord(9, 0, 8, 40, true));   // backs node 8
  EXPECT_FALSE(source.SeenOrRecord(9, 0, 12, 30, true));  // dead node 12
  ReplicaDedup copy;
  ASSERT_TRUE(copy.Import(source.Export(), CopiedStreams(10, map)).ok());
  EXPECT_TRUE(copy.SeenOrRecord(9, 0, 10, 50, false));
  EXPECT_TRUE(copy.SeenOrRecord(9, 0, 12, 30, false));
  EXPECT_FALSE(copy.SeenOrRecord(9, 0, 8, 40, false));
  EXPECT_EQ(copy.streams(), 3u);
  // Bytes that do not parse are refused with a filter too.
  EXPECT_FALSE(copy.Import("abc", CopiedStreams(10, map)).ok());
}

}  // namespace
}  // namespace petrel
