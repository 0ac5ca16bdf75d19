#include "worker/train/batch_prefetcher.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "worker/testing/temp_file.h"

namespace petrel {
namespace {

// Line i of the file has the one feature i.
std::unique_ptr<Reader> TenLines() {
  std::string text;
  for (int i = 0; i < 10; ++i) absl::StrAppend(&text, "1 ", i, ":1\n");
  ReaderOptions o;
  o.files = {WriteTempFile("ten.svm", text)};
  absl::StatusOr<std::unique_ptr<Reader>> r = OpenReader(o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : nullptr;
}

// Every batch as (epoch, first key, size) until the end.
std::vector<std::vector<int>> Drain(BatchPrefetcher* p) {
  std::vector<std::vector<int>> out;
  while (true) {
    absl::StatusOr<std::unique_ptr<PreparedBatch>> b = p->Next();
    EXPECT_TRUE(b.ok()) << b.status();
    if (!b.ok() || *b == nullptr) return out;
    out.push_back({(*b)->epoch, static_cast<int>((*b)->batch.keys[0]),
                   static_cast<int>((*b)->batch.size())});
  }
}

TEST(BatchPrefetcherTest, ReadsEveryEpochInBatches) {
  BatchPrefetcher p(TenLines(), 4, 2);
  p.Start();
  std::vector<std::vector<int>> want = {{0, 0, 4}, {0, 4, 4}, {0, 8, 2},
                                        {1, 0, 4}, {1, 4, 4}, {1, 8, 2}};
  EXPECT_EQ(Drain(&p), want);
}

TEST(BatchPrefetcherTest, ResumesAtAPositionWithTheSameBatches) {
  BatchPrefetcher p(TenLines(), 4, 2);
  p.set_start(1, 4);  // epoch 1, its first batch trained
  p.Start();
  std::vector<std::vector<int>> want = {{1, 4, 4}, {1, 8, 2}};
  EXPECT_EQ(Drain(&p), want);
}

TEST(BatchPrefetcherTest, ResumingAtTheEndOfAnEpochStartsTheNext) {
  BatchPrefetcher p(TenLines(), 4, 2);
  p.set_start(0, 10);
  p.Start();
  std::vector<std::vector<int>> want = {{1, 0, 4}, {1, 4, 4}, {1, 8, 2}};
  EXPECT_EQ(Drain(&p), want);
}

TEST(BatchPrefetcherTest, EachBatchSaysWhereTheNextExampleStarts) {
  BatchPrefetcher p(TenLines(), 4, 2);
  p.Start();
  std::vector<int64_t> offsets;
  while (true) {
    absl::StatusOr<std::unique_ptr<PreparedBatch>> b = p.Next();
    ASSERT_TRUE(b.ok()) << b.status();
    if (*b == nullptr) break;
    offsets.push_back((*b)->next_offset);
  }
  // Six bytes a line ("1 i:1\n").
  EXPECT_EQ(offsets, (std::vector<int64_t>{24, 48, 60, 24, 48, 60}));
}

}  // namespace
}  // namespace petrel
