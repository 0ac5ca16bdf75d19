#include "kv/kv_slicer.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

KeyRangeMap Map(int servers) {
  return KeyRangeMap::Uniform(servers, 4).value();
}

// Keys 0..n-1 shuffled a little, with key 5 repeated at the end.
SArray<Key> SomeKeys(int n) {
  std::vector<Key> keys;
  for (int i = 0; i < n; ++i) keys.push_back(static_cast<Key>((i * 7) % n));
  keys.push_back(5);
  return SArray<Key>(std::move(keys));
}

// Two values per key: (10 * i, 10 * i + 1) for the key at position i.
SArray<float> TwoEach(size_t n) {
  SArray<float> v(2 * n);
  for (size_t i = 0; i < n; ++i) {
    v[2 * i] = 10.0f * i;
    v[2 * i + 1] = 10.0f * i + 1;
  }
  return v;
}

// The answer a server would give to `slice`: the values it was sent.
PulledPart Echo(const KVSlice& slice) {
  PulledPart part;
  part.vals = slice.vals;
  part.lens = slice.lens;
  return part;
}

TEST(KVSlicerTest, SlicesByOwnerAndRemembersPositions) {
  KeyRangeMap ranges = Map(3);
  SArray<Key> keys = SomeKeys(100);
  SArray<float> vals = TwoEach(keys.size());
  auto slices = SliceRequest(ranges, keys, vals.buffer(), sizeof(float), {});
  ASSERT_TRUE(slices.ok()) << slices.status();
  ASSERT_EQ(slices->size(), 3u);
  std::vector<int> covered(keys.size(), 0);
  for (const KVSlice& s : *slices) {
    ASSERT_EQ(s.positions.size(), s.keys.size());
    SArray<float> sv(s.vals);
    ASSERT_EQ(sv.size(), 2 * s.keys.size());
    for (size_t j = 0; j < s.keys.size(); ++j) {
      EXPECT_EQ(ranges.OwnerOf(s.keys[j]), s.server_rank);
      uint32_t pos = s.positions[j];
      EXPECT_EQ(keys[pos], s.keys[j]);
      EXPECT_EQ(sv[2 * j], vals[2 * pos]);
      EXPECT_EQ(sv[2 * j + 1], vals[2 * pos + 1]);
      ++covered[pos];
      if (j > 0) {
        EXPECT_LT(s.positions[j - 1], pos);  // caller order kept
      }
    }
  }
  for (int c : covered) EXPECT_EQ(c, 1);
}

TEST(KVSlicerTest, SingleServerReusesCallerBuffers) {
  SArray<Key> keys = SomeKeys(50);
  SArray<float> vals = TwoEach(keys.size());
  SArray<int> lens(keys.size(), 2);
  auto slices = SliceRequest(Map(1), keys, vals.buffer(), sizeof(float), lens);
  ASSERT_TRUE(slices.ok()) << slices.status();
  ASSERT_EQ(slices->size(), 1u);
  const KVSlice& s = (*slices)[0];
  EXPECT_EQ(s.keys.data(), keys.data());
  EXPECT_EQ(s.vals.data(), vals.buffer().data());
  EXPECT_EQ(s.lens.data(), lens.data());
  EXPECT_TRUE(s.positions.empty());
}

TEST(KVSlicerTest, KeysOfOneServerAmongSeveralAreNotCopied) {
  KeyRangeMap ranges = Map(3);
  std::vector<Key> owned;
  for (Key k = 0; owned.size() < 20; ++k) {
    if (ranges.OwnerOf(k) == 2) owned.push_back(k);
  }
  SArray<Key> keys(std::move(owned));
  SArray<double> vals(keys.size(), 1.0);
  auto slices = SliceRequest(ranges, keys, vals.buffer(), sizeof(double), {});
  ASSERT_TRUE(slices.ok()) << slices.status();
  ASSERT_EQ(slices->size(), 1u);
  EXPECT_EQ((*slices)[0].server_rank, 2);
  EXPECT_EQ((*slices)[0].keys.data(), keys.data());
  EXPECT_EQ((*slices)[0].vals.data(), vals.buffer().data());
}

TEST(KVSlicerTest, SlicesVariableLengthValues) {
  KeyRangeMap ranges = Map(3);
  SArray<Key> keys = SomeKeys(30);
  SArray<int> lens(keys.size());
  std::vector<int32_t> flat;
  std::vector<std::vector<int32_t>> want(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    lens[i] = static_cast<int>(i % 4);  // 0..3 values
    for (int j = 0; j < lens[i]; ++j) {
      want[i].push_back(static_cast<int32_t>(100 * i + j));
      flat.push_back(want[i].back());
    }
  }
  SArray<int32_t> vals(std::move(flat));
  auto slices = SliceRequest(ranges, keys, vals.buffer(), 4, lens);
  ASSERT_TRUE(slices.ok()) << slices.status();
  for (const KVSlice& s : *slices) {
    ASSERT_EQ(s.lens.size(), s.keys.size());
    SArray<int32_t> sv(s.vals);
    size_t off = 0;
    for (size_t j = 0; j < s.keys.size(); ++j) {
      uint32_t pos = s.positions[j];
      ASSERT_EQ(s.lens[j], lens[pos]);
      std::vector<int32_t> got(sv.begin() + off, sv.begin() + off + s.lens[j]);
      EXPECT_EQ(got, want[pos]);
      off += s.lens[j];
    }
    EXPECT_EQ(off, sv.size());
  }
  // Merged back, the values are in the caller's order with the same lens.
  std::vector<PulledPart> parts;
  for (const KVSlice& s : *slices) parts.push_back(Echo(s));
  Buffer out;
  SArray<int> out_lens;
  ASSERT_TRUE(
      MergePulled(*slices, parts, keys.size(), 4, &out, &out_lens).ok());
  EXPECT_EQ(out_lens.ToVector(), lens.ToVector());
  EXPECT_EQ(SArray<int32_t>(out).ToVector(), vals.ToVector());
}

TEST(KVSlicerTest, EmptyRequestHasNoSlices) {
  auto slices = SliceRequest(Map(3), SArray<Key>(), Buffer(), 4, {});
  ASSERT_TRUE(slices.ok());
  EXPECT_TRUE(slices->empty());
}

TEST(KVSlicerTest, RejectsBadInputs) {
  KeyRangeMap ranges = Map(2);
  SArray<Key> keys = {1, 2, 3};
  auto code = [&](const Buffer& vals, size_t elem, const SArray<int>& lens) {
    return SliceRequest(ranges, keys, vals, elem, lens).status().code();
  };
  const auto kBad = absl::StatusCode::kInvalidArgument;
  SArray<float> seven(7, 1.0f);
  EXPECT_EQ(code(seven.buffer(), 4, {}), kBad);          // 7 over 3 keys
  EXPECT_EQ(code(seven.buffer(), 4, {1, 2}), kBad);      // 2 lens, 3 keys
  EXPECT_EQ(code(seven.buffer(), 4, {1, 2, 3}), kBad);   // sum 6, not 7
  EXPECT_EQ(code(seven.buffer(), 4, {8, -1, 0}), kBad);  // negative
  EXPECT_EQ(code(Buffer::Allocate(5), 4, {}), kBad);     // partial element
  EXPECT_EQ(SliceRequest(ranges, SArray<Key>(), seven.buffer(), 4, {})
                .status()
                .code(),
            kBad);  // values without keys
  EXPECT_TRUE(SliceRequest(ranges, keys, seven.buffer(), 4, {1, 2, 4}).ok());
  EXPECT_TRUE(SliceRequest(ranges, keys, Buffer(), 4, {}).ok());  // a pull
}

// The parts of one server's push, concatenated, are that slice again.
void ExpectPartsCover(const std::vector<KVSlice>& parts, const KVSlice& whole) {
  std::vector<Key> keys;
  std::string vals;
  std::vector<int> lens;
  for (const KVSlice& p : parts) {
    EXPECT_EQ(p.server_rank, whole.server_rank);
    EXPECT_TRUE(p.positions.empty());
    keys.insert(keys.end(), p.keys.begin(), p.keys.end());
    vals.append(p.vals.data(), p.vals.size());
    lens.insert(lens.end(), p.lens.begin(), p.lens.end());
  }
  EXPECT_EQ(keys, whole.keys.ToVector());
  EXPECT_EQ(vals, std::string(whole.vals.data(), whole.vals.size()));
  EXPECT_EQ(lens, whole.lens.ToVector());
}

TEST(KVSlicerTest, SplitsLargePushesAtKeyBoundariesWithoutCopying) {
  SArray<Key> keys = SomeKeys(10);  // 11 keys, 8 bytes of values each
  SArray<float> vals = TwoEach(keys.size());
  auto slices = SliceRequest(Map(1), keys, vals.buffer(), 4, {});
  ASSERT_TRUE(slices.ok()) << slices.status();
  ASSERT_EQ(slices->size(), 1u);
  const KVSlice whole = (*slices)[0];
  // 20 bytes fit two keys: 5 parts of 2 keys and one of 1.
  std::vector<KVSlice> parts = SplitPushSlices(*slices, 4, 20);
  ASSERT_EQ(parts.size(), 6u);
  for (size_t i = 0; i < parts.size(); ++i) {
    EXPECT_EQ(parts[i].keys.size(), i < 5 ? 2u : 1u) << i;
    EXPECT_LE(parts[i].vals.size(), 20u);
    // Views into the caller's arrays.
    EXPECT_EQ(parts[i].vals.data(), vals.buffer().data() + 16 * i);
    EXPECT_EQ(parts[i].keys.data(), keys.data() + 2 * i);
  }
  ExpectPartsCover(parts, whole);
  // Small enough already, or splitting off: unchanged.
  EXPECT_EQ(SplitPushSlices(*slices, 4, 88).size(), 1u);
  EXPECT_EQ(SplitPushSlices(*slices, 4, 0).size(), 1u);
}

TEST(KVSlicerTest, SplitKeepsEachServerAndVariableLengths) {
  SArray<Key> keys = SomeKeys(30);
  SArray<int> lens(keys.size());
  std::vector<int32_t> flat;
  for (size_t i = 0; i < keys.size(); ++i) {
    lens[i] = static_cast<int>(i % 5);  // 0..4 values
    for (int j = 0; j < lens[i]; ++j) flat.push_back(static_cast<int>(i * j));
  }
  SArray<int32_t> vals(std::move(flat));
  auto slices = SliceRequest(Map(3), keys, vals.buffer(), 4, lens);
  ASSERT_TRUE(slices.ok()) << slices.status();
  std::vector<KVSlice> parts = SplitPushSlices(*slices, 4, 12);
  EXPECT_GT(parts.size(), slices->size());
  for (const KVSlice& slice : *slices) {
    std::vector<KVSlice> mine;
    for (const KVSlice& p : parts) {
      if (p.server_rank != slice.server_rank) continue;
      // At most 12 bytes, unless one key of 4 values (16 bytes) alone.
      EXPECT_TRUE(p.vals.size() <= 12 || p.keys.size() == 1);
      mine.push_back(p);
    }
    ExpectPartsCover(mine, slice);
  }
}

TEST(KVSlicerTest, SplitsAKeyLargerThanAPartIntoSlicesWhenAsked) {
  SArray<Key> keys = {4, 5, 6};
  SArray<int> lens = {2, 7, 1};  // key 5's 28 bytes exceed the 12-byte parts
  SArray<float> vals(10);
  for (size_t i = 0; i < vals.size(); ++i) vals[i] = static_cast<float>(i);
  auto slices = SliceRequest(Map(1), keys, vals.buffer(), 4, lens);
  ASSERT_TRUE(slices.ok()) << slices.status();
  // Without split_keys key 5 goes whole.
  std::vector<KVSlice> whole = SplitPushSlices(*slices, 4, 12);
  ASSERT_EQ(whole.size(), 3u);
  EXPECT_EQ(whole[1].vals.size(), 28u);
  EXPECT_EQ(whole[1].value_total, 0);
  // With it: key 4 | key 5 values 0-2, 3-5, 6 | key 6.
  std::vector<KVSlice> parts = SplitPushSlices(*slices, 4, 12, true);
  ASSERT_EQ(parts.size(), 5u);
  const std::vector<int64_t> offsets = {0, 0, 3, 6, 0};
  const std::vector<int64_t> totals = {0, 7, 7, 7, 0};
  const std::vector<int> counts = {2, 3, 3, 1, 1};
  for (size_t i = 0; i < parts.size(); ++i) {
    EXPECT_EQ(parts[i].value_offset, offsets[i]) << i;
    EXPECT_EQ(parts[i].value_total, totals[i]) << i;
    ASSERT_EQ(parts[i].lens.size(), 1u) << i;
    EXPECT_EQ(parts[i].lens[0], counts[i]) << i;
    EXPECT_EQ(parts[i].vals.size(), counts[i] * 4u) << i;
  }
  EXPECT_EQ(parts[3].keys.ToVector(), std::vector<Key>{5});
  EXPECT_EQ(SArray<float>(parts[3].vals).ToVector(), std::vector<float>{8});
  std::string concatenated;
  for (const KVSlice& p : parts)
    concatenated.append(p.vals.data(), p.vals.size());
  EXPECT_EQ(concatenated, std::string(vals.buffer().data(), 40));
}

// A server's answer to pull slice `part`: the values (two per key) that
// `vals` holds at the caller's positions of its keys.
PulledPart AnswerOf(const KVSlice& part, const SArray<float>& vals) {
  SArray<float> v(2 * part.keys.size());
  for (size_t j = 0; j < part.keys.size(); ++j) {
    const size_t pos =
        part.positions.empty() ? part.first_position + j : part.positions[j];
    v[2 * j] = vals[2 * pos];
    v[2 * j + 1] = vals[2 * pos + 1];
  }
  PulledPart answer;
  answer.vals = v.buffer();
  return answer;
}

TEST(KVSlicerTest, SplitPullPartsMergeBackInCallerOrder) {
  SArray<Key> keys = SomeKeys(100);
  SArray<float> vals = TwoEach(keys.size());
  for (int servers : {1, 3}) {
    SCOPED_TRACE(servers);
    auto slices = SliceRequest(Map(servers), keys, Buffer(), sizeof(float), {});
    ASSERT_TRUE(slices.ok());
    EXPECT_EQ(SplitPullSlices(*slices, 0).size(), slices->size());
    EXPECT_EQ(SplitPullSlices(*slices, keys.size()).size(), slices->size());
    std::vector<KVSlice> parts = SplitPullSlices(*slices, 16);
    EXPECT_GE(parts.size(), (keys.size() + 15) / 16);
    size_t total = 0;
    std::vector<int> per_server(servers, 0);
    for (const KVSlice& p : parts) {
      EXPECT_LE(p.keys.size(), 16u);
      EXPECT_GE(p.keys.size(), 8u);  // equal parts, not a small remainder
      total += p.keys.size();
      ++per_server[p.server_rank];
    }
    EXPECT_EQ(total, keys.size());
    for (int n : per_server) EXPECT_GE(n, 2);
    std::vector<PulledPart> answers;
    for (const KVSlice& p : parts) answers.push_back(AnswerOf(p, vals));
    Buffer out;
    ASSERT_TRUE(
        MergePulled(parts, answers, keys.size(), sizeof(float), &out, nullptr)
            .ok());
    EXPECT_EQ(SArray<float>(out).ToVector(), vals.ToVector());
    // With lens: the per-key merge.
    for (PulledPart& a : answers) {
      a.lens = SArray<int>(a.vals.size() / (2 * sizeof(float)), 2);
    }
    SArray<int> lens;
    out = Buffer();
    ASSERT_TRUE(
        MergePulled(parts, answers, keys.size(), sizeof(float), &out, &lens)
            .ok());
    EXPECT_EQ(SArray<float>(out).ToVector(), vals.ToVector());
    EXPECT_EQ(lens.ToVector(), std::vector<int>(keys.size(), 2));
  }
}

TEST(KVSlicerTest, MergeRestoresCallerOrder) {
  SArray<Key> keys = SomeKeys(100);
  SArray<float> vals = TwoEach(keys.size());
  auto slices = SliceRequest(Map(3), keys, vals.buffer(), sizeof(float), {});
  ASSERT_TRUE(slices.ok());
  std::vector<PulledPart> parts;
  for (const KVSlice& s : *slices) parts.push_back(Echo(s));
  Buffer out;
  ASSERT_TRUE(
      MergePulled(*slices, parts, keys.size(), sizeof(float), &out, nullptr)
          .ok());
  EXPECT_EQ(SArray<float>(out).ToVector(), vals.ToVector());
}

TEST(KVSlicerTest, MergeWritesInPlaceWhenPresized) {
  SArray<Key> keys = SomeKeys(100);
  SArray<float> vals = TwoEach(keys.size());
  for (int servers : {1, 3}) {
    auto slices =
        SliceRequest(Map(servers), keys, vals.buffer(), sizeof(float), {});
    ASSERT_TRUE(slices.ok());
    std::vector<PulledPart> parts;
    for (const KVSlice& s : *slices) parts.push_back(Echo(s));
    SArray<float> dst(vals.size(), -1.0f);
    Buffer out = dst.buffer();
    ASSERT_TRUE(
        MergePulled(*slices, parts, keys.size(), sizeof(float), &out, nullptr)
            .ok());
    EXPECT_EQ(out.data(), dst.buffer().data()) << servers;
    EXPECT_EQ(dst.ToVector(), vals.ToVector()) << servers;
  }
}

TEST(KVSlicerTest, MergeOfSingleAnswerSharesItsBuffer) {
  SArray<Key> keys = SomeKeys(10);
  SArray<float> vals = TwoEach(keys.size());
  auto slices = SliceRequest(Map(1), keys, Buffer(), sizeof(float), {});
  ASSERT_TRUE(slices.ok());
  PulledPart part;
  part.vals = vals.buffer();
  Buffer out;
  ASSERT_TRUE(
      MergePulled(*slices, {part}, keys.size(), sizeof(float), &out, nullptr)
          .ok());
  EXPECT_EQ(out.data(), vals.buffer().data());
  EXPECT_EQ(out.size(), vals.buffer().size());
}

TEST(KVSlicerTest, MergeRejectsMismatchedAnswers) {
  SArray<Key> keys = SomeKeys(40);
  auto slices = SliceRequest(Map(2), keys, Buffer(), sizeof(float), {});
  ASSERT_TRUE(slices.ok());
  ASSERT_EQ(slices->size(), 2u);
  auto merge = [&](const std::vector<PulledPart>& parts, SArray<int>* lens) {
    Buffer out;
    return MergePulled(*slices, parts, keys.size(), sizeof(float), &out, lens)
        .code();
  };
  auto answer = [](const KVSlice& s, size_t per_key) {
    PulledPart p;
    p.vals = SArray<float>(per_key * s.keys.size(), 1.0f).buffer();
    return p;
  };
  const auto kBad = absl::StatusCode::kInvalidArgument;
  std::vector<PulledPart> good = {answer((*slices)[0], 2),
                                  answer((*slices)[1], 2)};
  EXPECT_EQ(merge(good, nullptr), absl::StatusCode::kOk);
  // Values that do not divide over the keys asked (the answer carries no
  // keys: its counts are checked against the slice).
  std::vector<PulledPart> parts = good;
  parts[0].vals = SArray<float>(2 * (*slices)[0].keys.size() + 1).buffer();
  EXPECT_EQ(merge(parts, nullptr), kBad);
  // Lens for one key too few, or summing to more than the values sent.
  parts = good;
  parts[1].lens = SArray<int>((*slices)[1].keys.size() - 1, 2);
  EXPECT_EQ(merge(parts, nullptr), kBad);
  parts[1].lens = SArray<int>((*slices)[1].keys.size(), 3);
  EXPECT_EQ(merge(parts, nullptr), kBad);
  parts[1].lens = SArray<int>((*slices)[1].keys.size(), 2);
  parts[1].lens[0] = -2;
  parts[1].lens[1] = 6;
  EXPECT_EQ(merge(parts, nullptr), kBad);
  // Right lens are fine.
  parts[1].lens = SArray<int>((*slices)[1].keys.size(), 2);
  EXPECT_EQ(merge(parts, nullptr), absl::StatusCode::kOk);
  // Different widths per server need lens.
  parts = {answer((*slices)[0], 2), answer((*slices)[1], 3)};
  EXPECT_EQ(merge(parts, nullptr), kBad);
  SArray<int> lens;
  EXPECT_EQ(merge(parts, &lens), absl::StatusCode::kOk);
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(lens[i],
              Map(2).OwnerOf(keys[i]) == (*slices)[0].server_rank ? 2 : 3);
  }
}

// CheckPulledPart: an answer's counts against the keys of its slice, with
// a message naming the server.
TEST(KVSlicerTest, CheckPulledPartComparesCountsWithTheKeysAsked) {
  KVSlice slice;
  slice.server_rank = 2;
  slice.keys = SArray<Key>{1, 2, 3};
  PulledPart part;
  EXPECT_TRUE(CheckPulledPart(slice, part, 4).ok());  // never pushed
  part.vals = SArray<float>(6).buffer();
  EXPECT_TRUE(CheckPulledPart(slice, part, 4).ok());
  part.vals = SArray<float>(7).buffer();
  absl::Status s = CheckPulledPart(slice, part, 4);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("server 2 sent 7 values for 3 keys"));
  part.lens = SArray<int>{3, 4};
  s = CheckPulledPart(slice, part, 4);
  EXPECT_THAT(s.message(), HasSubstr("server 2 sent 2 lens for 3 keys"));
  part.lens = SArray<int>{3, 4, 1};
  s = CheckPulledPart(slice, part, 4);
  EXPECT_THAT(s.message(), HasSubstr("lens summing to 8 with 7 values"));
  part.lens = SArray<int>{3, 4, 0};
  EXPECT_TRUE(CheckPulledPart(slice, part, 4).ok());
  // A slice without keys takes no values.
  KVSlice none;
  PulledPart empty;
  EXPECT_TRUE(CheckPulledPart(none, empty, 4).ok());
  empty.vals = SArray<float>(1).buffer();
  EXPECT_FALSE(CheckPulledPart(none, empty, 4).ok());
}

// Every row width, the ones copied with a fixed size (4..512 bytes) and
// others, goes out to the right servers and comes back in order; with lens
// asked for, a uniform answer gives every key the width.
TEST(KVSlicerTest, SliceAndMergeRoundTripEveryRowWidth) {
  const KeyRangeMap ranges = KeyRangeMap::Uniform(8, 32).value();
  SArray<Key> keys = SomeKeys(1000);
  for (size_t width : {1, 2, 3, 4, 8, 16, 32, 64, 128, 200}) {
    SArray<float> vals(keys.size() * width);
    for (size_t i = 0; i < vals.size(); ++i) vals[i] = static_cast<float>(i);
    auto slices = SliceRequest(ranges, keys, vals.buffer(), sizeof(float), {});
    ASSERT_TRUE(slices.ok()) << slices.status();
    EXPECT_EQ(slices->size(), 8u);
    std::vector<PulledPart> parts;
    for (const KVSlice& s : *slices) {
      ASSERT_EQ(s.vals.size(), s.keys.size() * width * sizeof(float));
      SArray<float> sv(s.vals);
      for (size_t j = 0; j < s.keys.size(); ++j) {
        ASSERT_EQ(ranges.OwnerOf(s.keys[j]), s.server_rank);
        ASSERT_EQ(keys[s.positions[j]], s.keys[j]);
        ASSERT_EQ(sv[j * width], vals[s.positions[j] * width]) << width;
      }
      parts.push_back(Echo(s));
    }
    Buffer out;
    SArray<int> lens;
    ASSERT_TRUE(
        MergePulled(*slices, parts, keys.size(), sizeof(float), &out, &lens)
            .ok());
    EXPECT_EQ(SArray<float>(out).ToVector(), vals.ToVector()) << width;
    EXPECT_EQ(lens.ToVector(),
              std::vector<int>(keys.size(), static_cast<int>(width)));
  }
}

// With one server in the map the request goes out as it is, whatever the
// keys (no owner is computed).
TEST(KVSlicerTest, OneServerMapSendsTheRequestAsItIs) {
  SArray<Key> keys = SomeKeys(30);
  SArray<float> vals = TwoEach(keys.size());
  auto slices = SliceRequest(Map(1), keys, vals.buffer(), sizeof(float), {});
  ASSERT_TRUE(slices.ok()) << slices.status();
  ASSERT_EQ(slices->size(), 1u);
  EXPECT_EQ((*slices)[0].server_rank, 0);
  EXPECT_EQ((*slices)[0].keys.data(), keys.data());
  EXPECT_EQ((*slices)[0].vals.data(), vals.buffer().data());
  // Bad requests are still rejected first.
  EXPECT_FALSE(
      SliceRequest(Map(1), keys, SArray<float>(7).buffer(), sizeof(float), {})
          .ok());
}

// Servers that hold none of the keys answer without values: the merge
// gives an empty array (and zero lengths), whatever the number of servers.
TEST(KVSlicerTest, MergeOfAnswersWithoutValuesIsEmpty) {
  SArray<Key> keys = SomeKeys(40);
  for (int servers : {1, 3}) {
    auto slices = SliceRequest(Map(servers), keys, Buffer(), sizeof(float), {});
    ASSERT_TRUE(slices.ok()) << slices.status();
    std::vector<PulledPart> parts(slices->size());
    Buffer out;
    SArray<int> lens;
    ASSERT_TRUE(
        MergePulled(*slices, parts, keys.size(), sizeof(float), &out, &lens)
            .ok());
    EXPECT_TRUE(out.empty()) << servers;
    EXPECT_EQ(lens.ToVector(), std::vector<int>(keys.size(), 0)) << servers;
  }
}

// A failover cuts a pull slice whose server died by the new map: the pieces
// answer what the slice did (KVWorker::SplitMovedPull and OnSplit).
TEST(KVSlicerTest, FailoverCutOfAPullSliceMergesBackInCallerOrder) {
  SArray<Key> keys = SomeKeys(100);
  SArray<float> vals = TwoEach(keys.size());
  auto slices = SliceRequest(Map(3), keys, Buffer(), sizeof(float), {});
  ASSERT_TRUE(slices.ok());
  ASSERT_EQ(slices->size(), 3u);
  auto alone = SliceRequest(Map(1), keys, Buffer(), sizeof(float), {});
  ASSERT_TRUE(alone.ok());
  // Server 1's slice (with positions), its parts as SplitPullSlices makes
  // them, and a one-server request's parts (first_position): cut by a map
  // of 5 servers, so their keys go to several servers.
  for (const auto& [request, dead] :
       std::vector<std::pair<std::vector<KVSlice>, int>>{
           {*slices, 1},
           {SplitPullSlices(*slices, 7), 1},
           {SplitPullSlices(*alone, 30), 0}}) {
    std::vector<KVSlice> after;
    size_t cut = 0;
    for (const KVSlice& s : request) {
      if (s.server_rank != dead) {
        after.push_back(s);
        continue;
      }
      std::vector<KVSlice> pieces = CutPullSlice(s, Map(5));
      size_t n = 0;
      for (const KVSlice& p : pieces) {
        n += p.keys.size();
        // What OnSplit rebuilds from a piece's keys.
        absl::StatusOr<KVSlice> again = SubSliceOf(s, p.keys, p.server_rank);
        ASSERT_TRUE(again.ok()) << again.status();
        EXPECT_EQ(again->positions.ToVector(), p.positions.ToVector());
        after.push_back(p);
      }
      EXPECT_EQ(n, s.keys.size());
      cut += pieces.size();
    }
    EXPECT_GT(cut, 1u);
    std::vector<PulledPart> answers;
    for (const KVSlice& p : after) answers.push_back(AnswerOf(p, vals));
    Buffer out;
    ASSERT_TRUE(
        MergePulled(after, answers, keys.size(), sizeof(float), &out, nullptr)
            .ok());
    EXPECT_EQ(SArray<float>(out).ToVector(), vals.ToVector());
  }
  // Keys that are not the slice's, in its order, are refused.
  const KVSlice& s = (*slices)[1];
  ASSERT_GE(s.keys.size(), 2u);
  SArray<Key> swapped(std::vector<Key>{s.keys[1], s.keys[0]});
  EXPECT_FALSE(SubSliceOf(s, swapped, 1).ok());
}

}  // namespace
}  // namespace petrel
