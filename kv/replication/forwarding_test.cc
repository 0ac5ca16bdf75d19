#include "kv/replication/forwarding.h"

#include <string>
#include <vector>

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

using Ranges = ReplicaDedup::Ranges;

// A push moved after a failover is cut into pieces by the map, one per new
// primary, all under the push's number in its origin stream: a server
// applies each piece whose key ranges it has not applied under that
// number, and only those (docs/failures.md, "Replicated servers").
TEST(ReplicaDedupTest, PiecesOfOneMovedPushAreAppliedOncePerKeyRange) {
  ReplicaDedup d;
  const Ranges a = {2, 5}, b = {7}, a2 = {2}, both = {5, 7};
  Ranges fresh;
  // Primary of piece a, then backup of piece b (forwarded by b's primary).
  EXPECT_FALSE(d.SeenOrRecord(9, 0, 14, 40, false, &a, &fresh));
  EXPECT_EQ(fresh, a);
  EXPECT_FALSE(d.SeenOrRecord(9, 0, 14, 40, false, &b, &fresh));
  EXPECT_EQ(fresh, b);
  // Resent again after a second failover (cut finer): seen.
  EXPECT_TRUE(d.SeenOrRecord(9, 0, 14, 40, false, &a2, &fresh));
  EXPECT_TRUE(d.SeenOrRecord(9, 0, 14, 40, false, &both, &fresh));
  EXPECT_TRUE(d.SeenOrRecord(9, 0, 14, 40, false, &b, &fresh));
  // A piece overlapping what was applied: only the new ranges.
  const Ranges wider = {5, 9};
  EXPECT_FALSE(d.SeenOrRecord(9, 0, 14, 40, false, &wider, &fresh));
  EXPECT_EQ(fresh, Ranges({9}));
  // Another number, customer or origin is another push.
  EXPECT_FALSE(d.SeenOrRecord(9, 0, 14, 41, false, &a, &fresh));
  EXPECT_FALSE(d.SeenOrRecord(9, 1, 14, 40, false, &a, &fresh));
  EXPECT_FALSE(d.SeenOrRecord(9, 0, 16, 40, false, &a, &fresh));
}

// A push the dead primary forwarded (in order: whole, under the watermark)
// is not applied again as a piece; nor is one resent whole before.
TEST(ReplicaDedupTest, APieceOfAPushForwardedWholeIsSeen) {
  ReplicaDedup d;
  EXPECT_FALSE(d.SeenOrRecord(9, 0, 14, 40, /*in_order=*/true));
  const Ranges a = {2, 5};
  EXPECT_TRUE(d.SeenOrRecord(9, 0, 14, 40, false, &a));
  EXPECT_TRUE(d.SeenOrRecord(9, 0, 14, 12, false, &a));
  EXPECT_FALSE(d.SeenOrRecord(9, 0, 14, 50, false));  // whole, no ranges
  EXPECT_TRUE(d.SeenOrRecord(9, 0, 14, 50, false, &a));
  // An in-order forward seen as a piece before is seen (not re-applied).
  EXPECT_FALSE(d.SeenOrRecord(9, 0, 14, 60, false, &a));
  EXPECT_TRUE(d.SeenOrRecord(9, 0, 14, 60, true));
}

TEST(ReplicaDedupTest, ExportImportKeepsEachNumbersRanges) {
  ReplicaDedup a;
  const Ranges r1 = {1, 4}, r2 = {6}, r3 = {4, 6};
  EXPECT_FALSE(a.SeenOrRecord(9, 0, 14, 7, false, &r1));
  EXPECT_FALSE(a.SeenOrRecord(9, 0, 14, 8, false));  // whole
  ReplicaDedup b;
  EXPECT_FALSE(b.SeenOrRecord(9, 0, 14, 7, false, &r2));
  ASSERT_TRUE(b.Import(a.Export()).ok());
  EXPECT_TRUE(b.SeenOrRecord(9, 0, 14, 7, false, &r1));
  EXPECT_TRUE(b.SeenOrRecord(9, 0, 14, 7, false, &r3));  // united
  EXPECT_TRUE(b.SeenOrRecord(9, 0, 14, 8, false, &r3));
  const Ranges r9 = {9};
  EXPECT_FALSE(b.SeenOrRecord(9, 0, 14, 7, false, &r9));
  // A round trip keeps it all.
  ReplicaDedup c;
  ASSERT_TRUE(c.Import(b.Export()).ok());
  EXPECT_EQ(c.Export().size(), b.Export().size());
  const Ranges all = {1, 4, 6, 9};
  EXPECT_TRUE(c.SeenOrRecord(9, 0, 14, 7, false, &all));
  // Range lists that do not parse are refused, nothing merged.
  const std::string good = a.Export();
  std::string bad = good;
  bad.resize(bad.size() - 8);
  EXPECT_FALSE(c.Import(bad).ok());
  std::vector<uint64_t> words = {9, 0, 14, 0, 1, 7, 2, 5, 3};  // 5, 3
  EXPECT_FALSE(c.Import(std::string(reinterpret_cast<const char*>(words.data()),
                                    words.size() * 8))
                   .ok());
  words = {9, 0, 14, 0, 1, 7, 3, 5};  // 3 ranges, 1 there
  EXPECT_FALSE(c.Import(std::string(reinterpret_cast<const char*>(words.data()),
                                    words.size() * 8))
                   .ok());
}

TEST(ReplicaDedupTest, RangesOfKeysAreTheMapsRangeIndices) {
  const KeyRangeMap map = KeyRangeMap::Uniform(3, 4).value();
  std::vector<uint64_t> keys;
  for (uint64_t k = 0; k < 200; ++k) keys.push_back(k);
  const Ranges r = RangesOfKeys(map, SArray<uint64_t>::CopyOf(keys));
  EXPECT_EQ(r.size(), 12u);  // 200 keys fill all 12 ranges
  for (size_t i = 0; i < r.size(); ++i) EXPECT_EQ(r[i], i);
  for (uint64_t k : keys) {
    EXPECT_EQ(map.owners()[map.RangeOf(k)], map.OwnerOf(k));
  }
}

}  // namespace
}  // namespace petrel
